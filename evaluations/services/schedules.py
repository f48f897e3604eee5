"""Schedules ("watches"): create, change, pause and resume them, and fire them.

Firing is a claim: `schedule_fire` moves the schedule's `next_due_at` from the due time it
read to the next one with a conditional UPDATE, and only the process whose UPDATE changed
the row creates the run, in the same transaction. Two beat processes, a beat and the web
process's thread, or a restart between two ticks therefore make one run per due time
(ScheduleRun's unique (schedule, due_at) is a second guard). The next due time is the
first one after *now*, not after the one claimed: a schedule that missed several due times
while everything was down runs once, then keeps its rhythm.

A run is an evaluation of the schedule's query set, reusing earlier grades by (keyword,
document), started at once (its fetch goes out after commit). It finishes as any
evaluation does when every slot is graded (auto finish), or at its deadline with what is
graded (`schedule_runs_finish_overdue`). A run whose fetch failed for every keyword is
finished at once (its verdict says why it is undecided) and counts towards the streak
that pauses the schedule (`SCHEDULE_FAILED_RUNS_TO_PAUSE` in a row).
"""

import json
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from cronsim import CronSim, CronSimError
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Count, F, OuterRef, Subquery
from django.urls import reverse
from django.utils import timezone

from evaluations.events import By
from evaluations.hooks import counting_judges
from evaluations.models import (
    Evaluation,
    KeywordSet,
    QuerySetVersion,
    Schedule,
    ScheduleRun,
    SearchModel,
)
from evaluations.query_sets.services import evaluation_create_from_query_set, version_keywords
from evaluations.selectors_schedules import team_baseline_of
from evaluations.services.config_checks import evaluation_config_check
from evaluations.services.lifecycle import (
    StartedEvaluationSpec,
    evaluation_archive,
    evaluation_finish,
    evaluation_start,
    evaluations_create_started,
)
from searchtweak.models import Role, Team, User
from searchtweak.notification_models import Event
from searchtweak.notifications import notify

logger = logging.getLogger(__name__)

MIN_INTERVAL_MINUTES = 15
MAX_INTERVAL_MINUTES = 365 * 24 * 60  # one year
SCHEDULE_FAILED_RUNS_TO_PAUSE = 3
MAX_DEADLINE_HOURS = 24 * 30
MAX_KEEP_RUNS = 1000
# Names the zone database holds that are not zones a person chooses: `localtime` is the
# machine's own (it differs between the web and the beat host), `Factory` a placeholder.
_NOT_ZONES = frozenset({"localtime", "Factory", "posixrules"})
# Gaps between a cron expression's next firings checked against the minimum interval: a
# day of every-minute hours, or a year of weekly ones, shows any gap it will ever have.
_CRON_GAPS_CHECKED = 400


# --- when ---------------------------------------------------------------------------------


def _zone(name: str) -> ZoneInfo:
    try:
        if name in _NOT_ZONES or name not in available_timezones():
            raise ZoneInfoNotFoundError(name)
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValidationError({"time_zone": f"Unknown time zone {name!r} (use an IANA name "
                                            "such as Europe/Berlin or UTC)."}) from None


def cron_check(expression: str, time_zone: str) -> str:
    """The expression, stripped, or a ValidationError on `cron`: not five fields that
    cronsim reads, or firing more often than every MIN_INTERVAL_MINUTES."""
    expression = " ".join(expression.split())
    zone = _zone(time_zone)
    if len(expression.split()) != 5:
        # cronsim reads six fields as seconds first: a different expression from the one
        # the lead meant, and one that may fire every minute.
        raise ValidationError({"cron": (
            f"Not a cron expression: “{expression}” has {len(expression.split())} fields; "
            "write five: minute hour day month weekday (e.g. “0 6 * * 1-5”).")})
    try:
        firings = CronSim(expression, datetime(2026, 1, 1, tzinfo=zone))
        previous = next(firings)
    except (CronSimError, StopIteration) as error:
        raise ValidationError({"cron": f"Not a cron expression: {error or 'it never fires'} "
                                       "(five fields: minute hour day month weekday, e.g. "
                                       "“0 6 * * 1-5”)."}) from None
    for _ in range(_CRON_GAPS_CHECKED):
        upcoming = next(firings, None)
        if upcoming is None:
            break
        gap = (upcoming - previous).total_seconds() / 60
        if gap < MIN_INTERVAL_MINUTES:
            raise ValidationError({"cron": (
                f"“{expression}” fires {gap:g} minutes apart at times; the minimum is "
                f"{MIN_INTERVAL_MINUTES} minutes.")})
        previous = upcoming
    return expression


