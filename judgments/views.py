"""Grading pages (keyboard-first, plain POSTs that grade.js speeds up) and the lead's feedback
pages; the team's scale, grader-tag and pool pages are judgments.views_scales',
judgments.views_grader_tags' and judgments.views_pool'.

Gold probes on the page (judgments.gold): the queue's claim asks gold.probe_next first, the
rule the grading API uses, so a share of claims (the evaluation's gold rate) shows a probe.
A probe is shown by the same template with the same fields as a slot, and nothing on the
page says which it is. Its address: the result the grader is at is always
`/grade/results/<token>/` (the page's URL, the form's action, `…/skip/`), whether it is a
slot or a probe; the token is the kind and id encrypted and authenticated with a Fernet key
derived from SECRET_KEY (evaluations.crypto.fernet), fresh on every render, so it can be
neither read nor forged and two tokens of one result do not match. The token says nothing
of its owner: the views check that the slot or probe is the grader's (404 otherwise).
Backspace's link is such an address too and may lead to a graded probe, re-graded as a slot
is. `/grade/slots/<id>/` still answers for slots (old links, clients), the page no longer
links to it.
Progress counts a graded probe in "you graded", so grading one moves the count as a slot
does, never in the evaluation's graded / total results.
"""

import json
from urllib.parse import urlencode

from cryptography.fernet import InvalidToken
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from evaluations.crypto import fernet
from evaluations.endpoints.shapes import elasticsearch_shape
from evaluations.models import Evaluation
from evaluations.selectors import evaluation_get_for_user
from judgments import gold, gold_items, grading, queue, queue_selectors, selectors
from judgments import scales as scale_lookup
from judgments.forms import (
    GradeForm,
    LeadGradeForm,
    parse_grade,
)
from judgments.models import FeedbackSlot, GoldProbe
from searchtweak import access
from searchtweak.models import Role, Team

# --- the grading page ---


class _Scope:
    """Where the grader's work comes from: the current team's queue or one evaluation's."""

    def __init__(self, request: HttpRequest):
        evaluation_id = request.GET.get("evaluation") or request.POST.get("evaluation")
        self.evaluation: Evaluation | None = None
        if evaluation_id and str(evaluation_id).isdigit():
            self.evaluation = evaluation_get_for_user(
                user=request.user, evaluation_id=int(evaluation_id))
            self.team: Team | None = self.evaluation.team
        else:
            membership = access.current_membership(user=request.user)
            if membership is not None:
                # A viewer never grades: their queue is refused, not shown empty.
                access.check_membership_row(membership.role, Role.GRADER)
            self.team = membership.team if membership else None
        self.evaluation_ids = (
            queue_selectors.queue_evaluation_ids(
                user=request.user, team=self.team, evaluation=self.evaluation)
            if self.team else []
        )
        # The team's progress counts the evaluations that take grades (the queue's): a
        # finished one, however recently graded, has no work left to count towards. When the
        # last of them finishes, the empty queue's thank-you says what was graded.
        if self.evaluation is not None:
            self.progress_ids = [self.evaluation.pk]
        else:
            self.progress_ids = list(self.evaluation_ids)

    @property
    def query(self) -> str:
        return f"?{urlencode({'evaluation': self.evaluation.pk})}" if self.evaluation else ""

    @property
    def queue_url(self) -> str:
        if self.evaluation:
            return reverse("judgments:evaluation_grade", args=[self.evaluation.pk])
        return reverse("judgments:grade")


ITEM_SLOT, ITEM_PROBE = "s", "p"


def item_token(kind: str, pk: int) -> str:
    """The opaque address of a slot or probe on the page (module docstring)."""
    return fernet("grading-page").encrypt(json.dumps([kind, pk]).encode()).decode()


def _item_from_token(token: str) -> tuple[str, int]:
    try:
        kind, pk = json.loads(fernet("grading-page").decrypt(token.encode()))
    except (InvalidToken, ValueError, TypeError):
        raise Http404("No such result.") from None
    if kind not in (ITEM_SLOT, ITEM_PROBE) or not isinstance(pk, int):
        raise Http404("No such result.")
    return kind, pk


class _ShownProbe:
    """A probe with the attributes the grading template reads of a slot: the gold result's
    keyword and document, the grader's evaluation, their grade."""

    def __init__(self, probe: GoldProbe):
        self.evaluation = probe.evaluation
        self.snapshot = probe.gold.snapshot
        self.keyword = self.snapshot.keyword
        self.grade, self.unsure, self.note = probe.grade, probe.unsure, probe.note
        self.lease_expires_at = probe.lease_expires_at


