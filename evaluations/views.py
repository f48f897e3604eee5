"""Pages for evaluations and the demo search engine, and the team and confirm helpers every
evaluations page shares; endpoints and search models are in endpoints.views."""

from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.html import format_html
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from evaluations import demo, selectors
from evaluations.events import By
from evaluations.forms import EvaluationForm, metric_catalog
from evaluations.models import Evaluation, Keyword
from evaluations.query_sets import services as query_set_services
from evaluations.query_sets.file_formats import query_set_file_read
from evaluations.services import config_checks, configuration, keyword_input, lifecycle
from evaluations.services import keywords as keyword_services
from searchtweak import access
from searchtweak.forms import add_service_errors
from searchtweak.models import Role, Team
from searchtweak.views_shared import (
    confirm_page,
    current_team,
    current_team_can,
    service_step_response,
)

# --- evaluations -------------------------------------------------------------------------


ARCHIVED_SHOWN = 100


@require_GET
@login_required
def evaluation_list(request: HttpRequest) -> HttpResponse:
    team = current_team(request)
    status = request.GET.get("status", "")
    if status not in Evaluation.Status.values:
        status = ""
    show_archived = request.GET.get("archived") == "1"
    evaluations = selectors.evaluations_of_team(team_id=team.pk, status=status)
    page = Paginator(evaluations, 50).get_page(request.GET.get("page"))
    for evaluation in page.object_list:
        evaluation.fetch = selectors.fetch_progress_counted(evaluation)
    return render(request, "evaluations/evaluation_list.html", {
        "page": page, "status": status, "statuses": Evaluation.Status.choices,
        "show_archived": show_archived,
        # The newest only: archives grow without bound and this section is not paged.
        "archived_evaluations": selectors.evaluations_of_team(
            team_id=team.pk, archived=True)[:ARCHIVED_SHOWN] if show_archived else None,
        "archived_shown": ARCHIVED_SHOWN,
        "can_create": current_team_can(request, team.pk, Role.LEAD),
    })


def _keywords_from_form(form: EvaluationForm
                        ) -> tuple[list[keyword_services.KeywordEntry], str] | None:
    """The form's keywords (typed or uploaded, with their weights and tags) and the notice
    of what was cleaned away and what the file was read as; None with the typed lines' and
    the file's errors on the form. The file is recognised as a query set's is
    (query_sets.file_formats): one rule for what an uploaded keyword file is."""
    upload = form.cleaned_data.get("keywords_file")
    errors: dict[str, list[str]] = {}
    entries: list[keyword_services.KeywordEntry] = []
    read = None
    # Typed lines first: their line numbers are the textarea's, the file's its own.
    try:
        entries += keyword_input.keywords_from_text(form.cleaned_data["keywords"])
    except ValidationError as error:
        errors.update(error.message_dict)
    if upload:
        try:
            # Whole in memory: the form's size check (KEYWORD_UPLOAD_MAX_BYTES) bounds it.
            read = query_set_file_read(
                filename=upload.name, content=upload.read(),
                kind=form.cleaned_data.get("keywords_format") or "auto", taker="an evaluation")
            entries += read.entries
        except ValidationError as error:
            errors.update(error.message_dict)
    try:
        if errors:
            raise ValidationError(errors)
        cleaned = keyword_services.keywords_clean(entries)
    except ValidationError as error:
        add_service_errors(form, error)
        return None
    return cleaned.entries, " ".join(
        part for part in (read.summary() if read else "", cleaned.notice()) if part)


def _render_evaluation_form(request, form, evaluation=None, status=200) -> HttpResponse:
    return render(request, "evaluations/evaluation_form.html", {
        "form": form, "evaluation": evaluation, "metric_catalog": metric_catalog(),
    }, status=status)


def _add_save_errors(request: HttpRequest, form: EvaluationForm, team: Team,
                     error: ValidationError) -> None:
    """The service's errors on the form; a missing transformer also links admins to the
    page that defines it, with the pair chosen."""
    if isinstance(error, config_checks.MissingTransformerError) and current_team_can(
            request, team.pk, Role.ADMIN):
        url = reverse("judgments:transformer_edit") + "?" + urlencode(
            {"source": error.source, "target": error.target})
        for message in error.message_dict["metrics"]:
            form.add_error("metrics", format_html(
                '{} <a href="{}" data-testid="define-transformer">Define it now</a>.',
                message, url))
        return
    add_service_errors(form, error)


