"""A team's behaviour sources in the browser: every member reads the list (what each
holds, over which days); a lead imports a log file (a CSV of counts, or a UBI log's
queries and events) or opens a collector source for a search front end to post to.

The files go through the same services as `manage.py import_behaviour` (behaviour.
services): every line is checked before anything is stored, and a bad line is named with
its number on the form. The page imports while the request waits, so a file over
BEHAVIOUR_UPLOAD_MAX_BYTES is refused before it is read; the command imports logs of any
size from disk (docs/decisions/0032-behaviour-logs-uploaded-on-a-page.md)."""

from django import forms
from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.core.files.uploadedfile import UploadedFile
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET, require_POST

from behaviour import services
from behaviour.api import WRITE_ROLE
from behaviour.models import BehaviourSource
from searchtweak.models import Role
from searchtweak.uploads import size_text, upload_too_large
from searchtweak.views_shared import current_team, current_team_can, form_saved_response

NEXT = "behaviour:source_list"


class ImportForm(forms.Form):
    name = forms.CharField(max_length=200, label="Name",
                           help_text="How the dashboards' source picker names it.")
    kind = forms.ChoiceField(
        choices=[("csv", "CSV of counts"), ("ubi", "UBI log (queries and events)")],
        initial="csv", widget=forms.RadioSelect, label="Kind")
    file = forms.FileField(
        required=False, label="CSV file",
        help_text="keyword,doc_id,position,impressions,clicks[,dwell_seconds], a header "
                  "line first.")
    queries = forms.FileField(required=False, label="UBI queries (NDJSON)",
                              help_text="One search a line: query_id, user_query, "
                                        "timestamp, the hit ids shown.")
    events = forms.FileField(required=False, label="UBI events (NDJSON)",
                             help_text="One event a line: action_name, query_id, the "
                                       "object id, its position, timestamp.")

    def clean(self) -> dict:
        data = super().clean()
        wanted = ("file",) if data.get("kind") == "csv" else ("queries", "events")
        for name in wanted:
            upload: UploadedFile | None = data.get(name)
            if upload is None:
                self.add_error(name, "Choose the file.")
            elif problem := upload_too_large(
                    filename=upload.name, size=upload.size,
                    setting="BEHAVIOUR_UPLOAD_MAX_BYTES", what="a page upload",
                    hint="import larger logs with manage.py import_behaviour"):
                self.add_error(name, problem)
        return data


class CollectorForm(forms.Form):
    # Beside the import form on one page: its fields are prefixed ("collector-name").
    prefix = "collector"
    name = forms.CharField(max_length=200, label="Name")


def _page(request: HttpRequest, *, import_form: ImportForm | None = None,
          collector_form: CollectorForm | None = None) -> HttpResponse:
    team = current_team(request, Role.VIEWER)
    failed = bool((import_form and import_form.errors)
                  or (collector_form and collector_form.errors))
    return render(request, "behaviour/source_list.html", {
        "sources": BehaviourSource.objects.filter(team=team).select_related("created_by"),
        "can_write": current_team_can(request, team.pk, WRITE_ROLE),
        "import_form": import_form or ImportForm(),
        "collector_form": collector_form or CollectorForm(),
        "upload_limit": size_text(settings.BEHAVIOUR_UPLOAD_MAX_BYTES),
    }, status=400 if failed else 200)


@require_GET
@login_required
def source_list(request: HttpRequest) -> HttpResponse:
    return _page(request)


def _import(form: ImportForm, team, user) -> BehaviourSource:
    data = form.cleaned_data
    if data["kind"] == "csv":
        return services.behaviour_source_import_csv(team=team, user=user, name=data["name"],
                                                    lines=data["file"])
    return services.behaviour_source_import_ubi(team=team, user=user, name=data["name"],
                                                queries=data["queries"], events=data["events"])


@require_POST
@login_required
def source_import(request: HttpRequest) -> HttpResponse:
    team = current_team(request, WRITE_ROLE)
    form = ImportForm(request.POST, request.FILES)
    saved = form_saved_response(
        request, form, lambda: _import(form, team, request.user),
        success=lambda source: (f"Behaviour source {source.name} imported: "
                                f"{source.event_count:,} lines read."),
        next_url=NEXT)
    return saved or _page(request, import_form=form)


@require_POST
@login_required
def collector_create(request: HttpRequest) -> HttpResponse:
    team = current_team(request, WRITE_ROLE)
    form = CollectorForm(request.POST)
    saved = form_saved_response(
        request, form, lambda: services.behaviour_source_create_collector(
            team=team, user=request.user, name=form.cleaned_data["name"]),
        success=lambda source: (f"Collector source {source.name} opened: post batches of "
                                "UBI queries and events to its address below."),
        next_url=NEXT)
    return saved or _page(request, collector_form=form)