def _previous_url(request: HttpRequest, scope: _Scope, evaluation: Evaluation, *,
                  slot: FeedbackSlot | None, probe: GoldProbe | None) -> str:
    """Backspace: the result graded just before the one shown, slot or probe, by the same
    opaque address either way ("" when there is none)."""
    evaluation_ids = scope.evaluation_ids or [evaluation.pk]
    shown = probe or slot
    # A probe has no place among the slots: an unsaved slot stands for its time.
    before = slot if probe is None else FeedbackSlot(pk=0, assigned_at=probe.assigned_at)
    previous_slot = queue_selectors.previous_graded_slot(
        user=request.user, evaluation_ids=evaluation_ids, before=before)
    previous_probe = gold.probe_previous(
        user=request.user, evaluation_ids=evaluation_ids,
        before_at=shown.assigned_at if shown is not None else None,
        before_probe_id=probe.pk if probe is not None else None)
    if previous_probe is not None and (
            previous_slot is None or previous_probe.assigned_at > previous_slot.assigned_at):
        token = item_token(ITEM_PROBE, previous_probe.pk)
    elif previous_slot is not None:
        token = item_token(ITEM_SLOT, previous_slot.pk)
    else:
        return ""
    return reverse("judgments:item", args=[token]) + scope.query


def _render_grading(
    request: HttpRequest, scope: _Scope, slot: FeedbackSlot | None, *,
    form_error: str = "", status: int = 200, probe: GoldProbe | None = None,
) -> HttpResponse:
    context = {"scope": scope, "form_error": form_error,
               "progress": queue_selectors.grading_progress(
                   user=request.user, evaluation_ids=scope.progress_ids)}
    shown = _ShownProbe(probe) if probe is not None else slot
    context["slot"] = shown
    if shown is not None:
        evaluation = shown.evaluation
        context_scale = scale_lookup.scale_for_team(
            team_id=evaluation.team_id, code=evaluation.scale)
        token = (item_token(ITEM_PROBE, probe.pk) if probe is not None
                 else item_token(ITEM_SLOT, slot.pk))
        item_url = reverse("judgments:item", args=[token]) + scope.query
        context.update({
            "evaluation": evaluation,
            "scale": context_scale,
            "guidelines": queue_selectors.guidelines_html(text=evaluation.guidelines),
            "previous_url": _previous_url(request, scope, evaluation, slot=slot, probe=probe),
            "regrade": shown.grade is not None,
            "current_label": context_scale.label_of(shown.grade) if context_scale else "",
            "fields": [(label, value) for label, value in (shown.snapshot.fields or {}).items()],
            "image": queue_selectors.document_image_src(shown.snapshot.image),
            "lease_minutes": queue_selectors.lease_minutes_left(shown),
            "skip_url": reverse("judgments:item_skip", args=[token]) + scope.query,
            "slot_url": item_url,
        })
    else:
        context.update({
            "slot_url": scope.queue_url,
            "empty": queue_selectors.grader_empty_queue(
                user=request.user, team=scope.team, evaluation=scope.evaluation),
        })
    template = "judgments/_grade_panel.html" if request.htmx else "judgments/grade.html"
    return render(request, template, context, status=status)


@require_GET
@login_required
def grade(request: HttpRequest) -> HttpResponse:
    """The grader's next result across the current team's active evaluations."""
    return _next(request)


@require_GET
@login_required
def evaluation_grade(request: HttpRequest, evaluation_id: int) -> HttpResponse:
    """The grader's next result in one evaluation."""
    request.GET = request.GET.copy()
    request.GET["evaluation"] = str(evaluation_id)
    return _next(request)


def _next(request: HttpRequest) -> HttpResponse:
    scope = _Scope(request)
    slot = None
    if scope.team is not None:
        # The API's rule (judgments.gold.probe_next) first: a share of claims is a probe.
        probe = gold.probe_next(
            user=request.user, evaluation_ids=scope.evaluation_ids,
            gold_ids=gold.probing_evaluation_ids(evaluation_ids=scope.evaluation_ids))
        if probe is not None:
            return _render_grading(request, scope, None, probe=gold.probe_get_for_user(
                user=request.user, probe_id=probe.pk))
        # Asking again returns the result already held, so this GET claims at most one.
        slot = queue.slot_claim_next(
            user=request.user, team=scope.team, evaluation=scope.evaluation)
    if slot is not None:
        slot = selectors.slot_get_for_user(user=request.user, slot_id=slot.pk)
    return _render_grading(request, scope, slot)