@require_http_methods(["GET", "POST"])
@login_required
def evaluation_create(request: HttpRequest) -> HttpResponse:
    team = current_team(request, Role.LEAD)
    initial = {}
    model_id = request.GET.get("model", "")
    if model_id.isdigit():
        model = team.search_models.filter(pk=model_id).first()
        if model:
            initial = {"model": model.pk, "keywords": keyword_input.keywords_as_text(
                keyword_input.keyword_lines(model.default_keywords))}
    query_set_id = request.GET.get("query_set", "")
    if query_set_id.isdigit():
        initial["query_set"] = query_set_id
    form = EvaluationForm(request.POST or None, request.FILES or None, team=team,
                          initial=initial, with_query_sets=True)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        # A query set's keywords are clean already; typed or uploaded ones are parsed.
        parsed = ([], "") if data["query_set"] else _keywords_from_form(form)
        if parsed is not None:
            keywords, notice = parsed
            fields = dict(
                team=team, created_by=request.user, model=data["model"], name=data["name"],
                description=data["description"], scale=data["scale"],
                strategy=data["strategy"], metrics=data["metrics"],
                transformers=data["transformers"], tags=data["tags"],
                guidelines=data["guidelines"], reuse_grades=data["reuse_grades"],
                show_position=data["show_position"], auto_finish=data["auto_finish"],
                shuffle_results=data["shuffle_results"],
                grading_order=data["grading_order"], gold_rate=data["gold_rate"],
                second_grader_below_gold_bar=data["second_grader_below_gold_bar"])
            try:
                if data["query_set"]:
                    evaluation = query_set_services.evaluation_create_from_query_set(
                        query_set=data["query_set"], **fields)
                    keyword_count = evaluation.query_set_version.keyword_count
                elif data["save_as_query_set"].strip():
                    evaluation = query_set_services.evaluation_create_saving_query_set(
                        query_set_name=data["save_as_query_set"], keywords=keywords, **fields)
                else:
                    evaluation = configuration.evaluation_create(keywords=keywords, **fields)
                if not data["query_set"]:
                    keyword_count = len(keywords)
            except ValidationError as error:
                _add_save_errors(request, form, team, error)
            else:
                if notice:
                    messages.info(request, notice)
                messages.success(request, f"Evaluation {evaluation.name} created with "
                                 f"{keyword_count} keywords.")
                return redirect("evaluations:evaluation_detail", evaluation_id=evaluation.pk)
    return _render_evaluation_form(request, form, status=400 if form.errors else 200)


@require_http_methods(["GET", "POST"])
@login_required
def evaluation_edit(request: HttpRequest, evaluation_id: int) -> HttpResponse:
    evaluation = selectors.evaluation_get_for_user(user=request.user, evaluation_id=evaluation_id,
                                                   minimum_role=Role.LEAD)
    form = EvaluationForm(request.POST or None, request.FILES or None, team=evaluation.team,
                          frozen=evaluation.has_started(),
                          initial=EvaluationForm.initial_for(evaluation))
    if request.method == "POST" and form.is_valid():
        parsed = _keywords_from_form(form)
        if parsed is not None:
            keywords, notice = parsed
            data = form.cleaned_data
            changes = {key: data[key] for key in ("name", "description", "metrics", "tags",
                                                  "guidelines", "reuse_grades",
                                                  "show_position", "auto_finish",
                                                  "shuffle_results", "grading_order",
                                                  "gold_rate",
                                                  "second_grader_below_gold_bar")}
            if not evaluation.has_started():
                changes.update({key: data[key] for key in ("model", "scale", "strategy",
                                                           "transformers")})
            if evaluation.status == Evaluation.Status.PENDING:
                changes["keywords"] = keywords
            try:
                configuration.evaluation_update(evaluation=evaluation, **changes)
            except ValidationError as error:
                _add_save_errors(request, form, evaluation.team, error)
            else:
                if notice:
                    messages.info(request, notice)
                messages.success(request, "Evaluation saved.")
                return redirect("evaluations:evaluation_detail", evaluation_id=evaluation.pk)
    return _render_evaluation_form(request, form, evaluation,
                                   status=400 if form.errors else 200)


