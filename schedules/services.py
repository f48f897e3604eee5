"""Schedules ("watches"): create, change, pause, resume and delete them.

Every field is checked whole before anything is saved (a ValidationError names each bad
field): the run's configuration as an evaluation's is checked, the timing
(schedules.timing), the baseline, the verdict rule (its segments cleaned as tags are:
metrics.reports.verdicts.verdict_segments_clean), and the judges, which must be the team's
counting judges (schedules.run_judges). A pause stops the firing (schedules.firing); a resume
fires again from the next due time after now, with the failure streak reset.
"""

from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from audit.models import Action
from audit.services import audit_object, fields_of
from evaluations.models import KeywordSet, SearchModel
from evaluations.services.config_checks import evaluation_config_check
from metrics import selectors as metrics_selectors
from metrics.reports.verdicts import verdict_segments_clean
from notifications.models import Event
from notifications.services import notify
from schedules.models import Schedule
from schedules.run_judges import counting_judges
from schedules.timing import (
    MAX_INTERVAL_MINUTES,
    MIN_INTERVAL_MINUTES,
    DueTimeUnknown,
    cron_check,
    next_due_after,
    zone_check,
)
from searchtweak.models import Role, Team, User

MAX_DEADLINE_HOURS = 24 * 30
MAX_KEEP_RUNS = 1000


def _check(*, team: Team, fields: dict[str, Any]) -> dict[str, Any]:
    """Every field checked, errors gathered per field; the cleaned values."""
    errors: dict[str, list[str]] = {}

    def fail(name: str, message: str) -> None:
        errors.setdefault(name, []).append(message)

    def run(check, *args, **kwargs):
        try:
            return check(*args, **kwargs)
        except ValidationError as error:
            for name, messages in error.message_dict.items():
                for message in messages:
                    fail(name, message)
            return None

    clean = dict(fields)
    # Read again: the caller's rows may predate an archive.
    model = SearchModel.objects.get(pk=fields["model"].pk)
    query_set = KeywordSet.objects.get(pk=fields["query_set"].pk)
    clean["metrics"] = run(evaluation_config_check, team=team, model=model,
                           name=fields["name"], scale=fields["scale"],
                           strategy=fields["strategy"], metrics=fields["metrics"])
    clean["name"] = fields["name"].strip()
    if query_set.team_id != team.pk:
        fail("query_set", "No such query set in this team.")
    elif query_set.archived_at is not None:
        fail("query_set", f"{query_set.name} is archived.")
    else:
        version = query_set.current_version()
        if version is None or version.keyword_count == 0:
            fail("query_set", f"{query_set.name} has no keywords: a run needs at least one.")

    interval, cron = fields.get("interval_minutes"), (fields.get("cron") or "").strip()
    clean["time_zone"] = fields.get("time_zone") or "UTC"
    zone_known = run(zone_check, clean["time_zone"]) is not None
    if bool(interval) == bool(cron):
        fail("interval_minutes", "Give either an interval in minutes or a cron expression.")
    elif interval:
        if interval < MIN_INTERVAL_MINUTES:
            fail("interval_minutes", f"The minimum interval is {MIN_INTERVAL_MINUTES} minutes.")
        elif interval > MAX_INTERVAL_MINUTES:
            fail("interval_minutes", f"The maximum interval is {MAX_INTERVAL_MINUTES} minutes "
                                     "(one year).")
        clean["interval_minutes"], clean["cron"] = interval, ""
    else:
        # Read in a zone the schedule may not have: its error is on time_zone already.
        clean["cron"] = run(cron_check, cron, clean["time_zone"] if zone_known else "UTC") or cron
        clean["interval_minutes"] = None

    if not 1 <= fields["deadline_hours"] <= MAX_DEADLINE_HOURS:
        fail("deadline_hours", f"Between 1 and {MAX_DEADLINE_HOURS} hours.")
    if not 1 <= fields["keep_runs"] <= MAX_KEEP_RUNS:
        fail("keep_runs", f"Between 1 and {MAX_KEEP_RUNS} runs.")
    if not 0.0 <= fields["min_coverage"] <= 1.0:
        fail("min_coverage", "A share between 0 and 1 (0.9 is 90 % of the keywords).")
    threshold = fields.get("threshold")
    if threshold is not None and not 0.0 <= threshold < 1.0:
        fail("threshold", "An absolute change between 0 and 1 (e.g. 0.01), or empty.")
    segments = fields.get("segments") or []
    if not isinstance(segments, list | tuple):
        fail("segments", "A list of tags.")
    else:
        clean["segments"] = list(run(verdict_segments_clean, list(segments)) or ())
    if not isinstance(fields.get("weighted"), bool):
        fail("weighted", "True or false.")

    baseline = fields["baseline"]
    if baseline not in Schedule.Baseline.values:
        fail("baseline", f"Use one of {', '.join(Schedule.Baseline.values)}.")
    elif baseline == Schedule.Baseline.TEAM:
        team_baseline = metrics_selectors.team_baseline(team_id=team.pk)
        if team_baseline is None:
            fail("baseline", "The team has no baseline: set one, or compare with the "
                             "schedule's first or previous run.")
        elif team_baseline.scale != fields["scale"]:
            fail("baseline", f"The team's baseline “{team_baseline.name}” is graded on the "
                             f"{team_baseline.scale} scale, the schedule on {fields['scale']}: "
                             "their values cannot be compared.")

    judge_ids = list(fields.get("judge_ids") or [])
    counting = dict(counting_judges(team))
    for judge_id in judge_ids:
        if judge_id not in counting:
            fail("judge_ids", f"No judge {judge_id} whose grades count in this team.")
    clean["judge_ids"] = sorted(set(judge_ids))

    if errors:
        raise ValidationError(errors)
    return clean


