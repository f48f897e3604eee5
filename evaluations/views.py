"""Pages for endpoints, search models and evaluations, and the demo search engine."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from evaluations import demo, selectors, services
from evaluations.forms import (
    EndpointForm,
    EndpointTestForm,
    EvaluationForm,
    ModelTestForm,
    SearchModelForm,
    metric_catalog,
)
from evaluations.mapper import PRESETS, preset_mapper
from evaluations.models import Endpoint, Evaluation, Keyword
from searchtweak import access
from searchtweak.forms import add_service_errors
from searchtweak.models import Role, Team


def _team(request: HttpRequest, minimum_role: str = Role.GRADER) -> Team:
    return access.current_team_access(user=request.user, minimum_role=minimum_role).team


def _can(request: HttpRequest, team_id: int, role: str) -> bool:
    return access.current_team_can(user=request.user, team_id=team_id, minimum_role=role)


# --- endpoints ---------------------------------------------------------------------------


@require_GET
@login_required
def endpoint_list(request: HttpRequest) -> HttpResponse:
    team = _team(request)
    return render(request, "evaluations/endpoint_list.html", {
        "endpoints": selectors.endpoints_of_team(team_id=team.pk),
        "archived_endpoints": selectors.endpoints_of_team(team_id=team.pk, archived=True),
        "can_edit": _can(request, team.pk, Role.ADMIN),
    })


def _demo_url(request: HttpRequest) -> str:
    return request.build_absolute_uri(reverse("evaluations:demo_search"))


def _render_endpoint_form(request, form, test_form, endpoint=None, result=None,
                          status=200) -> HttpResponse:
    presets = {key: preset_mapper(key) for key in PRESETS}
    presets["demo"]["url"] = _demo_url(request)
    return render(request, "evaluations/endpoint_form.html", {
        "form": form, "test_form": test_form, "endpoint": endpoint, "presets": presets,
        "result": result,
    }, status=status)


def _endpoint_test(request: HttpRequest, form: EndpointForm, test_form: EndpointTestForm,
                   endpoint: Endpoint | None = None) -> HttpResponse:
    """The form's Test button: one query with the settings as typed; nothing is saved."""
    form.is_valid()
    form.errors.pop("name", None)  # a test needs no name
    test_form_valid = test_form.is_valid()
    result = None
    if not form.errors and test_form_valid:
        settings_typed = form.service_kwargs()
        settings_typed.pop("name")
        try:
            result = services.endpoint_test(endpoint=endpoint, **settings_typed,
                                            **test_form.cleaned_data)
        except ValidationError as error:
            test_errors = {field: messages for field, messages in error.message_dict.items()
                           if field in test_form.fields}
            add_service_errors(test_form, ValidationError(test_errors))
            add_service_errors(form, ValidationError({
                field: messages for field, messages in error.message_dict.items()
                if field not in test_errors}))
    status = 400 if form.errors or test_form.errors else 200
    return _render_endpoint_form(request, form, test_form, endpoint, result=result,
                                 status=status)


@require_http_methods(["GET", "POST"])
@login_required
def endpoint_create(request: HttpRequest) -> HttpResponse:
    team = _team(request, Role.ADMIN)
    form = EndpointForm(request.POST or None, demo_url=_demo_url(request))
    test_form = EndpointTestForm(request.POST or None, prefix="test")
    if request.method == "POST" and "test" in request.POST:
        return _endpoint_test(request, form, test_form)
    if request.method == "POST" and form.is_valid():
        try:
            endpoint = services.endpoint_create(team=team, created_by=request.user,
                                                **form.service_kwargs())
        except ValidationError as error:
            add_service_errors(form, error)
        else:
            messages.success(request, f"Endpoint {endpoint.name} created. Now create a search "
                             "model on it: how to query it.")
            return redirect(f"{reverse('evaluations:model_create')}?endpoint={endpoint.pk}")
    return _render_endpoint_form(request, form, test_form, status=400 if form.errors else 200)


@require_http_methods(["GET", "POST"])
@login_required
def endpoint_edit(request: HttpRequest, endpoint_id: int) -> HttpResponse:
    endpoint = selectors.endpoint_get_for_user(user=request.user, endpoint_id=endpoint_id,
                                               minimum_role=Role.ADMIN)
    try:
        secrets = services.endpoint_secret_headers(endpoint=endpoint)
    except Exception:
        secrets = {}
    form = EndpointForm(request.POST or None, initial=EndpointForm.initial_for(endpoint, secrets),
                        demo_url=_demo_url(request))
    test_form = EndpointTestForm(request.POST or None, prefix="test")
    if request.method == "POST" and "test" in request.POST:
        return _endpoint_test(request, form, test_form, endpoint)
    if request.method == "POST" and form.is_valid():
        try:
            services.endpoint_update(endpoint=endpoint, **form.service_kwargs())
        except ValidationError as error:
            add_service_errors(form, error)
        else:
            messages.success(request, f"Endpoint {endpoint.name} saved.")
            return redirect("evaluations:endpoint_list")
    return _render_endpoint_form(request, form, test_form, endpoint,
                                 status=400 if form.errors else 200)


