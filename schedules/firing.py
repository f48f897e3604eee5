"""Firing schedules: each due time makes one run, an evaluation.

Firing is a claim: `schedule_fire` moves the schedule's `next_due_at` from the due time it
read to the next one (schedules.timing) with a conditional UPDATE, and only the process
whose UPDATE changed the row creates the run, in the same transaction. Two beat
processes, a beat and the web process's thread, or a restart between two ticks therefore
make one run per due time (ScheduleRun's unique (schedule, due_at) is a second guard).

A run is an evaluation of the schedule's query set, reusing earlier grades by (keyword,
document), started at once (its fetch goes out after commit). It finishes as any
evaluation does when every slot is graded (auto finish), or at its deadline with what is
graded (`schedule_runs_finish_overdue`). A run whose fetch failed for every keyword is
finished at once (schedules.streak).
"""

import json
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Count, F, OuterRef, Subquery
from django.utils import timezone

from evaluations.events import By
from evaluations.models import Evaluation, QuerySetVersion
from evaluations.query_sets.services import evaluation_create_from_query_set, version_entries
from evaluations.services.config_checks import evaluation_config_check
from evaluations.services.keywords import KeywordEntry
from evaluations.services.lifecycle import (
    StartedEvaluationSpec,
    evaluation_archive,
    evaluation_finish,
    evaluation_start,
    evaluations_create_started,
)
from schedules.models import Schedule, ScheduleRun
from schedules.services import schedule_pause_and_announce
from schedules.timing import DueTimeUnknown, next_due_after, stored_zone
from searchtweak import instruments

logger = logging.getLogger(__name__)


def _run_name(schedule: Schedule, due_at: datetime) -> str:
    local = due_at.astimezone(stored_zone(schedule))
    return f"{schedule.name[:150]} · {local:%Y-%m-%d %H:%M}"


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
            schedule_pause_and_announce(schedule_id, str(error))
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
            schedule_pause_and_announce(schedule_id, reason)
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
        keywords: dict[int, list[KeywordEntry]] = {}
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
                    keywords[version.pk] = version_entries(version)
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
    overdue = schedule_runs_finish_overdue(now)
    instruments.SCHEDULE_TICKS.inc()
    instruments.SCHEDULE_RUNS_OVERDUE.inc(overdue)
    return TickReport(fired=fired, skipped=len(due) - fired, finished_overdue=overdue)