def _grade_form_problem(form: GradeForm) -> str:
    # Name the field at fault: a note past its limit is not a missing grade.
    return ("Choose one of the grades." if "grade" in form.errors else " ".join(
        f"{name.capitalize()}: {message}" for name, errors in form.errors.items()
        for message in errors))


def _own_slot(request: HttpRequest, slot_id: int) -> FeedbackSlot:
    found = selectors.slot_get_for_user(user=request.user, slot_id=slot_id)
    if found.user_id != request.user.pk:
        raise Http404("No such slot.")
    return found


def _grading_page(request: HttpRequest, *, slot: FeedbackSlot | None = None,
                  probe: GoldProbe | None = None) -> HttpResponse:
    """GET shows the grader's slot or probe; POST grades it and moves on to the next. A
    probe's grade goes on the probe (grading.gold_probe_grade), never on a slot, so no
    metric reads it; otherwise the two are shown and graded alike."""
    scope = _Scope(request)

    def shown(**problem) -> HttpResponse:
        return _render_grading(request, scope, slot, probe=probe, **problem)

    if request.method == "GET":
        return shown()
    form = GradeForm(request.POST)
    if not form.is_valid():
        return shown(status=400, form_error=_grade_form_problem(form))
    answer = {"grade": parse_grade(form.cleaned_data["grade"]),
              "unsure": form.cleaned_data["unsure"], "note": form.cleaned_data["note"]}
    try:
        if probe is not None:
            grading.gold_probe_grade(user=request.user, snapshot_id=probe.gold.snapshot_id,
                                     evaluation_id=probe.evaluation_id, **answer)
        else:
            grading.feedback_submit(user=request.user, slot_id=slot.pk, **answer)
    except ValidationError as error:
        if "grade" in error.message_dict:
            return shown(status=400, form_error=" ".join(error.message_dict["grade"]))
        messages.error(request, " ".join(error.messages))
    return redirect(scope.queue_url)


@require_http_methods(["GET", "POST"])
@login_required
def slot(request: HttpRequest, slot_id: int) -> HttpResponse:
    """GET shows one of the grader's own results (Backspace re-grades the previous one);
    POST grades it and moves on to the next."""
    return _grading_page(request, slot=_own_slot(request, slot_id))


@require_POST
@login_required
def slot_skip(request: HttpRequest, slot_id: int) -> HttpResponse:
    found = selectors.slot_get_for_user(user=request.user, slot_id=slot_id)
    scope = _Scope(request)
    queue.slot_skip(user=request.user, slot_id=found.pk)
    return redirect(scope.queue_url)


@require_http_methods(["GET", "POST"])
@login_required
def item(request: HttpRequest, token: str) -> HttpResponse:
    """The result the grader is at, slot or probe, by its opaque address (module
    docstring): GET shows it, POST grades it and moves on to the next."""
    kind, pk = _item_from_token(token)
    if kind == ITEM_PROBE:
        return _grading_page(request,
                             probe=gold.probe_get_for_user(user=request.user, probe_id=pk))
    return _grading_page(request, slot=_own_slot(request, pk))


@require_POST
@login_required
def item_skip(request: HttpRequest, token: str) -> HttpResponse:
    """Skip the result the grader is at: a slot goes back to the pool (it comes back
    last), a probe is put aside for good (gold.probe_skip)."""
    kind, pk = _item_from_token(token)
    scope = _Scope(request)
    if kind == ITEM_PROBE:
        gold.probe_skip(user=request.user,
                        probe_id=gold.probe_get_for_user(user=request.user, probe_id=pk).pk)
    else:
        queue.slot_skip(user=request.user, slot_id=_own_slot(request, pk).pk)
    return redirect(scope.queue_url)


# --- leads: the feedback of one evaluation, graded or reset inline ---

FEEDBACK_PAGE_SIZE = 100
# The keyword filter's choices: an evaluation may hold 100,000 keywords, too many options
# for one page; the first ones and the chosen one are offered (any keyword's id still
# filters, as the keyword page's link does).
FEEDBACK_KEYWORD_CHOICES = 500


