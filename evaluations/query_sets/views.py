"""Pages for query sets: list, detail with versions, create (typed or uploaded),
edit (a changed list is a new version), save an evaluation's keywords as one, archive and
restore. Every member reads; leads and above write (query_sets.selectors.WRITE_ROLE)."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from behaviour.panels import online_panel
from evaluations import selectors
from evaluations.models import KeywordSet
from evaluations.query_sets import selectors as query_set_selectors
from evaluations.query_sets import services
from evaluations.query_sets.file_formats import query_set_file_read
from evaluations.query_sets.forms import QuerySetForm, SaveAsQuerySetForm
from evaluations.query_sets.selectors import WRITE_ROLE
from evaluations.services.keyword_input import keywords_as_text, keywords_from_text
from evaluations.services.keywords import KeywordEntry, keywords_clean
from searchtweak.forms import add_service_errors
from searchtweak.views_shared import (
    confirm_page,
    current_team,
    current_team_can,
    form_saved_response,
    service_step_response,
)

KEYWORDS_PER_PAGE = 100


def _detail_url(query_set: KeywordSet) -> str:
    return reverse("evaluations:query_set_detail", args=[query_set.pk])


@require_GET
@login_required
def query_set_list(request: HttpRequest) -> HttpResponse:
    team = current_team(request)
    return render(request, "evaluations/query_set_list.html", {
        "query_sets": query_set_selectors.query_sets_of_team(team_id=team.pk),
        "archived_query_sets": query_set_selectors.query_sets_of_team(team_id=team.pk,
                                                                      archived=True),
        "can_edit": current_team_can(request, team.pk, WRITE_ROLE),
    })


def _form_keywords(form: QuerySetForm) -> tuple[list[KeywordEntry], str] | None:
    """The typed and uploaded keywords (the file recognised: file_formats) and what the
    file was read as, or None with the errors on the form."""
    errors: dict[str, list[str]] = {}
    entries: list[KeywordEntry] = []
    read = None
    # Typed lines first: their line numbers are the textarea's, the file's its own.
    try:
        entries += keywords_from_text(form.cleaned_data["keywords"])
    except ValidationError as error:
        errors.update(error.message_dict)
    upload = form.cleaned_data.get("keywords_file")
    if upload:
        try:
            read = query_set_file_read(filename=upload.name, content=upload.read(),
                                       kind=form.cleaned_data.get("keywords_format") or "auto")
            entries += read.entries
        except ValidationError as error:
            errors.update(error.message_dict)
    try:
        if errors:
            raise ValidationError(errors)
        cleaned = keywords_clean(entries)
    except ValidationError as error:
        add_service_errors(form, error)
        return None
    return cleaned.entries, read.summary() if read else ""


def _render_form(request: HttpRequest, form: QuerySetForm, query_set: KeywordSet | None = None
                 ) -> HttpResponse:
    return render(request, "evaluations/query_set_form.html",
                  {"form": form, "query_set": query_set},
                  status=400 if form.errors else 200)


@require_http_methods(["GET", "POST"])
@login_required
def query_set_create(request: HttpRequest) -> HttpResponse:
    team = current_team(request, WRITE_ROLE)
    form = QuerySetForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        parsed = _form_keywords(form)
        if parsed is not None:
            keywords, read = parsed
            data = form.cleaned_data
            try:
                query_set = services.query_set_create(
                    team=team, created_by=request.user, name=data["name"],
                    description=data["description"], keywords=keywords, **form.traffic())
            except ValidationError as error:
                add_service_errors(form, error)
            else:
                messages.success(request, f"Query set {query_set.name} created with "
                                 f"{len(keywords)} keywords. {read}".strip())
                return redirect(_detail_url(query_set))
    return _render_form(request, form)


@require_GET
@login_required
def query_set_detail(request: HttpRequest, query_set_id: int) -> HttpResponse:
    query_set = query_set_selectors.query_set_get_for_user(user=request.user,
                                                           query_set_id=query_set_id)
    versions = query_set_selectors.versions_of(query_set)
    current = versions[0] if versions else None
    keywords = Paginator(query_set_selectors.version_keywords(current) if current else [],
                         KEYWORDS_PER_PAGE)
    return render(request, "evaluations/query_set_detail.html", {
        "query_set": query_set, "versions": versions, "current": current,
        "diff": query_set_selectors.version_diff(current) if current else None,
        "keywords": keywords.get_page(request.GET.get("page")),
        "can_edit": current_team_can(request, query_set.team_id, WRITE_ROLE),
        # What users did with the current version's keywords (behaviour.panels).
        "online": online_panel(query=request.GET, team_id=query_set.team_id,
                               keyword_texts=current.keywords.values("normalized_text"))
        if current else None,
    })


@require_http_methods(["GET", "POST"])
@login_required
def query_set_edit(request: HttpRequest, query_set_id: int) -> HttpResponse:
    query_set = query_set_selectors.query_set_get_for_user(
        user=request.user, query_set_id=query_set_id, minimum_role=WRITE_ROLE)
    current = query_set.current_version()
    initial = {"name": query_set.name, "description": query_set.description,
               "keywords": keywords_as_text(services.keywords_as_typed(query_set, current))
               if current else "",
               "traffic_segments": query_set.traffic_segments,
               "traffic_head_cut": query_set.traffic_head_cut,
               "traffic_torso_cut": query_set.traffic_torso_cut}
    form = QuerySetForm(request.POST or None, request.FILES or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        parsed = _form_keywords(form)
        if parsed is not None:
            keywords, read = parsed
            data = form.cleaned_data
            try:
                query_set, version, created = services.query_set_edit(
                    query_set=query_set, created_by=request.user, name=data["name"],
                    description=data["description"], keywords=keywords, **form.traffic())
            except ValidationError as error:
                add_service_errors(form, error)
            else:
                messages.success(request, (
                    f"Saved as version {version.number} ({version.keyword_count} keywords)."
                    if created else f"The keywords are unchanged: still version "
                                    f"{version.number}.") + (f" {read}" if read else ""))
                return redirect(_detail_url(query_set))
    return _render_form(request, form, query_set)


@require_http_methods(["GET", "POST"])
@login_required
def query_set_from_evaluation(request: HttpRequest, evaluation_id: int) -> HttpResponse:
    """An evaluation's keywords saved as a new query set of its team."""
    evaluation = selectors.evaluation_get_for_user(user=request.user, evaluation_id=evaluation_id,
                                                   minimum_role=WRITE_ROLE)
    form = SaveAsQuerySetForm(request.POST or None, initial={"name": evaluation.name})
    response = form_saved_response(
        request, form, lambda: services.query_set_create_from_evaluation(
            evaluation=evaluation, created_by=request.user, **form.cleaned_data),
        success=lambda query_set: f"Query set {query_set.name} created from the "
                                  f"evaluation's keywords.",
        next_url=_detail_url)
    return response or render(request, "evaluations/query_set_from_evaluation.html", {
        "form": form, "evaluation": evaluation}, status=400 if form.errors else 200)