class DueTimeUnknown(Exception):
    """A stored schedule whose next due time cannot be computed (an interval beyond the
    calendar, a cron expression or zone that no longer reads): it must be paused, not
    retried every tick. The message says why, for a lead."""


def _stored_zone(schedule: Schedule) -> ZoneInfo:
    try:
        return ZoneInfo(schedule.time_zone)
    except (ZoneInfoNotFoundError, ValueError):
        raise DueTimeUnknown(f"unknown time zone {schedule.time_zone!r}") from None


def next_due_after(schedule: Schedule, moment: datetime, *, last_due: datetime | None = None
                   ) -> datetime:
    """The schedule's first due time strictly after `moment`. An interval keeps its phase
    from `last_due` (the due time just claimed), so a late tick does not shift it. Raises
    DueTimeUnknown when the stored timing gives no due time (the checks at save refuse
    such timings; a row stored before them, or written around them, may hold one)."""
    try:
        if schedule.interval_minutes:
            step = timedelta(minutes=schedule.interval_minutes)
            if last_due is None:
                return moment + step
            missed = max(0, int((moment - last_due) / step))
            due = last_due + step * missed
            while due <= moment:
                due += step
            return due
        # cronsim reads the hours and days in the zone of the moment it starts from.
        return next(CronSim(schedule.cron, moment.astimezone(_stored_zone(schedule))))
    except (OverflowError, ValueError, CronSimError, StopIteration) as error:
        raise DueTimeUnknown(f"its next due time cannot be computed "
                             f"({type(error).__name__}: {error or 'no next time'}); "
                             "change its timing, then resume") from None


# --- create, change, pause ----------------------------------------------------------------


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
    zone_known = run(_zone, clean["time_zone"]) is not None
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

    baseline = fields["baseline"]
    if baseline not in Schedule.Baseline.values:
        fail("baseline", f"Use one of {', '.join(Schedule.Baseline.values)}.")
    elif baseline == Schedule.Baseline.TEAM:
        team_baseline = team_baseline_of(team)
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
                   "baseline", "min_coverage", "threshold", "keep_runs")


def _defaults() -> dict[str, Any]:
    return {"interval_minutes": None, "cron": "", "time_zone": "UTC", "deadline_hours": 24,
            "judge_ids": [], "baseline": Schedule.Baseline.TEAM, "min_coverage": 0.90,
            "threshold": None, "keep_runs": 10}


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
    clean = _check(team=schedule.team, fields={**current, **changes})
    timing = ("interval_minutes", "cron", "time_zone")
    retimed = any(clean[name] != current[name] for name in timing)
    for name, value in clean.items():
        setattr(schedule, name, value)
    if retimed and not schedule.is_paused:
        schedule.next_due_at = next_due_after(schedule, timezone.now())
    schedule.save()
    return schedule


@transaction.atomic
def schedule_pause(*, schedule: Schedule, reason: str = "") -> Schedule:
    """Stop firing; pausing a paused schedule changes nothing."""
    schedule = Schedule.objects.select_for_update().get(pk=schedule.pk)
    if schedule.paused_at is None:
        schedule.paused_at, schedule.paused_reason = timezone.now(), reason[:300]
        schedule.save(update_fields=["paused_at", "paused_reason"])
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
    return schedule


@transaction.atomic
def schedule_delete(*, schedule: Schedule) -> None:
    """The schedule goes; its runs stay as ordinary evaluations."""
    Schedule.objects.select_for_update().filter(pk=schedule.pk).delete()


# --- firing -------------------------------------------------------------------------------


def _run_name(schedule: Schedule, due_at: datetime) -> str:
    local = due_at.astimezone(_stored_zone(schedule))
    return f"{schedule.name[:150]} · {local:%Y-%m-%d %H:%M}"