SCHEDULE_FIELDS = ("name", "model", "query_set", "scale", "strategy", "metrics",
                   "interval_minutes", "cron", "time_zone", "deadline_hours", "judge_ids",
                   "baseline", "min_coverage", "threshold", "segments", "weighted",
                   "keep_runs")


def _defaults() -> dict[str, Any]:
    return {"interval_minutes": None, "cron": "", "time_zone": "UTC", "deadline_hours": 24,
            "judge_ids": [], "baseline": Schedule.Baseline.TEAM, "min_coverage": 0.90,
            "threshold": None, "segments": [], "weighted": False, "keep_runs": 10}


@transaction.atomic
def schedule_create(*, team: Team, created_by: User | None, **fields: Any) -> Schedule:
    """A schedule, checked whole (a ValidationError names each bad field; nothing saved),
    within the team's SCHEDULES_PER_TEAM. An interval schedule is due at once, so its
    first run is the reference a lead sees; a cron schedule at its first time from now."""
    unknown = set(fields) - set(SCHEDULE_FIELDS)
    if unknown:
        raise TypeError(f"unknown schedule fields: {sorted(unknown)}")
    clean = _check(team=team, fields={**_defaults(), **fields})
    # The team's row, locked: two creates at the cap cannot both pass the count.
    Team.objects.select_for_update().filter(pk=team.pk).first()
    if Schedule.objects.filter(team=team).count() >= settings.SCHEDULES_PER_TEAM:
        raise ValidationError({"name": (
            f"The team has {settings.SCHEDULES_PER_TEAM} schedules, the most it may have "
            "(SCHEDULES_PER_TEAM): delete one it no longer needs first.")})
    schedule = Schedule(team=team, created_by=created_by, **clean)
    now = timezone.now()
    schedule.next_due_at = now if schedule.interval_minutes else next_due_after(schedule, now)
    schedule.save()
    audit_object(action=Action.SCHEDULE_CREATED, instance=schedule, object_type="schedule",
                 actor=created_by, after=fields_of(schedule, only=SCHEDULE_FIELDS))
    return schedule


