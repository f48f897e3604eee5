"""Grading pages (keyboard-first, plain POSTs that grade.js speeds up) and admin pages."""

import json
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from evaluations.models import Evaluation
from evaluations.selectors import evaluation_get_for_user
from judgments import imports, selectors, services
from judgments import scales as scale_lookup
from judgments.forms import (
    GradeForm,
    GraderTagsForm,
    LeadGradeForm,
    PoolImportForm,
    ScaleForm,
    TransformerForm,
    parse_grade,
)
from judgments.models import FeedbackSlot
from searchtweak import access
from searchtweak.forms import add_service_errors
from searchtweak.models import Role, Team
from searchtweak.selectors import team_members

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
            self.team = membership.team if membership else None
        self.evaluation_ids = (
            selectors.queue_evaluation_ids(
                user=request.user, team=self.team, evaluation=self.evaluation)
            if self.team else []
        )
        # Progress also covers work that just ended (an evaluation finishes on its last grade).
        if self.evaluation is not None:
            self.progress_ids = [self.evaluation.pk]
        elif self.team is not None:
            self.progress_ids = sorted(set(self.evaluation_ids) | set(
                selectors.recently_graded_evaluation_ids(user=request.user, team=self.team)))
        else:
            self.progress_ids = []

    @property
    def query(self) -> str:
        return f"?{urlencode({'evaluation': self.evaluation.pk})}" if self.evaluation else ""

    @property
    def queue_url(self) -> str:
        if self.evaluation:
            return reverse("judgments:evaluation_grade", args=[self.evaluation.pk])
        return reverse("judgments:grade")