def _pause_and_announce(schedule_id: int, reason: str) -> None:
    """Pause (if not yet) and tell the team, in the caller's transaction."""
    paused = Schedule.objects.filter(pk=schedule_id, paused_at__isnull=True).update(
        paused_at=timezone.now(), paused_reason=reason[:300])
    if paused:
        schedule = Schedule.objects.get(pk=schedule_id)
        # Leads resume or change a schedule; graders could do nothing with the news.
        notify(team_id=schedule.team_id, event=Event.SCHEDULE_PAUSED,
               text=f"Schedule “{schedule.name}” paused: {reason}",
               url=reverse("evaluations:schedule_detail", args=[schedule_id]),
               payload={"schedule_id": schedule_id, "reason": reason},
               minimum_role=Role.LEAD)


def _due_time_claim(schedule: Schedule, *, due_at: datetime, now: datetime,
                    next_due: datetime | None = None) -> bool:
    """Claim the due time `due_at` read from the schedule: one conditional UPDATE moving
    next_due_at from it to the next due time after `now` (`next_due` when the caller
    computed it already); whether this process won. The one rule behind "each due time
    fires once", for both ways of firing."""
    if next_due is None:
        next_due = next_due_after(schedule, now, last_due=due_at)
    return Schedule.objects.filter(
        pk=schedule.pk, next_due_at=due_at, paused_at__isnull=True,
    ).update(next_due_at=next_due) == 1


def schedule_fire(*, schedule_id: int, due_at: datetime, now: datetime | None = None
                  ) -> ScheduleRun | None:
    """Claim the due time `due_at` of the schedule and make its run; None when another
    process claimed it first (or the schedule was paused or retimed since it was read).
    A run that cannot be made (its query set or model archived since) pauses the schedule
    with the reason; the due time stays claimed, so it is not tried every tick."""
    now = now or timezone.now()
    with transaction.atomic():
        schedule = Schedule.objects.select_related("team", "model", "query_set").get(
            pk=schedule_id)
        try:
            claimed = _due_time_claim(schedule, due_at=due_at, now=now)
            _run_name(schedule, due_at)
        except DueTimeUnknown as error:
            logger.warning("schedule %s: %s", schedule_id, error)
            _pause_and_announce(schedule_id, str(error))
            return None
        if not claimed:
            return None
        try:
            with transaction.atomic():
                evaluation = evaluation_create_from_query_set(
                    query_set=schedule.query_set, team=schedule.team,
                    created_by=schedule.created_by, model=schedule.model,
                    name=_run_name(schedule, due_at), scale=schedule.scale,
                    strategy=schedule.strategy, metrics=schedule.metrics,
                    reuse_grades=Evaluation.Reuse.DOCUMENT, auto_finish=True,
                    tags=[], description=f"Run of the schedule “{schedule.name}”.")
                run = ScheduleRun.objects.create(
                    schedule=schedule, evaluation=evaluation, due_at=due_at,
                    deadline_at=now + timedelta(hours=schedule.deadline_hours))
                evaluation_start(evaluation=evaluation, by=By.SYSTEM)
        except ValidationError as error:
            reason = "could not make a run: " + "; ".join(error.messages)
            logger.warning("schedule %s: %s", schedule_id, reason)
            _pause_and_announce(schedule_id, reason)
            return None
        except IntegrityError:
            # The unique (schedule, due_at): a run for this due time exists already.
            return None
    schedule_runs_trim(schedule_id=schedule_id, keep=schedule.keep_runs)
    return run


def schedule_runs_trim(*, schedule_id: int, keep: int) -> int:
    """Archive the finished runs beyond the schedule's newest `keep` (its keep_runs; never
    delete them); how many were archived. Unfinished old runs go at a later trim."""
    # The runs past the newest `keep`, read on ScheduleRun's (schedule, due_at) index: a
    # schedule with fewer runs costs one short read after each firing.
    beyond = list(ScheduleRun.objects.filter(schedule_id=schedule_id).order_by("-due_at")
                  .values_list("evaluation_id", flat=True)[keep:])
    if not beyond:
        return 0
    old = Evaluation.objects.filter(pk__in=beyond, archived_at__isnull=True,
                                    status=Evaluation.Status.FINISHED)
    archived = 0
    for evaluation in old:
        evaluation_archive(evaluation=evaluation, by=By.AUTO)
        archived += 1
    return archived


@dataclass(frozen=True)
class TickReport:
    fired: int
    skipped: int
    """Due schedules another process claimed first, or that could not make a run."""
    finished_overdue: int


