"""Pages for offline models: create one with its run file, and replace its run."""

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_http_methods

from evaluations import selectors
from evaluations.models import OfflineRun
from evaluations.offline_runs import services
from evaluations.offline_runs.api import RUN_ROLE
from evaluations.offline_runs.forms import OfflineRunForm
from searchtweak.views_shared import current_team, form_saved_response


@require_http_methods(["GET", "POST"])
@login_required
def offline_model_create(request: HttpRequest) -> HttpResponse:
    team = current_team(request, RUN_ROLE)
    form = OfflineRunForm(request.POST or None, request.FILES or None)

    def save():
        data = form.cleaned_data
        return services.offline_model_create_with_run(
            team=team, created_by=request.user, name=data["name"],
            description=data["description"], run_format=data["format"], lines=data["file"],
            filename=data["file"].name or "", topic_lines=data["topics"])

    saved = form_saved_response(
        request, form, save,
        success=lambda model: (f"Offline model {model.name} created with "
                               f"{model.offline_run.keyword_count} ranked keywords."),
        next_url="evaluations:model_list")
    return saved or render(request, "evaluations/offline_run_form.html", {"form": form},
                           status=400 if form.errors else 200)


@require_http_methods(["GET", "POST"])
@login_required
def offline_run_replace(request: HttpRequest, model_id: int) -> HttpResponse:
    model = selectors.search_model_get_for_user(user=request.user, model_id=model_id,
                                                minimum_role=RUN_ROLE)
    form = OfflineRunForm(request.POST or None, request.FILES or None, with_name=False)

    def save() -> OfflineRun:
        data = form.cleaned_data
        return services.offline_run_upload(
            model=model, uploaded_by=request.user, run_format=data["format"],
            lines=data["file"], filename=data["file"].name or "",
            topic_lines=data["topics"])

    saved = form_saved_response(
        request, form, save,
        success=lambda run: f"Run of {model.name} replaced: {run.keyword_count} keywords.",
        next_url="evaluations:model_list")
    current = OfflineRun.objects.filter(model=model).first()
    return saved or render(request, "evaluations/offline_run_form.html",
                           {"form": form, "model": model, "run": current},
                           status=400 if form.errors else 200)