@require_GET
@login_required
def feedback_list(request: HttpRequest, evaluation_id: int) -> HttpResponse:
    # Every grade of the evaluation with its grader: for those who see everyone's grades.
    evaluation = evaluation_get_for_user(
        user=request.user, evaluation_id=evaluation_id, minimum_role=access.GRADES_ROLE)
    grader_id = request.GET.get("grader", "")
    keyword_id = request.GET.get("keyword", "")
    unsure = "1" if request.GET.get("unsure") == "1" else ""
    rows = selectors.feedback_rows(
        evaluation=evaluation,
        grader_id=int(grader_id) if grader_id.isdigit() else None,
        keyword_id=int(keyword_id) if keyword_id.isdigit() else None,
        unsure_only=bool(unsure),
    )
    page = Paginator(rows, FEEDBACK_PAGE_SIZE).get_page(request.GET.get("page"))
    return render(request, "judgments/feedback_list.html", {
        "evaluation": evaluation,
        # The rank-eval export needs an index the endpoint's URL may not name.
        "rank_eval_index": elasticsearch_shape(evaluation.model)[1],
        "page": page,
        "rows": page.object_list,
        # Page links carry the filters, so page 2 is page 2 of the same rows.
        "filter_query": urlencode(
            {name: value for name, value in (("grader", grader_id), ("keyword", keyword_id),
                                             ("unsure", unsure)) if value}),
        "scale": scale_lookup.scale_for_team(team_id=evaluation.team_id, code=evaluation.scale),
        "graders": selectors.evaluation_graders(evaluation=evaluation),
        **_keyword_choices(evaluation, keyword_id),
        "grader_id": grader_id,
        "keyword_id": keyword_id,
        "unsure": unsure,
        "back": request.get_full_path(),
    })


def _keyword_choices(evaluation, keyword_id: str) -> dict:
    keywords = list(evaluation.keywords.order_by("position")[:FEEDBACK_KEYWORD_CHOICES + 1])
    more = len(keywords) > FEEDBACK_KEYWORD_CHOICES
    keywords = keywords[:FEEDBACK_KEYWORD_CHOICES]
    if keyword_id.isdigit() and all(str(k.pk) != keyword_id for k in keywords):
        chosen = evaluation.keywords.filter(pk=int(keyword_id)).first()
        keywords += [chosen] if chosen else []
    return {"keywords": keywords, "more_keywords": more,
            "keyword_choices": FEEDBACK_KEYWORD_CHOICES}


def _back_to_feedback(request: HttpRequest, found: FeedbackSlot) -> HttpResponse:
    back = request.POST.get("next", "")
    expected = reverse("judgments:feedback", args=[found.evaluation_id])
    return redirect(back if back.startswith(expected) else expected)


@require_POST
@login_required
def feedback_lead_grade(request: HttpRequest, slot_id: int) -> HttpResponse:
    found = selectors.slot_get_for_user(
        user=request.user, slot_id=slot_id, minimum_role=Role.LEAD)
    form = LeadGradeForm(request.POST)
    try:
        if not form.is_valid():
            raise ValidationError({"grade": "Choose a grade."})
        grading.slot_grade_by_lead(
            lead=request.user, slot_id=found.pk, grade=parse_grade(form.cleaned_data["grade"]))
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
    else:
        messages.success(request, f"Graded {found.snapshot.doc_id} for “{found.keyword.text}”.")
    return _back_to_feedback(request, found)


@require_POST
@login_required
def feedback_reset(request: HttpRequest, slot_id: int) -> HttpResponse:
    found = selectors.slot_get_for_user(
        user=request.user, slot_id=slot_id, minimum_role=Role.LEAD)
    grading.slot_reset(slot_id=found.pk)
    messages.success(request, f"Reset slot {found.index + 1} of {found.snapshot.doc_id}.")
    return _back_to_feedback(request, found)


@require_POST
@login_required
def feedback_make_gold(request: HttpRequest, slot_id: int) -> HttpResponse:
    """"Make gold": the slot's result becomes a gold item with the slot's grade."""
    found = selectors.slot_get_for_user(
        user=request.user, slot_id=slot_id, minimum_role=access.GRADES_ROLE)
    try:
        if found.grade is None:
            raise ValidationError({"grade": "Grade the result first: its grade is the answer."})
        gold_items.gold_item_make(user=request.user, evaluation=found.evaluation,
                                  snapshot_id=found.snapshot_id, grade=found.grade)
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
    else:
        messages.success(request, f"{found.snapshot.doc_id} for “{found.keyword.text}” is a "
                                  f"gold item with the answer {found.grade}.")
    return _back_to_feedback(request, found)
