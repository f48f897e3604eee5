"""Pages for endpoints and search models: lists, forms with their test query, delete (or
archive when used) and restore."""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from evaluations import selectors
from evaluations.endpoints import services
from evaluations.endpoints.forms import (
    EndpointForm,
    EndpointTestForm,
    ModelTestForm,
    SearchModelForm,
)
from evaluations.endpoints.mapper import PRESETS, preset_mapper
from evaluations.models import Endpoint
from evaluations.services import keywords as keyword_services
from searchtweak.forms import add_service_errors
from searchtweak.models import Role, Team
from searchtweak.outbound_limits import TestsBusy
from searchtweak.views_shared import (
    DeleteWording,
    current_team,
    current_team_can,
    delete_confirm_page,
    delete_or_keep_response,
    form_saved_response,
    service_step_response,
)

# --- endpoints ---------------------------------------------------------------------------


@require_GET
@login_required
def endpoint_list(request: HttpRequest) -> HttpResponse:
    team = current_team(request)
    return render(request, "evaluations/endpoint_list.html", {
        "endpoints": selectors.endpoints_of_team(team_id=team.pk),
        "archived_endpoints": selectors.endpoints_of_team(team_id=team.pk, archived=True),
        "can_edit": current_team_can(request, team.pk, Role.ADMIN),
    })


def _demo_url(request: HttpRequest) -> str:
    return request.build_absolute_uri(reverse("evaluations:demo_search"))


def _render_endpoint_form(request, form, test_form, endpoint=None, result=None,
                          status=200) -> HttpResponse:
    presets = {key: preset_mapper(key) for key in PRESETS}
    presets["demo"]["url"] = _demo_url(request)
    return render(request, "evaluations/endpoint_form.html", {
        "form": form, "test_form": test_form, "endpoint": endpoint, "presets": presets,
        "result": result, "show_raw": selectors.raw_preview_visible(
            user=request.user, team_id=endpoint.team_id if endpoint else current_team(
                request, Role.ADMIN).pk),
    }, status=status)


def _endpoint_test(request: HttpRequest, form: EndpointForm, test_form: EndpointTestForm,
                   team: Team, endpoint: Endpoint | None = None) -> HttpResponse:
    """The form's Test button: one query with the settings as typed; nothing is saved."""
    form.is_valid()
    form.errors.pop("name", None)  # a test needs no name
    test_form_valid = test_form.is_valid()
    result = None
    if not form.errors and test_form_valid:
        settings_typed = form.service_kwargs()
        settings_typed.pop("name")
        try:
            result = services.endpoint_test(team=team, endpoint=endpoint, **settings_typed,
                                            **test_form.cleaned_data)
        except TestsBusy as error:
            test_form.add_error(None, error.reason)
            return _render_endpoint_form(request, form, test_form, endpoint, status=429)
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
    team = current_team(request, Role.ADMIN)
    form = EndpointForm(request.POST or None, demo_url=_demo_url(request))
    test_form = EndpointTestForm(request.POST or None, prefix="test")
    if request.method == "POST" and "test" in request.POST:
        return _endpoint_test(request, form, test_form, team)
    saved = form_saved_response(
        request, form, lambda: services.endpoint_create(team=team, created_by=request.user,
                                                        **form.service_kwargs()),
        success=lambda endpoint: f"Endpoint {endpoint.name} created. Now create a search "
                                 "model on it: how to query it.",
        next_url=lambda endpoint: f"{reverse('evaluations:model_create')}?endpoint="
                                  f"{endpoint.pk}")
    return saved or _render_endpoint_form(request, form, test_form,
                                          status=400 if form.errors else 200)