def _render_grading(
    request: HttpRequest, scope: _Scope, slot: FeedbackSlot | None, *,
    form_error: str = "", status: int = 200,
) -> HttpResponse:
    context = {"scope": scope, "slot": slot, "form_error": form_error,
               "progress": selectors.grading_progress(
                   user=request.user, evaluation_ids=scope.progress_ids)}
    if slot is not None:
        evaluation = slot.evaluation
        context_scale = scale_lookup.scale_for_team(
            team_id=evaluation.team_id, code=evaluation.scale)
        context.update({
            "evaluation": evaluation,
            "scale": context_scale,
            "guidelines": selectors.guidelines_html(text=evaluation.guidelines),
            "previous": selectors.previous_graded_slot(
                user=request.user, evaluation_ids=scope.evaluation_ids or [evaluation.pk],
                before=slot),
            "regrade": slot.grade is not None,
            "current_label": context_scale.label_of(slot.grade) if context_scale else "",
            "fields": [(label, value) for label, value in (slot.snapshot.fields or {}).items()],
            "image": selectors.document_image_src(slot.snapshot.image),
            "lease_minutes": selectors.lease_minutes_left(slot),
            "slot_url": reverse("judgments:slot", args=[slot.pk]) + scope.query,
        })
    else:
        context.update({
            "slot_url": scope.queue_url,
            "empty": selectors.grader_empty_queue(
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
        # Asking again returns the result already held, so this GET claims at most one.
        slot = services.slot_claim_next(
            user=request.user, team=scope.team, evaluation=scope.evaluation)
    if slot is not None:
        slot = selectors.slot_get_for_user(user=request.user, slot_id=slot.pk)
    return _render_grading(request, scope, slot)


@require_http_methods(["GET", "POST"])
@login_required
def slot(request: HttpRequest, slot_id: int) -> HttpResponse:
    """GET shows one of the grader's own results (Backspace re-grades the previous one);
    POST grades it and moves on to the next."""
    found = selectors.slot_get_for_user(user=request.user, slot_id=slot_id)
    if found.user_id != request.user.pk:
        raise Http404("No such slot.")
    scope = _Scope(request)
    if request.method == "GET":
        return _render_grading(request, scope, found)
    form = GradeForm(request.POST)
    if not form.is_valid():
        return _render_grading(request, scope, found, status=400,
                               form_error="Choose one of the grades.")
    try:
        services.feedback_submit(
            user=request.user, slot_id=found.pk, grade=parse_grade(form.cleaned_data["grade"]),
            unsure=form.cleaned_data["unsure"], note=form.cleaned_data["note"],
        )
    except ValidationError as error:
        if "grade" in error.message_dict:
            return _render_grading(request, scope, found, status=400,
                                   form_error=" ".join(error.message_dict["grade"]))
        messages.error(request, " ".join(error.messages))
    return redirect(scope.queue_url)


@require_POST
@login_required
def slot_skip(request: HttpRequest, slot_id: int) -> HttpResponse:
    found = selectors.slot_get_for_user(user=request.user, slot_id=slot_id)
    scope = _Scope(request)
    services.slot_skip(user=request.user, slot_id=found.pk)
    return redirect(scope.queue_url)


# --- leads: the feedback of one evaluation, graded or reset inline ---

FEEDBACK_PAGE_SIZE = 100


@require_GET
@login_required
def feedback_list(request: HttpRequest, evaluation_id: int) -> HttpResponse:
    evaluation = evaluation_get_for_user(
        user=request.user, evaluation_id=evaluation_id, minimum_role=Role.LEAD)
    grader_id = request.GET.get("grader", "")
    keyword_id = request.GET.get("keyword", "")
    rows = selectors.feedback_rows(
        evaluation=evaluation,
        grader_id=int(grader_id) if grader_id.isdigit() else None,
        keyword_id=int(keyword_id) if keyword_id.isdigit() else None,
    )
    page = Paginator(rows, FEEDBACK_PAGE_SIZE).get_page(request.GET.get("page"))
    return render(request, "judgments/feedback_list.html", {
        "evaluation": evaluation,
        "page": page,
        "rows": page.object_list,
        # Page links carry the filters, so page 2 is page 2 of the same rows.
        "filter_query": urlencode(
            {name: value for name, value in (("grader", grader_id), ("keyword", keyword_id))
             if value}),
        "scale": scale_lookup.scale_for_team(team_id=evaluation.team_id, code=evaluation.scale),
        "graders": selectors.evaluation_graders(evaluation=evaluation),
        "keywords": evaluation.keywords.order_by("position"),
        "grader_id": grader_id,
        "keyword_id": keyword_id,
        "back": request.get_full_path(),
    })


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
        services.slot_grade_by_lead(
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
    services.slot_reset(slot_id=found.pk)
    messages.success(request, f"Reset slot {found.index + 1} of {found.snapshot.doc_id}.")
    return _back_to_feedback(request, found)


# --- admins: scales, transformers, grader tags of the current team ---


def _admin_team(request: HttpRequest) -> Team:
    return access.current_team_access(user=request.user, minimum_role=Role.ADMIN,
                                      reason=selectors.ADMIN_REASON).team


@require_GET
@login_required
def scale_list(request: HttpRequest) -> HttpResponse:
    team = _admin_team(request)
    rows = {row.code: row for row in team.scales.all()}
    return render(request, "judgments/scale_list.html", {
        "team": team,
        "scales": [(scale, rows.get(scale.code))
                   for scale in scale_lookup.scales_for_team(team_id=team.pk)],
        "transformers": team.transformers.all(),
        "defaults": _default_transformers(),
    })


def _default_transformers() -> list[tuple[str, str, str]]:
    rows = []
    for source in ("binary", "graded", "detail"):
        for target in ("binary", "graded", "detail"):
            if source != target:
                mapping = scale_lookup.default_mapping(
                    scale_lookup.builtin_scale(source), scale_lookup.builtin_scale(target))
                rows.append((source, target, ", ".join(f"{k}→{v}" for k, v in mapping.items())))
    return rows


@require_http_methods(["GET", "POST"])
@login_required
def scale_create(request: HttpRequest) -> HttpResponse:
    team = _admin_team(request)
    form = ScaleForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            services.scale_create(team=team, **form.cleaned_data)
        except ValidationError as error:
            add_service_errors(form, error)
        else:
            messages.success(request, f"Scale {form.cleaned_data['name']} created.")
            return redirect("judgments:scales")
    return render(request, "judgments/scale_form.html", {"form": form, "scale": None},
                  status=400 if form.errors else 200)


@require_http_methods(["GET", "POST"])
@login_required
def scale_edit(request: HttpRequest, scale_id: int) -> HttpResponse:
    scale = selectors.scale_get_for_user(user=request.user, scale_id=scale_id)
    initial = {"code": scale.code, "name": scale.name, "lo": scale.lo, "hi": scale.hi,
               "labels": ScaleForm.labels_text(scale.labels)}
    form = ScaleForm(request.POST or None, initial=initial, editing=True)
    if request.method == "POST" and form.is_valid():
        data = {k: v for k, v in form.cleaned_data.items() if k != "code"}
        try:
            services.scale_update(scale=scale, **data)
        except ValidationError as error:
            add_service_errors(form, error)
        else:
            messages.success(request, f"Scale {scale.name} saved.")
            return redirect("judgments:scales")
    return render(request, "judgments/scale_form.html", {"form": form, "scale": scale},
                  status=400 if form.errors else 200)


@require_POST
@login_required
def scale_delete(request: HttpRequest, scale_id: int) -> HttpResponse:
    scale = selectors.scale_get_for_user(user=request.user, scale_id=scale_id)
    try:
        services.scale_delete(scale=scale)
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
    else:
        messages.success(request, f"Scale {scale.name} deleted.")
    return redirect("judgments:scales")


@require_http_methods(["GET", "POST"])
@login_required
def transformer_edit(request: HttpRequest) -> HttpResponse:
    """Create or replace the team's transformer between two scales: one row per grade of
    the source, prefilled with the current mapping (the team's own, else the
    docs/METRICS.md default). `?source=&target=`, or posting "show", picks the rows
    without JavaScript; transformer.js rebuilds them in place from data attributes."""
    team = _admin_team(request)
    team_scales = scale_lookup.scales_for_team(team_id=team.pk)
    known = {scale.code: scale for scale in team_scales}
    mappings = _known_mappings(team, team_scales)
    if request.method == "POST" and "show" not in request.POST:
        form = TransformerForm(request.POST, scales=team_scales,
                               source=request.POST.get("source", ""),
                               target=request.POST.get("target", ""))
        if form.is_valid():
            data = form.cleaned_data
            try:
                services.transformer_save(team=team, source=data["source"],
                                          target=data["target"], mapping=data["mapping"])
            except ValidationError as error:
                add_service_errors(form, error)
            else:
                messages.success(request,
                                 f"Transformer {data['source']} → {data['target']} saved.")
                return redirect("judgments:scales")
    else:
        # A GET, or "Show the grades" of the form without JavaScript: rows for the scales.
        chosen = request.GET if request.method == "GET" else request.POST
        source = chosen.get("source", "")
        source = source if source in known else "graded"
        target = chosen.get("target", "")
        if target not in known or target == source:
            target = next(code for code in known if code != source)
        form = TransformerForm(scales=team_scales, source=source, target=target, initial={
            "source": source, "target": target,
            **TransformerForm.initial_for(mappings.get(f"{source}->{target}")),
        })
    return render(request, "judgments/transformer_form.html", {
        "form": form,
        # Read by transformer.js; autoescaping keeps the JSON intact inside the attribute.
        "scales_json": json.dumps({
            code: [{"value": g.value, "label": g.label} for g in scale.grades]
            for code, scale in known.items()}),
        "mappings_json": json.dumps(mappings),
    }, status=400 if form.errors else 200)


def _known_mappings(
    team: Team, team_scales: list[scale_lookup.GradeScale]
) -> dict[str, dict[str, int]]:
    """Every "src->dst" pair of the team's scales that has a mapping: the team's own, else
    the default between built-ins."""
    mappings = {}
    for source in team_scales:
        for target in team_scales:
            if source.code != target.code:
                default = scale_lookup.default_mapping(source, target)
                if default is not None:
                    mappings[f"{source.code}->{target.code}"] = {
                        str(k): v for k, v in default.items()}
    return mappings | scale_lookup.transformer_mappings(team_id=team.pk)


@require_POST
@login_required
def transformer_delete(request: HttpRequest, transformer_id: int) -> HttpResponse:
    transformer = selectors.transformer_get_for_user(
        user=request.user, transformer_id=transformer_id)
    services.transformer_delete(transformer=transformer)
    messages.success(request, f"Transformer {transformer} removed; the default applies again.")
    return redirect("judgments:scales")


@require_GET
@login_required
def grader_tags(request: HttpRequest) -> HttpResponse:
    team = _admin_team(request)
    tags = selectors.team_grader_tags(team=team)
    members = [(m, ", ".join(tags.get(m.user_id, []))) for m in team_members(team=team)]
    return render(request, "judgments/grader_tags.html", {"team": team, "members": members})


@require_POST
@login_required
def grader_tags_update(request: HttpRequest, user_id: int) -> HttpResponse:
    team = _admin_team(request)
    membership = team_members(team=team).filter(user_id=user_id).first()
    if membership is None:
        raise Http404("No such member.")
    form = GraderTagsForm(request.POST)
    if form.is_valid():
        row = services.grader_tags_set(team=team, user=membership.user,
                                       tags=form.cleaned_data["tags"])
        messages.success(request, f"{membership.user.username} carries: "
                         f"{', '.join(row.tags) or 'no tags'}.")
    else:
        messages.error(request, " ".join(form.errors.get("tags", ["Invalid tags."])))
    return redirect("judgments:grader_tags")


# --- the team's judgment pool ---


@require_http_methods(["GET", "POST"])
@login_required
def pool_import(request: HttpRequest) -> HttpResponse:
    """Import judgments into the current team's pool. "Preview" parses and shows what would
    be imported and every error; "Import" stores all of it, or nothing if any line fails."""
    team = access.current_team_access(user=request.user, minimum_role=Role.LEAD).team
    form = PoolImportForm(request.POST or None, request.FILES or None,
                          scale_choices=scale_lookup.provider_choices(team))
    preview = None
    status = 200
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        scale = scale_lookup.scale_for_team(team_id=team.pk, code=data["scale"])
        parsed = imports.parse_upload(kind=data["format"], file=data["file"],
                                      mapping=data.get("mapping"), scale=scale)
        if "preview" in request.POST or not parsed.ok:
            preview = imports.preview(parsed)
            status = 200 if parsed.ok else 400
        else:
            counts = services.pool_judgments_import(
                team=team, scale=scale.code, judgments=parsed.judgments,
                source=f"{data['format']}: {data['file'].name}", user=request.user)
            messages.success(request, (
                f"Imported {counts['imported']} judgments for {counts['keywords']} keywords "
                f"({counts['replaced']} earlier ones replaced); {counts['dirty_keywords']} "
                "keywords with pool metrics are being recomputed."))
            return redirect("judgments:pool_import")
    elif request.method == "POST":
        status = 400
    return render(request, "judgments/pool_import.html", {
        "form": form, "preview": preview, "team": team,
        "pool_count": selectors.pool_judgment_count(team=team),
    }, status=status)
