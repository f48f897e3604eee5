"""Pages for endpoints, search models and evaluations, and the demo search engine."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from evaluations import demo, selectors, services
from evaluations.forms import (
    EndpointForm,
    EvaluationForm,
    ModelTestForm,
    SearchModelForm,
    metric_catalog,
)
from evaluations.mapper import PRESETS, preset_mapper
from evaluations.models import Evaluation, Keyword
from searchtweak.forms import add_service_errors
from searchtweak.models import Role, Team
from searchtweak.selectors import current_membership


def _team(request: HttpRequest, minimum_role: str = Role.GRADER) -> Team:
    membership = current_membership(user=request.user)
    selectors._check_role(user=request.user, team_id=membership.team_id if membership else 0,
                          minimum_role=minimum_role, what="team")
    return membership.team


def _can(request: HttpRequest, team_id: int, role: str) -> bool:
    membership = current_membership(user=request.user)
    return membership is not None and membership.team_id == team_id and membership.can(role)


# --- endpoints ---------------------------------------------------------------------------


@require_GET
@login_required
def endpoint_list(request: HttpRequest) -> HttpResponse:
    team = _team(request)
    show_archived = request.GET.get("archived") == "1"
    return render(request, "evaluations/endpoint_list.html", {
        "endpoints": selectors.endpoints_of_team(team_id=team.pk,
                                                 include_archived=show_archived),
        "can_edit": _can(request, team.pk, Role.ADMIN), "show_archived": show_archived,
    })


def _render_endpoint_form(request, form, endpoint=None, status=200) -> HttpResponse:
    presets = {key: preset_mapper(key) for key in PRESETS}
    return render(request, "evaluations/endpoint_form.html",
                  {"form": form, "endpoint": endpoint, "presets": presets}, status=status)


@require_http_methods(["GET", "POST"])
@login_required
def endpoint_create(request: HttpRequest) -> HttpResponse:
    team = _team(request, Role.ADMIN)
    form = EndpointForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            endpoint = services.endpoint_create(team=team, created_by=request.user,
                                                **form.service_kwargs())
        except ValidationError as error:
            add_service_errors(form, error)
        else:
            messages.success(request, f"Endpoint {endpoint.name} created. Now add a search "
                             "model that queries it.")
            return redirect("evaluations:model_create")
    return _render_endpoint_form(request, form, status=400 if form.errors else 200)


@require_http_methods(["GET", "POST"])
@login_required
def endpoint_edit(request: HttpRequest, endpoint_id: int) -> HttpResponse:
    endpoint = selectors.endpoint_get_for_user(user=request.user, endpoint_id=endpoint_id,
                                               minimum_role=Role.ADMIN)
    try:
        secrets = services.endpoint_secret_headers(endpoint=endpoint)
    except Exception:
        secrets = {}
    form = EndpointForm(request.POST or None, initial=EndpointForm.initial_for(endpoint, secrets))
    if request.method == "POST" and form.is_valid():
        try:
            services.endpoint_update(endpoint=endpoint, **form.service_kwargs())
        except ValidationError as error:
            add_service_errors(form, error)
        else:
            messages.success(request, f"Endpoint {endpoint.name} saved.")
            return redirect("evaluations:endpoint_list")
    return _render_endpoint_form(request, form, endpoint, status=400 if form.errors else 200)


@require_POST
@login_required
def endpoint_delete(request: HttpRequest, endpoint_id: int) -> HttpResponse:
    endpoint = selectors.endpoint_get_for_user(user=request.user, endpoint_id=endpoint_id,
                                               minimum_role=Role.ADMIN)
    if services.endpoint_delete(endpoint=endpoint):
        messages.success(request, f"Endpoint {endpoint.name} deleted.")
    else:
        messages.success(request, f"Endpoint {endpoint.name} is used by search models, so it "
                         "was archived instead of deleted.")
    return redirect("evaluations:endpoint_list")


# --- search models -----------------------------------------------------------------------


@require_GET
@login_required
def model_list(request: HttpRequest) -> HttpResponse:
    team = _team(request)
    show_archived = request.GET.get("archived") == "1"
    return render(request, "evaluations/model_list.html", {
        "models": selectors.search_models_of_team(team_id=team.pk,
                                                  include_archived=show_archived),
        "can_edit": _can(request, team.pk, Role.ADMIN),
        "can_test": _can(request, team.pk, Role.LEAD), "show_archived": show_archived,
    })


@require_http_methods(["GET", "POST"])
@login_required
def model_create(request: HttpRequest) -> HttpResponse:
    team = _team(request, Role.ADMIN)
    form = SearchModelForm(request.POST or None, team=team,
                           initial={"params": "q=#query#"})
    if request.method == "POST" and form.is_valid():
        try:
            model = services.search_model_create(team=team, created_by=request.user,
                                                 **form.service_kwargs())
        except ValidationError as error:
            add_service_errors(form, error)
        else:
            messages.success(request, f"Search model {model.name} created. Try a query.")
            return redirect("evaluations:model_test", model_id=model.pk)
    return render(request, "evaluations/model_form.html", {"form": form},
                  status=400 if form.errors else 200)


@require_http_methods(["GET", "POST"])
@login_required
def model_edit(request: HttpRequest, model_id: int) -> HttpResponse:
    model = selectors.search_model_get_for_user(user=request.user, model_id=model_id,
                                                minimum_role=Role.ADMIN)
    form = SearchModelForm(request.POST or None, team=model.team,
                           initial=SearchModelForm.initial_for(model))
    if request.method == "POST" and form.is_valid():
        try:
            services.search_model_update(model=model, **form.service_kwargs())
        except ValidationError as error:
            add_service_errors(form, error)
        else:
            messages.success(request, f"Search model {model.name} saved.")
            return redirect("evaluations:model_list")
    return render(request, "evaluations/model_form.html", {"form": form, "model": model},
                  status=400 if form.errors else 200)


@require_POST
@login_required
def model_delete(request: HttpRequest, model_id: int) -> HttpResponse:
    model = selectors.search_model_get_for_user(user=request.user, model_id=model_id,
                                                minimum_role=Role.ADMIN)
    if services.search_model_delete(model=model):
        messages.success(request, f"Search model {model.name} deleted.")
    else:
        messages.success(request, f"Search model {model.name} is used by evaluations, so it "
                         "was archived instead of deleted.")
    return redirect("evaluations:model_list")


@require_http_methods(["GET", "POST"])
@login_required
def model_test(request: HttpRequest, model_id: int) -> HttpResponse:
    model = selectors.search_model_get_for_user(user=request.user, model_id=model_id,
                                                minimum_role=Role.LEAD)
    first_keyword = next(iter(services.keywords_clean(
        model.default_keywords.splitlines()).keywords), "")
    form = ModelTestForm(request.POST or None, initial={"query": first_keyword})
    result = None
    if request.method == "POST" and form.is_valid():
        try:
            result = services.search_model_test(model=model, query=form.cleaned_data["query"])
        except ValidationError as error:
            add_service_errors(form, error)
    return render(request, "evaluations/model_test.html", {
        "model": model, "form": form, "result": result,
    }, status=400 if form.errors else 200)


# --- evaluations -------------------------------------------------------------------------


@require_GET
@login_required
def evaluation_list(request: HttpRequest) -> HttpResponse:
    team = _team(request)
    status = request.GET.get("status", "")
    if status not in Evaluation.Status.values:
        status = ""
    show_archived = request.GET.get("archived") == "1"
    evaluations = selectors.evaluations_of_team(team_id=team.pk, include_archived=show_archived,
                                                status=status)
    page = Paginator(evaluations, 50).get_page(request.GET.get("page"))
    for evaluation in page.object_list:
        evaluation.fetch = selectors.fetch_progress_counted(evaluation)
    return render(request, "evaluations/evaluation_list.html", {
        "page": page, "status": status, "statuses": Evaluation.Status.choices,
        "show_archived": show_archived, "can_create": _can(request, team.pk, Role.LEAD),
    })


def _keywords_from_form(form: EvaluationForm) -> tuple[list[str], str] | None:
    """The form's keywords (typed or uploaded) and the notice of what was cleaned away."""
    upload = form.cleaned_data.get("keywords_file")
    lines = form.cleaned_data["keywords"].splitlines()
    if upload:
        try:
            lines += services.keywords_from_upload(filename=upload.name, content=upload.read())
        except ValidationError as error:
            add_service_errors(form, error)
            return None
    cleaned = services.keywords_clean(lines)
    return cleaned.keywords, cleaned.notice()