@require_http_methods(["GET", "POST"])
@login_required
def endpoint_edit(request: HttpRequest, endpoint_id: int) -> HttpResponse:
    # The page shows the configuration: the same role as the API's detail.
    endpoint = selectors.endpoint_get_for_user(user=request.user, endpoint_id=endpoint_id,
                                               minimum_role=selectors.CONFIGURATION_ROLE)
    try:
        secrets = services.endpoint_secret_headers(endpoint=endpoint)
    except Exception:
        secrets = {}
    form = EndpointForm(request.POST or None, initial=EndpointForm.initial_for(endpoint, secrets),
                        demo_url=_demo_url(request))
    test_form = EndpointTestForm(request.POST or None, prefix="test")
    if request.method == "POST" and "test" in request.POST:
        return _endpoint_test(request, form, test_form, endpoint.team, endpoint)
    saved = form_saved_response(
        request, form, lambda: services.endpoint_update(endpoint=endpoint,
                                                        **form.service_kwargs()),
        success=lambda _: f"Endpoint {endpoint.name} saved.",
        next_url="evaluations:endpoint_list")
    return saved or _render_endpoint_form(request, form, test_form, endpoint,
                                          status=400 if form.errors else 200)


# --- search models -----------------------------------------------------------------------


@require_GET
@login_required
def model_list(request: HttpRequest) -> HttpResponse:
    team = current_team(request)
    return render(request, "evaluations/model_list.html", {
        "models": selectors.search_models_of_team(team_id=team.pk),
        "archived_models": selectors.search_models_of_team(team_id=team.pk, archived=True),
        "can_edit": current_team_can(request, team.pk, Role.ADMIN),
        "can_test": current_team_can(request, team.pk, Role.LEAD),
    })