def _confirm(request: HttpRequest, *, title: str, dependents: str, consequence: str,
             button: str, cancel_url: str, danger: bool = False) -> HttpResponse:
    """The page a destructive action's GET shows; its form POSTs to the same address.
    No button when there is nothing to do (button="")."""
    return render(request, "evaluations/confirm.html", {
        "title": title, "dependents": dependents, "consequence": consequence,
        "button": button, "danger": danger, "cancel_url": cancel_url,
    })


def _delete_confirm(request: HttpRequest, *, noun: str, name: str,
                    dependents: selectors.Dependents, used: bool, users: str, archived: bool,
                    nobody: str, archive_effect: str, cancel_url: str) -> HttpResponse:
    """The confirm page of the delete-or-archive rule shared by endpoints and models: an
    unused one is deleted, a used one archived, an archived used one cannot go further."""
    if not used:
        consequence, button = "It will be deleted for good.", f"Delete {noun}"
    elif not archived:
        consequence, button = (f"So it will be archived, not deleted: {archive_effect}",
                               f"Archive {noun}")
    else:
        consequence, button = (f"It is archived already, and cannot be deleted while "
                               f"{users} use it."), ""
    return _confirm(
        request, title=f"Delete {noun} {name}?",
        dependents=f"{dependents.summary()} {dependents.uses()} this {noun}." if used
        else f"{nobody} uses this {noun}.",
        consequence=consequence, button=button, danger=not used, cancel_url=cancel_url)


@require_http_methods(["GET", "POST"])
@login_required
def endpoint_delete(request: HttpRequest, endpoint_id: int) -> HttpResponse:
    """GET asks (naming what uses it); POST deletes an unused endpoint, archives a used one."""
    endpoint = selectors.endpoint_get_for_user(user=request.user, endpoint_id=endpoint_id,
                                               minimum_role=Role.ADMIN)
    if request.method == "GET":
        dependents = selectors.endpoint_dependents(endpoint=endpoint)
        return _delete_confirm(
            request, noun="endpoint", name=endpoint.name, dependents=dependents,
            used=dependents.counts["search model"] > 0, users="search models",
            archived=endpoint.archived_at is not None, nobody="Nothing",
            archive_effect="it leaves the endpoint list and the search model form, and "
                           "their evaluations cannot start until you restore it. Nothing "
                           "is lost.",
            cancel_url=reverse("evaluations:endpoint_list"))
    if services.endpoint_delete(endpoint=endpoint):
        messages.success(request, f"Endpoint {endpoint.name} deleted.")
    else:
        messages.success(request, f"Endpoint {endpoint.name} is used by search models, so it "
                         "was archived instead of deleted. Restore it from the list.")
    return redirect("evaluations:endpoint_list")


@require_POST
@login_required
def endpoint_restore(request: HttpRequest, endpoint_id: int) -> HttpResponse:
    endpoint = selectors.endpoint_get_for_user(user=request.user, endpoint_id=endpoint_id,
                                               minimum_role=Role.ADMIN)
    try:
        services.endpoint_restore(endpoint=endpoint)
    except ValidationError as error:
        messages.error(request, f"Endpoint {endpoint.name} was not restored: "
                       f"{' '.join(error.messages)}")
    else:
        messages.success(request, f"Endpoint {endpoint.name} restored.")
    return redirect("evaluations:endpoint_list")


# --- search models -----------------------------------------------------------------------


@require_GET
@login_required
def model_list(request: HttpRequest) -> HttpResponse:
    team = _team(request)
    return render(request, "evaluations/model_list.html", {
        "models": selectors.search_models_of_team(team_id=team.pk),
        "archived_models": selectors.search_models_of_team(team_id=team.pk, archived=True),
        "can_edit": _can(request, team.pk, Role.ADMIN),
        "can_test": _can(request, team.pk, Role.LEAD),
    })


@require_http_methods(["GET", "POST"])
@login_required
def model_create(request: HttpRequest) -> HttpResponse:
    team = _team(request, Role.ADMIN)
    form = SearchModelForm(request.POST or None, team=team,
                           initial={"params": "q=#query#"})
    if request.method == "GET":
        form.initial["endpoint"] = _preselected_endpoint(form, request.GET.get("endpoint", ""))
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