@require_GET
@login_required
def evaluation_detail(request: HttpRequest, evaluation_id: int) -> HttpResponse:
    evaluation = selectors.evaluation_get_for_user(user=request.user, evaluation_id=evaluation_id)
    fetch_status = request.GET.get("fetch", "")
    if fetch_status not in Keyword.FetchStatus.values:
        fetch_status = ""
    keywords = Paginator(selectors.keywords_of_evaluation(evaluation=evaluation,
                                                          fetch_status=fetch_status), 100)
    fetch = selectors.fetch_progress(evaluation=evaluation)
    return render(request, "evaluations/evaluation_detail.html", {
        "evaluation": evaluation, "fetch": fetch,
        "fetch_errors": selectors.fetch_errors(evaluation=evaluation) if fetch.failed else [],
        "metrics": selectors.metric_configs_of(evaluation=evaluation),
        "keywords": keywords.get_page(request.GET.get("page")), "fetch_status": fetch_status,
        "can_lead": current_team_can(request, evaluation.team_id, Role.LEAD),
    })


@require_GET
@login_required
def evaluation_progress(request: HttpRequest, evaluation_id: int) -> JsonResponse:
    """The fetch progress the detail page polls while fetching."""
    evaluation = selectors.evaluation_get_for_user(user=request.user, evaluation_id=evaluation_id)
    return JsonResponse(selectors.fetch_progress(evaluation=evaluation).as_dict())


@require_http_methods(["GET", "POST"])
@login_required
def evaluation_archive(request: HttpRequest, evaluation_id: int) -> HttpResponse:
    """GET asks; POST archives (a soft flag: restore brings it back)."""
    evaluation = selectors.evaluation_get_for_user(user=request.user, evaluation_id=evaluation_id,
                                                   minimum_role=Role.LEAD)
    if request.method == "GET":
        dependents = selectors.evaluation_dependents(evaluation=evaluation)
        if evaluation.archived_at is not None:
            consequence, button = "It is archived already.", ""
        elif evaluation.status == Evaluation.Status.FETCHING:
            consequence, button = "Pause it before archiving it: it is fetching.", ""
        else:
            consequence, button = (
                "Archiving hides it from the evaluation list and the dashboards. Its keywords, "
                "results, grades and metrics are kept, and you can restore it."), \
                "Archive evaluation"
        return confirm_page(
            request, title=f"Archive evaluation {evaluation.name}?",
            dependents=f"It has {dependents.summary()}." if dependents else "It is empty.",
            consequence=consequence, button=button,
            cancel_url=_detail_url(evaluation))
    return service_step_response(
        request, lambda: lifecycle.evaluation_archive(evaluation=evaluation, by=By.USER,
                                               user=request.user),
        done=f"Evaluation {evaluation.name} archived. Show archived evaluations in the list "
             "to restore it.",
        next_url="evaluations:evaluation_list", refused_url=_detail_url(evaluation))


@require_POST
@login_required
def evaluation_restore(request: HttpRequest, evaluation_id: int) -> HttpResponse:
    evaluation = selectors.evaluation_get_for_user(user=request.user, evaluation_id=evaluation_id,
                                                   minimum_role=Role.LEAD)
    lifecycle.evaluation_restore(evaluation=evaluation, by=By.USER, user=request.user)
    messages.success(request, f"Evaluation {evaluation.name} restored.")
    return redirect("evaluations:evaluation_detail", evaluation_id=evaluation.pk)