@require_http_methods(["GET", "POST"])
@login_required
def model_create(request: HttpRequest) -> HttpResponse:
    team = current_team(request, Role.ADMIN)
    form = SearchModelForm(request.POST or None, team=team,
                           initial={"params": "q=#query#"})
    if request.method == "GET":
        form.initial["endpoint"] = _preselected_endpoint(form, request.GET.get("endpoint", ""))
    saved = form_saved_response(
        request, form, lambda: services.search_model_create(team=team, created_by=request.user,
                                                            **form.service_kwargs()),
        success=lambda model: f"Search model {model.name} created. Try a query.",
        next_url=lambda model: reverse("evaluations:model_test", args=[model.pk]))
    return saved or render(request, "evaluations/model_form.html", {"form": form},
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
    # The page shows the configuration: the same role as the API's detail.
    model = selectors.search_model_get_for_user(user=request.user, model_id=model_id,
                                                minimum_role=selectors.CONFIGURATION_ROLE)
    if model.is_offline:
        # Nothing of a request to edit: its page is its run file's.
        return redirect("evaluations:offline_run", model.pk)
    initial = SearchModelForm.initial_for(model, services.search_model_headers_shown(model=model))
    form = SearchModelForm(request.POST or None, team=model.team, initial=initial)
    saved = form_saved_response(
        request, form, lambda: services.search_model_update(model=model,
                                                            **form.service_kwargs()),
        success=lambda _: f"Search model {model.name} saved.",
        next_url="evaluations:model_list")
    return saved or render(request, "evaluations/model_form.html",
                           {"form": form, "model": model}, status=400 if form.errors else 200)


@require_http_methods(["GET", "POST"])
@login_required
def model_test(request: HttpRequest, model_id: int) -> HttpResponse:
    model = selectors.search_model_get_for_user(user=request.user, model_id=model_id,
                                                minimum_role=Role.LEAD)
    first_keyword = next(iter(keyword_services.keywords_clean(
        model.default_keywords.splitlines()).keywords), "")
    form = ModelTestForm(request.POST or None, initial={"query": first_keyword})
    result = None
    status = 200
    if request.method == "POST" and form.is_valid():
        try:
            result = services.search_model_test(model=model, query=form.cleaned_data["query"])
        except TestsBusy as error:
            form.add_error(None, error.reason)
            status = 429
        except ValidationError as error:
            add_service_errors(form, error)
    return render(request, "evaluations/model_test.html", {
        "model": model, "form": form, "result": result,
        "show_raw": selectors.raw_preview_visible(user=request.user, team_id=model.team_id),
    }, status=400 if form.errors and status == 200 else status)


# --- deleting (archiving when used) and restoring: one pair of pages per resource kind ---


@dataclass(frozen=True)
class _Archivable:
    """What the delete and restore pages need of endpoints or of search models, which share
    one rule: an unused one is deleted, a used one archived instead (the service decides),
    an archived one restored; all of it for admins of the team."""

    noun: str  # "endpoint", "search model"
    load: Callable[[HttpRequest, int], Any]  # the access function at the admin role
    dependents: Callable[[Any], selectors.Dependents]
    used: Callable[[selectors.Dependents], bool]
    delete: Callable[[Any], bool]
    restore: Callable[[Any], object]
    users: str  # what uses one, plural
    nobody: str  # what the confirm page says uses an unused one
    archive_effect: str
    list_url: str  # URL name of the list to come back to

    @property
    def label(self) -> str:
        return self.noun.capitalize()


def _delete_view(kind: _Archivable) -> Callable[..., HttpResponse]:
    @require_http_methods(["GET", "POST"])
    @login_required
    def delete(request: HttpRequest, **url_ids: int) -> HttpResponse:
        (pk,) = url_ids.values()
        row = kind.load(request, pk)
        if request.method == "GET":
            dependents = kind.dependents(row)
            used = kind.used(dependents)
            return delete_confirm_page(
                request, title=f"Delete {kind.noun} {row.name}?",
                dependents=f"{dependents.summary()} {dependents.uses()} this {kind.noun}."
                if used else f"{kind.nobody} uses this {kind.noun}.",
                used=used, kept=row.archived_at is not None,
                cancel_url=reverse(kind.list_url), wording=DeleteWording(
                    delete=("It will be deleted for good.", f"Delete {kind.noun}"),
                    keep=(f"So it will be archived, not deleted: {kind.archive_effect}",
                          f"Archive {kind.noun}"),
                    kept_already=f"It is archived already, and cannot be deleted while "
                                 f"{kind.users} use it."))
        return delete_or_keep_response(
            request, lambda: kind.delete(row), deleted=f"{kind.label} {row.name} deleted.",
            kept=f"{kind.label} {row.name} is used by {kind.users}, so it was archived "
                 "instead of deleted. Restore it from the list.",
            next_url=kind.list_url)

    delete.__doc__ = (f"GET asks (naming what uses it); POST deletes an unused {kind.noun}, "
                      "archives a used one.")
    return delete


def _restore_view(kind: _Archivable) -> Callable[..., HttpResponse]:
    @require_POST
    @login_required
    def restore(request: HttpRequest, **url_ids: int) -> HttpResponse:
        (pk,) = url_ids.values()
        row = kind.load(request, pk)
        return service_step_response(
            request, lambda: kind.restore(row), done=f"{kind.label} {row.name} restored.",
            next_url=kind.list_url, refused_prefix=f"{kind.label} {row.name} was not restored: ")

    return restore


ENDPOINTS = _Archivable(
    noun="endpoint",
    load=lambda request, endpoint_id: selectors.endpoint_get_for_user(
        user=request.user, endpoint_id=endpoint_id, minimum_role=Role.ADMIN),
    dependents=lambda endpoint: selectors.endpoint_dependents(endpoint=endpoint),
    used=lambda dependents: dependents.counts["search model"] > 0,
    delete=lambda endpoint: services.endpoint_delete(endpoint=endpoint),
    restore=lambda endpoint: services.endpoint_restore(endpoint=endpoint),
    users="search models", nobody="Nothing",
    archive_effect="it leaves the endpoint list and the search model form, and their "
                   "evaluations cannot start until you restore it. Nothing is lost.",
    list_url="evaluations:endpoint_list")

SEARCH_MODELS = _Archivable(
    noun="search model",
    load=lambda request, model_id: selectors.search_model_get_for_user(
        user=request.user, model_id=model_id, minimum_role=Role.ADMIN),
    dependents=lambda model: selectors.search_model_dependents(model=model),
    used=bool,
    delete=lambda model: services.search_model_delete(model=model),
    restore=lambda model: services.search_model_restore(model=model),
    users="evaluations", nobody="No evaluation",
    archive_effect="it leaves the model list and the evaluation form, and its evaluations "
                   "cannot start until you restore it. Their results and grades are kept.",
    list_url="evaluations:model_list")

endpoint_delete = _delete_view(ENDPOINTS)
endpoint_restore = _restore_view(ENDPOINTS)
model_delete = _delete_view(SEARCH_MODELS)
model_restore = _restore_view(SEARCH_MODELS)