@transaction.atomic
def schedule_update(*, schedule: Schedule, **changes: Any) -> Schedule:
    """Change any of SCHEDULE_FIELDS; a change of timing moves the next due time to the
    first one from now. Runs already made keep what they were made with."""
    schedule = Schedule.objects.select_for_update().get(pk=schedule.pk)
    unknown = set(changes) - set(SCHEDULE_FIELDS)
    if unknown:
        raise TypeError(f"unknown schedule fields: {sorted(unknown)}")
    current = {name: getattr(schedule, name) for name in SCHEDULE_FIELDS}
    before = fields_of(schedule, only=SCHEDULE_FIELDS)
    clean = _check(team=schedule.team, fields={**current, **changes})
    timing = ("interval_minutes", "cron", "time_zone")
    retimed = any(clean[name] != current[name] for name in timing)
    for name, value in clean.items():
        setattr(schedule, name, value)
    if retimed and not schedule.is_paused:
        schedule.next_due_at = next_due_after(schedule, timezone.now())
    schedule.save()
    audit_object(action=Action.SCHEDULE_CHANGED, instance=schedule, object_type="schedule",
                 before=before, after=fields_of(schedule, only=SCHEDULE_FIELDS))
    return schedule


@transaction.atomic
def schedule_pause(*, schedule: Schedule, reason: str = "") -> Schedule:
    """Stop firing; pausing a paused schedule changes nothing."""
    schedule = Schedule.objects.select_for_update().get(pk=schedule.pk)
    if schedule.paused_at is None:
        schedule.paused_at, schedule.paused_reason = timezone.now(), reason[:300]
        schedule.save(update_fields=["paused_at", "paused_reason"])
        audit_object(action=Action.SCHEDULE_CHANGED, instance=schedule,
                     object_type="schedule", before={"paused": False},
                     after={"paused": True, "paused_reason": schedule.paused_reason})
    return schedule


@transaction.atomic
def schedule_resume(*, schedule: Schedule) -> Schedule:
    """Fire again from the next due time after now (what was missed while paused is not
    made up), with the failure streak reset. A timing that gives no due time is a
    ValidationError on its field: it must be changed first."""
    schedule = Schedule.objects.select_for_update().get(pk=schedule.pk)
    if schedule.paused_at is not None:
        try:
            next_due_at = next_due_after(schedule, timezone.now(),
                                         last_due=schedule.next_due_at)
        except DueTimeUnknown as error:
            field = "interval_minutes" if schedule.interval_minutes else "cron"
            raise ValidationError({field: f"Cannot resume: {error}."}) from None
        schedule.paused_at, schedule.paused_reason = None, ""
        schedule.failed_run_streak = 0
        schedule.next_due_at = next_due_at
        schedule.save(update_fields=["paused_at", "paused_reason", "failed_run_streak",
                                     "next_due_at"])
        audit_object(action=Action.SCHEDULE_CHANGED, instance=schedule,
                     object_type="schedule", before={"paused": True}, after={"paused": False})
    return schedule


@transaction.atomic
def schedule_delete(*, schedule: Schedule) -> None:
    """The schedule goes; its runs stay as ordinary evaluations."""
    locked = Schedule.objects.select_for_update().filter(pk=schedule.pk).first()
    if locked is None:
        return  # deleted meanwhile: that delete was recorded
    audit_object(action=Action.SCHEDULE_DELETED, instance=locked, object_type="schedule",
                 before=fields_of(locked, only=SCHEDULE_FIELDS))
    locked.delete()


def schedule_pause_and_announce(schedule_id: int, reason: str) -> None:
    """Pause (if not yet) and tell the team, in the caller's transaction."""
    paused = Schedule.objects.filter(pk=schedule_id, paused_at__isnull=True).update(
        paused_at=timezone.now(), paused_reason=reason[:300])
    if paused:
        schedule = Schedule.objects.get(pk=schedule_id)
        # Leads resume or change a schedule; graders could do nothing with the news.
        notify(team_id=schedule.team_id, event=Event.SCHEDULE_PAUSED,
               text=f"Schedule “{schedule.name}” paused: {reason}",
               url=reverse("schedules:schedule_detail", args=[schedule_id]),
               payload={"schedule_id": schedule_id, "reason": reason},
               minimum_role=Role.LEAD)