@require_http_methods(["GET", "POST"])
@login_required
def evaluation_delete(request: HttpRequest, evaluation_id: int) -> HttpResponse:
    """GET asks, naming what goes with it; POST deletes."""
    evaluation = selectors.evaluation_get_for_user(user=request.user, evaluation_id=evaluation_id,
                                                   minimum_role=Role.LEAD)
    if request.method == "GET":
        dependents = selectors.evaluation_dependents(evaluation=evaluation)
        fetching = evaluation.status == Evaluation.Status.FETCHING
        return confirm_page(
            request, title=f"Delete evaluation {evaluation.name}?",
            dependents=f"It has {dependents.summary()}." if dependents else "It is empty.",
            consequence="Pause it before deleting it: it is fetching." if fetching else
            "Deleting removes them and every grade given to them, for good. Archiving "
            "instead hides it and keeps everything.",
            button="" if fetching else "Delete evaluation", danger=True,
            cancel_url=_detail_url(evaluation))
    return service_step_response(
        request, lambda: lifecycle.evaluation_delete(evaluation=evaluation, user=request.user),
        done=f"Evaluation {evaluation.name} deleted.", next_url="evaluations:evaluation_list",
        refused_url=_detail_url(evaluation))


def _detail_url(evaluation: Evaluation) -> str:
    return reverse("evaluations:evaluation_detail", args=[evaluation.pk])


ACTIONS = {
    "start": (lifecycle.evaluation_start, "Fetching started."),
    "pause": (lifecycle.evaluation_pause, "Paused; starting again fetches only what is left."),
    "finish": (lifecycle.evaluation_finish, "Evaluation finished."),
    "retry-failed": (lifecycle.evaluation_retry_failed, "Fetching the failed keywords again."),
}


@require_POST
@login_required
def evaluation_action(request: HttpRequest, evaluation_id: int, action: str) -> HttpResponse:
    if action not in {*ACTIONS, "clone"}:
        raise Http404("No such action.")
    evaluation = selectors.evaluation_get_for_user(user=request.user, evaluation_id=evaluation_id,
                                                   minimum_role=Role.LEAD)
    try:
        if action == "clone":
            clone = configuration.evaluation_clone(evaluation=evaluation, created_by=request.user)
            messages.success(request, f"Cloned as {clone.name}.")
            return redirect("evaluations:evaluation_detail", evaluation_id=clone.pk)
        service, message = ACTIONS[action]
        evaluation = service(evaluation=evaluation, by=By.USER, user=request.user)
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
    else:
        evaluation.refresh_from_db(fields=["status"])
        if action == "start" and evaluation.status == Evaluation.Status.ACTIVE:
            message = "Every keyword is fetched; the evaluation is active."
        if action == "retry-failed" and evaluation.status == Evaluation.Status.ACTIVE:
            # Fetched already (tasks run eagerly without a broker), or nothing had failed.
            failed = selectors.fetch_progress(evaluation=evaluation).failed
            message = (f"{failed} keyword{'s' if failed != 1 else ''} failed again." if failed
                       else "Every keyword is fetched; the evaluation is active.")
        messages.success(request, message)
    return redirect("evaluations:evaluation_detail", evaluation_id=evaluation.pk)


@require_GET
@login_required
def keyword_detail(request: HttpRequest, keyword_id: int) -> HttpResponse:
    keyword = selectors.keyword_get_for_user(user=request.user, keyword_id=keyword_id)
    visibility = access.grade_visibility(user=request.user)
    return render(request, "evaluations/keyword_detail.html", {
        "keyword": keyword, "evaluation": keyword.evaluation,
        "sees_all_grades": visibility.sees_everyone(keyword.evaluation.team_id),
        "snapshots": selectors.keyword_snapshots(keyword=keyword, visibility=visibility),
    })


# --- the demo search engine ---------------------------------------------------------------


@require_GET
def demo_search(request: HttpRequest) -> JsonResponse:
    """GET /demo/search?q=…&size=10&category=…&ranking=relevance|cheap-first: public, like
    the engines teams point at."""
    size = request.GET.get("size", "10")
    if not size.isdigit():
        return JsonResponse({"error": "size must be a positive integer"}, status=400)
    ranking = request.GET.get("ranking", "relevance")
    if ranking not in demo.RANKINGS:
        return JsonResponse(
            {"error": f"ranking must be one of {', '.join(demo.RANKINGS)}"}, status=400)
    return JsonResponse(demo.search(request.GET.get("q", ""), size=int(size),
                                    category=request.GET.get("category", ""),
                                    ranking=ranking),
                        json_dumps_params={"ensure_ascii": False})
