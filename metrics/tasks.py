"""Celery tasks of the recompute pipeline: small, idempotent, each calling one service."""

import logging
import time
from datetime import timedelta

from celery import shared_task
from django.conf import settings
from django.db import DatabaseError
from django.utils import timezone

from metrics import services

logger = logging.getLogger(__name__)

# Evaluation id -> time.monotonic() at which this worker process's deferred run of it is
# due. Until then tasks for the evaluation's keywords need not run: the deferred run reads
# every keyword dirty by then, theirs included (their grades committed before they were
# sent). A task costs the worker far more than the few statements of a run.
_due: dict[int, float] = {}


def busy_interval() -> float:
    """While an evaluation is being graded, its next run starts this long after the
    previous one ended, so each run reads many grades."""
    return float(getattr(settings, "RECOMPUTE_BUSY_INTERVAL_SECONDS", 0.1))


@shared_task(
    name="metrics.recompute_keyword", time_limit=60, soft_time_limit=50, ignore_result=True,
    autoretry_for=(services.RecomputeConflict,), retry_backoff=0.2, max_retries=5,
)
def recompute_keyword(
    keyword_id: int, evaluation_id: int | None = None, deferred: bool = False
) -> str:
    """Recompute the dirty keywords of the keyword's evaluation (keyword_metrics_recompute).

    `evaluation_id`, when the sender knows it, lets a task whose evaluation has a run due
    end without a query; `deferred` marks that due run.

    In a worker, a run answers for its evaluation until it ends (metrics.models.RecomputeDue):
    grades that see the mark queue nothing, and the run, once done, queues the next run if
    anything of the evaluation is dirty (services.recompute_due_release).
    """
    if recompute_keyword.request.is_eager or recompute_keyword.app.conf.task_always_eager:
        run = services.keyword_metrics_recompute(keyword_id=keyword_id)
        if run.outcome in ("ok", "error") and (run.left_dirty or run.more):
            # Grades that arrived while this run computed found their keywords dirty and
            # queued nothing (metrics.receivers): the run that reads them is queued here.
            recompute_keyword.apply_async(
                ((run.left_dirty or run.keyword_ids)[0],), {"evaluation_id": run.evaluation_id})
        return run.outcome
    if deferred:
        _due.pop(evaluation_id, None)
    elif evaluation_id is not None:
        if _due.get(evaluation_id, 0.0) > time.monotonic():
            return "deferred"
        services.recompute_due_set(evaluation_id=evaluation_id, due_at=timezone.now())
    try:
        run = services.keyword_metrics_recompute(keyword_id=keyword_id)
    except Exception:
        if evaluation_id is not None:
            _stop_answering(evaluation_id)
        raise
    evaluation_id = run.evaluation_id or evaluation_id
    if evaluation_id is not None:
        _answer_for_later_grades(evaluation_id, run)
    return run.outcome


def _stop_answering(evaluation_id: int) -> None:
    """A run failed: lift its mark, so later grades queue runs of their own. A retry (on a
    conflict) sets it again; keywords graded while it ran are the sweep's to queue."""
    _due.pop(evaluation_id, None)
    try:
        services.recompute_due_clear(evaluation_id=evaluation_id)
    except DatabaseError:
        logger.exception("could not lift the recompute mark of evaluation %s", evaluation_id)


def _answer_for_later_grades(evaluation_id: int, run: services.RecomputeRun) -> None:
    """Queue the evaluation's next run if anything of it is dirty; lift the mark if not."""
    if run.left_dirty or run.more:
        keyword_id = (run.left_dirty or run.keyword_ids)[0]
    else:
        keyword_id = services.recompute_due_release(evaluation_id=evaluation_id)
        if keyword_id is None:
            return
    if _due.get(evaluation_id, 0.0) > time.monotonic():
        return  # this process has one queued already; it answers for the evaluation
    # More keywords waiting than a run takes: at once. Otherwise a little later, so the
    # next run reads the grades of a while.
    delay = 0.0 if run.more else max(settings.RECOMPUTE_DEBOUNCE_SECONDS, busy_interval())
    # Marked before it is sent: whoever sees the mark can count on the run.
    services.recompute_due_set(evaluation_id=evaluation_id,
                               due_at=timezone.now() + timedelta(seconds=delay))
    recompute_keyword.apply_async(
        (keyword_id,), {"evaluation_id": evaluation_id, "deferred": True},
        countdown=delay or None)
    if len(_due) > 10_000:
        _due.clear()  # entries of evaluations no longer graded
    _due[evaluation_id] = time.monotonic() + delay


@shared_task(name="metrics.recompute_evaluation", time_limit=1800, soft_time_limit=1780)
def recompute_evaluation(evaluation_id: int) -> int:
    return services.evaluation_metrics_recompute(evaluation_id=evaluation_id)


@shared_task(name="metrics.sweep_dirty_keywords", time_limit=60, soft_time_limit=50)
def sweep_dirty_keywords() -> int:
    """Re-enqueue keywords left dirty: a lost message or a stopped worker only delays values.
    One run per evaluation reads all of its dirty keywords."""
    due = services.dirty_keywords_due_by_evaluation()
    for keyword_ids in due.values():
        recompute_keyword.delay(keyword_ids[0])
    return sum(len(keyword_ids) for keyword_ids in due.values())