def _render_evaluation_form(request, form, evaluation=None, status=200) -> HttpResponse:
    return render(request, "evaluations/evaluation_form.html", {
        "form": form, "evaluation": evaluation, "metric_catalog": metric_catalog(),
    }, status=status)


@require_http_methods(["GET", "POST"])
@login_required
def evaluation_create(request: HttpRequest) -> HttpResponse:
    team = _team(request, Role.LEAD)
    initial = {}
    model_id = request.GET.get("model", "")
    if model_id.isdigit():
        model = team.search_models.filter(pk=model_id).first()
        if model:
            initial = {"model": model.pk, "keywords": model.default_keywords}
    form = EvaluationForm(request.POST or None, request.FILES or None, team=team,
                          initial=initial)
    if request.method == "POST" and form.is_valid():
        parsed = _keywords_from_form(form)
        if parsed is not None:
            keywords, notice = parsed
            data = form.cleaned_data
            try:
                evaluation = services.evaluation_create(
                    team=team, created_by=request.user, model=data["model"], name=data["name"],
                    description=data["description"], scale=data["scale"],
                    strategy=data["strategy"], keywords=keywords, metrics=data["metrics"],
                    transformers=data["transformers"], tags=data["tags"],
                    guidelines=data["guidelines"], reuse_grades=data["reuse_grades"])
            except ValidationError as error:
                add_service_errors(form, error)
            else:
                if notice:
                    messages.info(request, notice)
                messages.success(request, f"Evaluation {evaluation.name} created with "
                                 f"{len(keywords)} keywords.")
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
                                                  "guidelines", "reuse_grades")}
            if not evaluation.has_started():
                changes.update({key: data[key] for key in ("model", "scale", "strategy",
                                                           "transformers")})
            if evaluation.status == Evaluation.Status.PENDING:
                changes["keywords"] = keywords
            try:
                services.evaluation_update(evaluation=evaluation, **changes)
            except ValidationError as error:
                add_service_errors(form, error)
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
        "can_lead": _can(request, evaluation.team_id, Role.LEAD),
    })


