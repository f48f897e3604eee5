"""Pages for schedules ("watches"): list, detail with the runs and their
verdicts, create, edit, pause, resume and delete. Every member reads; leads and above
write (selectors.WRITE_ROLE)."""

from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from schedules import selectors as schedule_selectors
from schedules import services
from schedules.forms import ScheduleForm, SchedulePauseForm
from schedules.models import Schedule
from schedules.run_judges import counting_judges
from schedules.selectors import WRITE_ROLE
from searchtweak.models import Team
from searchtweak.views_shared import (
    confirm_page,
    current_team,
    current_team_can,
    form_saved_response,
    service_step_response,
)

RUNS_PER_PAGE = 50
SCHEDULES_PER_PAGE = 50


def _detail_url(schedule: Schedule) -> str:
    return reverse("schedules:schedule_detail", args=[schedule.pk])


def _int_param(request: HttpRequest, name: str) -> int | None:
    value = request.GET.get(name, "")
    return int(value) if value.isdigit() else None


@require_GET
@login_required
def schedule_list(request: HttpRequest) -> HttpResponse:
    team = current_team(request)
    return render(request, "schedules/schedule_list.html", {
        "schedules": Paginator(schedule_selectors.schedules_of_team(team_id=team.pk),
                               SCHEDULES_PER_PAGE).get_page(request.GET.get("page")),
        "can_edit": current_team_can(request, team.pk, WRITE_ROLE),
    })


def _form(request: HttpRequest, team: Team, initial: dict) -> ScheduleForm:
    return ScheduleForm(request.POST or None, initial=initial, team=team,
                        has_baseline=schedule_selectors.team_has_baseline(team))


def _render_form(request: HttpRequest, form: ScheduleForm, schedule: Schedule | None = None
                 ) -> HttpResponse:
    return render(request, "schedules/schedule_form.html",
                  {"form": form, "schedule": schedule},
                  status=400 if form.errors else 200)


@require_http_methods(["GET", "POST"])
@login_required
def schedule_create(request: HttpRequest) -> HttpResponse:
    team = current_team(request, WRITE_ROLE)
    # The query set and model pages link here with their id.
    form = _form(request, team, {"model": _int_param(request, "model"),
                                 "query_set": _int_param(request, "query_set")})
    response = form_saved_response(
        request, form, lambda: services.schedule_create(
            team=team, created_by=request.user, **form.service_kwargs()),
        success=lambda schedule: f"Schedule {schedule.name} created: "
                                 f"{schedule.when_text()}.",
        next_url=_detail_url)
    return response or _render_form(request, form)


@require_GET
@login_required
def schedule_detail(request: HttpRequest, schedule_id: int) -> HttpResponse:
    schedule = schedule_selectors.schedule_get_for_user(user=request.user,
                                                        schedule_id=schedule_id)
    runs = Paginator(schedule_selectors.schedule_runs(schedule_id=schedule.pk),
                     RUNS_PER_PAGE).get_page(request.GET.get("page"))
    runs.object_list = schedule_selectors.with_latest_verdicts(list(runs.object_list))
    return render(request, "schedules/schedule_detail.html", {
        "schedule": schedule, "runs": runs, "now": timezone.now(),
        "judges": [name for judge_id, name in counting_judges(schedule.team)
                   if judge_id in schedule.judge_ids],
        "can_edit": current_team_can(request, schedule.team_id, WRITE_ROLE),
        "pause_form": SchedulePauseForm(),
        "compare_query": _compare_query(schedule.pk),
    })


def _compare_query(schedule_id: int) -> str:
    """The N-way compare's query string for the newest finished runs, the oldest of them
    the reference; empty with fewer than two."""
    ids = schedule_selectors.runs_to_compare(schedule_id=schedule_id)
    if not ids:
        return ""
    return urlencode([("evaluation", pk) for pk in ids] + [("reference", ids[0])])


@require_http_methods(["GET", "POST"])
@login_required
def schedule_edit(request: HttpRequest, schedule_id: int) -> HttpResponse:
    schedule = schedule_selectors.schedule_get_for_user(
        user=request.user, schedule_id=schedule_id, minimum_role=WRITE_ROLE)
    form = _form(request, schedule.team, ScheduleForm.initial_for(schedule))
    response = form_saved_response(
        request, form, lambda: services.schedule_update(
            schedule=schedule, **form.service_kwargs()),
        success=lambda saved: f"Schedule {saved.name} saved.", next_url=_detail_url)
    return response or _render_form(request, form, schedule)


@require_POST
@login_required
def schedule_pause(request: HttpRequest, schedule_id: int) -> HttpResponse:
    schedule = schedule_selectors.schedule_get_for_user(
        user=request.user, schedule_id=schedule_id, minimum_role=WRITE_ROLE)
    form = SchedulePauseForm(request.POST)
    reason = form.cleaned_data["reason"] if form.is_valid() else ""
    return service_step_response(
        request, lambda: services.schedule_pause(
            schedule=schedule, reason=reason or f"paused by {request.user.username}"),
        done=f"Schedule {schedule.name} paused: no runs until you resume it.",
        next_url=_detail_url(schedule))


@require_POST
@login_required
def schedule_resume(request: HttpRequest, schedule_id: int) -> HttpResponse:
    schedule = schedule_selectors.schedule_get_for_user(
        user=request.user, schedule_id=schedule_id, minimum_role=WRITE_ROLE)
    return service_step_response(
        request, lambda: services.schedule_resume(schedule=schedule),
        done=f"Schedule {schedule.name} resumed.", next_url=_detail_url(schedule))


@require_http_methods(["GET", "POST"])
@login_required
def schedule_delete(request: HttpRequest, schedule_id: int) -> HttpResponse:
    """GET asks; POST deletes the schedule (its runs stay as evaluations)."""
    schedule = schedule_selectors.schedule_get_for_user(
        user=request.user, schedule_id=schedule_id, minimum_role=WRITE_ROLE)
    if request.method == "GET":
        return confirm_page(
            request, title=f"Delete schedule {schedule.name}?",
            dependents=f"It has made {schedule.runs.count()} run(s).",
            consequence="No more runs are made. The runs it made stay, as ordinary "
                        "evaluations with their grades and verdicts.",
            button="Delete schedule", danger=True, cancel_url=_detail_url(schedule))
    services.schedule_delete(schedule=schedule)
    messages.success(request, f"Schedule {schedule.name} deleted.")
    return redirect("schedules:schedule_list")