def _preselected_endpoint(form: SearchModelForm, wanted: str) -> int | None:
    """?endpoint=<id> (the one just created) when it is the team's and active, else the
    team's only active endpoint, else none."""
    endpoint_ids = list(form.fields["endpoint"].queryset.values_list("pk", flat=True)[:2])
    if wanted.isdigit() and form.fields["endpoint"].queryset.filter(pk=int(wanted)).exists():
        return int(wanted)
    return endpoint_ids[0] if len(endpoint_ids) == 1 else None


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


@require_http_methods(["GET", "POST"])
@login_required
def model_delete(request: HttpRequest, model_id: int) -> HttpResponse:
    """GET asks (naming what uses it); POST deletes an unused model, archives a used one."""
    model = selectors.search_model_get_for_user(user=request.user, model_id=model_id,
                                                minimum_role=Role.ADMIN)
    if request.method == "GET":
        dependents = selectors.search_model_dependents(model=model)
        return _delete_confirm(
            request, noun="search model", name=model.name, dependents=dependents,
            used=bool(dependents), users="evaluations",
            archived=model.archived_at is not None, nobody="No evaluation",
            archive_effect="it leaves the model list and the evaluation form, and its "
                           "evaluations cannot start until you restore it. Their results "
                           "and grades are kept.",
            cancel_url=reverse("evaluations:model_list"))
    if services.search_model_delete(model=model):
        messages.success(request, f"Search model {model.name} deleted.")
    else:
        messages.success(request, f"Search model {model.name} is used by evaluations, so it "
                         "was archived instead of deleted. Restore it from the list.")
    return redirect("evaluations:model_list")


@require_POST
@login_required
def model_restore(request: HttpRequest, model_id: int) -> HttpResponse:
    model = selectors.search_model_get_for_user(user=request.user, model_id=model_id,
                                                minimum_role=Role.ADMIN)
    try:
        services.search_model_restore(model=model)
    except ValidationError as error:
        messages.error(request, f"Search model {model.name} was not restored: "
                       f"{' '.join(error.messages)}")
    else:
        messages.success(request, f"Search model {model.name} restored.")
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


ARCHIVED_SHOWN = 100


@require_GET
@login_required
def evaluation_list(request: HttpRequest) -> HttpResponse:
    team = _team(request)
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
        "can_create": _can(request, team.pk, Role.LEAD),
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
                    guidelines=data["guidelines"], reuse_grades=data["reuse_grades"],
                    show_position=data["show_position"], auto_finish=data["auto_finish"])
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
                                                  "guidelines", "reuse_grades",
                                                  "show_position", "auto_finish")}
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
        return _confirm(
            request, title=f"Archive evaluation {evaluation.name}?",
            dependents=f"It has {dependents.summary()}." if dependents else "It is empty.",
            consequence=consequence, button=button,
            cancel_url=reverse("evaluations:evaluation_detail", args=[evaluation.pk]))
    try:
        services.evaluation_archive(evaluation=evaluation)
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
        return redirect("evaluations:evaluation_detail", evaluation_id=evaluation.pk)
    messages.success(request, f"Evaluation {evaluation.name} archived. Show archived "
                     "evaluations in the list to restore it.")
    return redirect("evaluations:evaluation_list")


@require_POST
@login_required
def evaluation_restore(request: HttpRequest, evaluation_id: int) -> HttpResponse:
    evaluation = selectors.evaluation_get_for_user(user=request.user, evaluation_id=evaluation_id,
                                                   minimum_role=Role.LEAD)
    services.evaluation_restore(evaluation=evaluation)
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
        return _confirm(
            request, title=f"Delete evaluation {evaluation.name}?",
            dependents=f"It has {dependents.summary()}." if dependents else "It is empty.",
            consequence="Pause it before deleting it: it is fetching." if fetching else
            "Deleting removes them and every grade given to them, for good. Archiving "
            "instead hides it and keeps everything.",
            button="" if fetching else "Delete evaluation", danger=True,
            cancel_url=reverse("evaluations:evaluation_detail", args=[evaluation.pk]))
    try:
        services.evaluation_delete(evaluation=evaluation)
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
        return redirect("evaluations:evaluation_detail", evaluation_id=evaluation.pk)
    messages.success(request, f"Evaluation {evaluation.name} deleted.")
    return redirect("evaluations:evaluation_list")


ACTIONS = {
    "start": (services.evaluation_start, "Fetching started."),
    "pause": (services.evaluation_pause, "Paused; starting again fetches only what is left."),
    "finish": (services.evaluation_finish, "Evaluation finished."),
    "retry-failed": (services.evaluation_retry_failed, "Fetching the failed keywords again."),
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
            clone = services.evaluation_clone(evaluation=evaluation, created_by=request.user)
            messages.success(request, f"Cloned as {clone.name}.")
            return redirect("evaluations:evaluation_detail", evaluation_id=clone.pk)
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