def schedules_due(now: datetime) -> list[tuple[int, datetime]]:
    """(schedule id, due time) of every unpaused schedule due by `now`: one indexed read."""
    return list(Schedule.objects.filter(paused_at__isnull=True, next_due_at__lte=now)
                .order_by("next_due_at", "pk").values_list("pk", "next_due_at"))


def schedule_runs_finish_overdue(now: datetime) -> int:
    """Finish, with what is graded, the active runs whose deadline has passed."""
    overdue = Evaluation.objects.filter(schedule_run__deadline_at__lte=now,
                                        status=Evaluation.Status.ACTIVE)
    finished = 0
    for evaluation in overdue:
        try:
            evaluation_finish(evaluation=evaluation, by=By.AUTO)
            finished += 1
        except ValidationError:
            logger.exception("could not finish the overdue run %s", evaluation.pk)
    return finished


# Due schedules fired in one transaction by schedules_fire_batch; a batch's claims and runs
# commit together, so a crash loses at most one batch's work (its due times stay due).
FIRE_BATCH_SIZE = 100


def schedules_fire_batch(due: list[tuple[int, datetime]], *, now: datetime
                         ) -> tuple[list[ScheduleRun], list[tuple[int, datetime]]]:
    """Fire many due schedules at once: each due time claimed as schedule_fire claims it,
    and the runs of the claimed ones created and started in bulk
    (lifecycle.evaluations_create_started) in the same transaction. Returns the runs and
    the due times this path leaves to schedule_fire one by one: a schedule whose run
    cannot be made as configured (its query set, model or endpoint archived, its scale or
    metrics no longer valid), so that schedule_fire pauses it with the reason."""
    with transaction.atomic():
        schedules = Schedule.objects.select_related(
            "team", "model__endpoint", "query_set", "created_by").in_bulk(
            [schedule_id for schedule_id, _ in due])
        newest = (QuerySetVersion.objects.filter(query_set_id=OuterRef("query_set_id"))
                  .order_by("-number").values("pk")[:1])
        versions = {version.query_set_id: version for version in QuerySetVersion.objects
                    .filter(query_set_id__in={s.query_set_id for s in schedules.values()},
                            pk=Subquery(newest))}
        checked: dict[tuple, list[dict[str, Any]] | None] = {}
        keywords: dict[int, list[str]] = {}
        ready, one_by_one = [], []
        for schedule_id, due_at in due:
            schedule = schedules.get(schedule_id)
            if schedule is None:
                continue  # deleted since the read
            version = versions.get(schedule.query_set_id)
            metrics = _config_checked(schedule, checked)
            next_due = _next_due_or_none(schedule, due_at=due_at, now=now)
            if (metrics is None or version is None or schedule.query_set.archived_at
                    or schedule.model.archived_at or schedule.model.endpoint.archived_at
                    or next_due is None):
                one_by_one.append((schedule_id, due_at))
                continue
            if _due_time_claim(schedule, due_at=due_at, now=now, next_due=next_due):
                if version.pk not in keywords:
                    keywords[version.pk] = version_keywords(version)
                ready.append((schedule, due_at, version, metrics))
        evaluations = evaluations_create_started(specs=[
            StartedEvaluationSpec(
                team=schedule.team, created_by=schedule.created_by, model=schedule.model,
                name=_run_name(schedule, due_at), scale=schedule.scale,
                strategy=schedule.strategy, metrics=metrics, keywords=keywords[version.pk],
                query_set_version=version,
                description=f"Run of the schedule “{schedule.name}”.")
            for schedule, due_at, version, metrics in ready])
        runs = ScheduleRun.objects.bulk_create([
            ScheduleRun(schedule=schedule, evaluation=evaluation, due_at=due_at,
                        deadline_at=now + timedelta(hours=schedule.deadline_hours))
            for (schedule, due_at, _, _), evaluation in zip(ready, evaluations, strict=True)])
    return runs, one_by_one


def _next_due_or_none(schedule: Schedule, *, due_at: datetime, now: datetime
                      ) -> datetime | None:
    """The schedule's next due time, or None when it (or the run's name, in the schedule's
    zone) cannot be computed; the one-by-one path pauses such a schedule with the reason."""
    try:
        _run_name(schedule, due_at)
        return next_due_after(schedule, now, last_due=due_at)
    except DueTimeUnknown:
        return None


