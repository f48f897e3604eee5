"""Celery tasks of the recompute pipeline: small, idempotent, each calling one service of
metrics.recompute (its package docstring describes when runs happen)."""

import logging

from celery import shared_task
from django.conf import settings
from django.db import transaction

from metrics.recompute import run, scheduling

logger = logging.getLogger(__name__)


@shared_task(
    name="metrics.recompute_keyword", time_limit=60, soft_time_limit=50, ignore_result=True,
    autoretry_for=(run.RecomputeConflict,), retry_backoff=0.2, max_retries=5,
)
def recompute_keyword(
    keyword_id: int, evaluation_id: int | None = None, deferred: bool = False
) -> str:
    """Recompute the dirty keywords of the keyword's evaluation and queue its next run
    (scheduling.keyword_recompute_scheduled).

    `evaluation_id`, when the sender knows it, lets a task whose evaluation has a run due
    end without a query; `deferred` marks that due run.
    """
    return scheduling.keyword_recompute_scheduled(
        keyword_id=keyword_id, evaluation_id=evaluation_id, deferred=deferred,
        eager=recompute_keyword.request.is_eager or recompute_keyword.app.conf.task_always_eager,
        send=_send_recompute)


def _send_recompute(keyword_id: int, evaluation_id: int | None, deferred: bool,
                    countdown: float | None) -> None:
    if deferred:
        recompute_keyword.apply_async(
            (keyword_id,), {"evaluation_id": evaluation_id, "deferred": True},
            countdown=countdown)
    else:
        recompute_keyword.apply_async((keyword_id,), {"evaluation_id": evaluation_id},
                                      countdown=countdown)


@shared_task(name="metrics.mark_pool_siblings_dirty", time_limit=60, soft_time_limit=50,
             ignore_result=True)
def mark_pool_siblings_dirty(keyword_ids: list[int]) -> int:
    """Grades of these keywords changed the pool of same-text keywords elsewhere in the
    team: mark those dirty (scheduling.pool_sibling_runs) and queue their runs."""
    runs = scheduling.pool_sibling_runs(keyword_ids=keyword_ids)
    for evaluation_id, keyword_id in runs.items():
        try:
            recompute_keyword.apply_async(
                (keyword_id,), {"evaluation_id": evaluation_id},
                countdown=settings.RECOMPUTE_DEBOUNCE_SECONDS or None)
        except Exception:
            # The siblings are marked dirty already: the sweep runs them later.
            logger.exception("could not enqueue the run of keyword %s; the sweep will",
                             keyword_id)
    return len(runs)


@shared_task(name="metrics.mark_fetched_dirty", time_limit=60, soft_time_limit=50,
             ignore_result=True)
def mark_fetched_dirty(keyword_id: int, evaluation_id: int, has_results: bool = True) -> bool:
    """mark_fetched_dirty_many for one keyword (messages queued before groups were)."""
    return mark_fetched_dirty_many(evaluation_id, [[keyword_id, has_results]]) > 0


@shared_task(name="metrics.mark_fetched_dirty_many", time_limit=300, soft_time_limit=280,
             ignore_result=True)
def mark_fetched_dirty_many(evaluation_id: int, keywords: list[list]) -> int:
    """A fetch stored this group of (keyword id, has results) together
    (scheduling.keywords_fetched_mark_dirty): mark them dirty at once and queue one run.
    How many were marked."""
    keywords = [(keyword_id, bool(has_results)) for keyword_id, has_results in keywords]
    marked = scheduling.keywords_fetched_mark_dirty(evaluation_id=evaluation_id,
                                                    keywords=keywords)
    if marked is None:
        return 0
    for run_evaluation_id, run_keyword_id in marked.runs.items():
        transaction.on_commit(
            lambda run=(run_keyword_id, run_evaluation_id): _send_after_mark(*run))
    return marked.marked_count


@shared_task(name="metrics.mark_empty_results_dirty", time_limit=60, soft_time_limit=50,
             ignore_result=True)
def mark_empty_results_dirty(keyword_id: int, evaluation_id: int) -> bool:
    """The name messages queued before mark_fetched_dirty carry (an empty fetch)."""
    return mark_fetched_dirty(keyword_id, evaluation_id, has_results=False)


def _send_after_mark(keyword_id: int, evaluation_id: int) -> None:
    try:
        recompute_keyword.apply_async(
            (keyword_id,), {"evaluation_id": evaluation_id},
            countdown=settings.RECOMPUTE_DEBOUNCE_SECONDS or None)
    except Exception:
        # The keyword is marked dirty already: the sweep runs it later.
        logger.exception("could not enqueue the run of keyword %s; the sweep will", keyword_id)


@shared_task(name="metrics.recompute_evaluation",
             time_limit=settings.RECOMPUTE_EVALUATION_TIME_LIMIT,
             soft_time_limit=settings.RECOMPUTE_EVALUATION_TIME_LIMIT - 20,
             autoretry_for=(run.RecomputeConflict,), retry_backoff=0.2, max_retries=5)
def recompute_evaluation(evaluation_id: int) -> int:
    """Recompute the whole evaluation (its metric configuration changed), then queue a run
    of any keyword still dirty (scheduling.recompute_evaluation_scheduled). Its keywords
    were marked dirty with the change: if this task is lost, the sweep runs them."""
    return scheduling.recompute_evaluation_scheduled(evaluation_id=evaluation_id,
                                                     send=_send_recompute)


@shared_task(name="metrics.refresh_after_keywords_deleted",
             time_limit=settings.RECOMPUTE_EVALUATION_TIME_LIMIT,
             soft_time_limit=settings.RECOMPUTE_EVALUATION_TIME_LIMIT - 20, ignore_result=True)
def refresh_after_keywords_deleted(evaluation_id: int) -> float | None:
    """Keywords of the evaluation were deleted: its counts, means and progress from what
    remains (scheduling.keywords_deleted_refresh); the progress stored. Each of its writes
    takes the evaluation's row first, as every writer of these rows does, so it waits for
    a run rather than deadlocking with it."""
    return scheduling.keywords_deleted_refresh(evaluation_id=evaluation_id)


@shared_task(name="metrics.sweep_dirty_keywords", time_limit=60, soft_time_limit=50)
def sweep_dirty_keywords() -> int:
    """Re-enqueue keywords left dirty: a lost message or a stopped worker only delays values.
    One run per evaluation reads all of its dirty keywords."""
    due = scheduling.dirty_keywords_due_by_evaluation()
    for keyword_ids in due.values():
        recompute_keyword.delay(keyword_ids[0])
    return sum(len(keyword_ids) for keyword_ids in due.values())


@shared_task(name="metrics.regression_verdict_on_finish", time_limit=300, soft_time_limit=280,
             ignore_result=True)
def regression_verdict_on_finish(evaluation_id: int) -> int | None:
    """Store the finished evaluation's verdict against its team's baseline
    (metrics.reports.verdicts.regression_verdict_on_finish); the verdict's id, or None. A crash is
    logged, not raised: the evaluation finished whatever happens here."""
    from metrics.reports.verdicts import regression_verdict_on_finish as on_finish

    try:
        verdict = on_finish(evaluation_id=evaluation_id)
    except Exception:
        logger.exception("the verdict of evaluation %s failed", evaluation_id)
        return None
    return verdict.pk if verdict else None