@require_http_methods(["GET", "POST"])
@login_required
def query_set_archive(request: HttpRequest, query_set_id: int) -> HttpResponse:
    """GET asks; POST archives (restore brings it back)."""
    query_set = query_set_selectors.query_set_get_for_user(
        user=request.user, query_set_id=query_set_id, minimum_role=WRITE_ROLE)
    if request.method == "GET":
        archived = query_set.archived_at is not None
        return confirm_page(
            request, title=f"Archive query set {query_set.name}?",
            dependents=f"It has {query_set.versions.count()} version(s).",
            consequence="It is archived already." if archived else
            "Archiving hides it from the list and the evaluation form and frees its name. "
            "Its versions are kept (evaluations that ran them still name them), and you can "
            "restore it.",
            button="" if archived else "Archive query set", cancel_url=_detail_url(query_set))
    return service_step_response(
        request, lambda: services.query_set_archive(query_set=query_set),
        done=f"Query set {query_set.name} archived.", next_url="evaluations:query_set_list",
        refused_url=_detail_url(query_set))


@require_POST
@login_required
def query_set_restore(request: HttpRequest, query_set_id: int) -> HttpResponse:
    query_set = query_set_selectors.query_set_get_for_user(
        user=request.user, query_set_id=query_set_id, minimum_role=WRITE_ROLE)
    return service_step_response(
        request, lambda: services.query_set_restore(query_set=query_set),
        done=f"Query set {query_set.name} restored.", next_url=_detail_url(query_set),
        refused_prefix="Not restored: ")