def _config_checked(schedule: Schedule, checked: dict) -> list[dict[str, Any]] | None:
    """The schedule's metrics as evaluation_config_check cleans them, or None when the
    check fails now; one check per distinct configuration in a batch."""
    key = (schedule.team_id, schedule.model_id, schedule.scale, schedule.strategy,
           json.dumps(schedule.metrics, sort_keys=True))
    if key not in checked:
        try:
            checked[key] = evaluation_config_check(
                team=schedule.team, model=schedule.model, name=schedule.name,
                scale=schedule.scale, strategy=schedule.strategy, metrics=schedule.metrics)
        except ValidationError:
            checked[key] = None
    return checked[key]


def _runs_trim_where_needed(schedule_ids: set[int]) -> None:
    """schedule_runs_trim for the schedules among these with more runs than they keep: one
    read for all of them."""
    over = (Schedule.objects.filter(pk__in=schedule_ids)
            .annotate(run_count=Count("runs")).filter(run_count__gt=F("keep_runs"))
            .values_list("pk", "keep_runs"))
    for schedule_id, keep in over:
        schedule_runs_trim(schedule_id=schedule_id, keep=keep)


def schedules_tick(now: datetime | None = None) -> TickReport:
    """Fire every due schedule once, and finish the runs past their deadline. Safe to run
    in several processes at once; a due time another process claimed is skipped."""
    now = now or timezone.now()
    due = schedules_due(now)
    fired = 0
    fired_schedules: set[int] = set()
    for start in range(0, len(due), FIRE_BATCH_SIZE):
        batch = due[start:start + FIRE_BATCH_SIZE]
        try:
            runs, one_by_one = schedules_fire_batch(batch, now=now)
        except Exception:
            # A run for one of these due times exists (the unique guard behind the claim),
            # or one schedule's run could not be made in bulk: the batch rolled back whole;
            # one by one, each in its own guard, the others still fire.
            logger.exception("a batch of %s due schedules fell back to one by one",
                             len(batch))
            runs, one_by_one = [], batch
        fired += len(runs)
        fired_schedules.update(run.schedule_id for run in runs)
        for schedule_id, due_at in one_by_one:
            try:
                run = schedule_fire(schedule_id=schedule_id, due_at=due_at, now=now)
            except Schedule.DoesNotExist:
                run = None  # deleted since the read
            except Exception:
                # Each schedule in its own guard: whatever one schedule raises, the others
                # still fire. Its due time stays due, so the next tick tries it again.
                logger.exception("schedule %s could not fire", schedule_id)
                run = None
            fired += run is not None
    _runs_trim_where_needed(fired_schedules)
    return TickReport(fired=fired, skipped=len(due) - fired,
                      finished_overdue=schedule_runs_finish_overdue(now))


# --- a run's fetch ended ------------------------------------------------------------------


def schedule_run_fetch_ended(*, evaluation_id: int, every_keyword_failed: bool) -> None:
    """A run fetched (the schedule's failure streak restarts) or failed for every keyword:
    then it is finished at once, its verdict says why it is undecided, and the
    SCHEDULE_FAILED_RUNS_TO_PAUSE-th such run in a row pauses the schedule."""
    run = ScheduleRun.objects.filter(evaluation_id=evaluation_id).first()
    if run is None:
        return
    with transaction.atomic():
        if not every_keyword_failed:
            Schedule.objects.filter(pk=run.schedule_id).update(failed_run_streak=0)
            return
        ScheduleRun.objects.filter(pk=run.pk).update(fetch_failed=True)
        Schedule.objects.filter(pk=run.schedule_id).update(
            failed_run_streak=F("failed_run_streak") + 1)
        streak = Schedule.objects.values_list("failed_run_streak", flat=True).get(
            pk=run.schedule_id)
        evaluation = Evaluation.objects.get(pk=evaluation_id)
        if evaluation.status == Evaluation.Status.ACTIVE:
            evaluation_finish(evaluation=evaluation, by=By.AUTO)
        if streak >= SCHEDULE_FAILED_RUNS_TO_PAUSE:
            _pause_and_announce(run.schedule_id, (
                f"the fetch failed for every keyword in {streak} runs in a row; check the "
                "search model's endpoint, then resume"))