@require_GET
@login_required
def evaluation_progress(request: HttpRequest, evaluation_id: int) -> JsonResponse:
    """The fetch progress the detail page polls while fetching."""
    evaluation = selectors.evaluation_get_for_user(user=request.user, evaluation_id=evaluation_id)
    return JsonResponse(selectors.fetch_progress(evaluation=evaluation).as_dict())


ACTIONS = {
    "start": (services.evaluation_start, "Fetching started."),
    "pause": (services.evaluation_pause, "Paused; starting again fetches only what is left."),
    "finish": (services.evaluation_finish, "Evaluation finished."),
    "archive": (services.evaluation_archive, "Evaluation archived."),
    "retry-failed": (services.evaluation_retry_failed, "Fetching the failed keywords again."),
}


@require_POST
@login_required
def evaluation_action(request: HttpRequest, evaluation_id: int, action: str) -> HttpResponse:
    if action not in {*ACTIONS, "clone", "delete"}:
        raise Http404("No such action.")
    evaluation = selectors.evaluation_get_for_user(user=request.user, evaluation_id=evaluation_id,
                                                   minimum_role=Role.LEAD)
    try:
        if action == "clone":
            clone = services.evaluation_clone(evaluation=evaluation, created_by=request.user)
            messages.success(request, f"Cloned as {clone.name}.")
            return redirect("evaluations:evaluation_detail", evaluation_id=clone.pk)
        if action == "delete":
            services.evaluation_delete(evaluation=evaluation)
            messages.success(request, f"Evaluation {evaluation.name} deleted.")
            return redirect("evaluations:evaluation_list")
        service, message = ACTIONS[action]
        evaluation = service(evaluation=evaluation)
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
    return render(request, "evaluations/keyword_detail.html", {
        "keyword": keyword, "evaluation": keyword.evaluation,
        "snapshots": keyword.snapshots.order_by("position"),
    })


# --- the demo search engine ---------------------------------------------------------------


@require_GET
def demo_search(request: HttpRequest) -> JsonResponse:
    """GET /demo/search?q=…&size=10&category=…: public, like the engines teams point at."""
    size = request.GET.get("size", "10")
    if not size.isdigit():
        return JsonResponse({"error": "size must be a positive integer"}, status=400)
    return JsonResponse(demo.search(request.GET.get("q", ""), size=int(size),
                                    category=request.GET.get("category", "")),
                        json_dumps_params={"ensure_ascii": False})
