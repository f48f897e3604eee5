"""Celery tasks of the recompute pipeline: small, idempotent, each calling one service."""

from celery import shared_task
from django.conf import settings

from metrics import services


@shared_task(
    name="metrics.recompute_keyword", time_limit=60, soft_time_limit=50,
    autoretry_for=(services.RecomputeConflict,), retry_backoff=0.2, max_retries=5,
)
def recompute_keyword(keyword_id: int) -> str:
    outcome = services.keyword_metrics_recompute(keyword_id=keyword_id)
    # Grades that arrived while this run computed found the keyword dirty and queued
    # nothing (metrics.receivers): the run that reads them is queued here.
    if outcome in ("ok", "error") and services.keyword_is_dirty(keyword_id=keyword_id):
        recompute_keyword.apply_async(
            (keyword_id,), countdown=settings.RECOMPUTE_DEBOUNCE_SECONDS or None)
    return outcome


@shared_task(name="metrics.recompute_evaluation", time_limit=1800, soft_time_limit=1780)
def recompute_evaluation(evaluation_id: int) -> int:
    return services.evaluation_metrics_recompute(evaluation_id=evaluation_id)


@shared_task(name="metrics.sweep_dirty_keywords", time_limit=60, soft_time_limit=50)
def sweep_dirty_keywords() -> int:
    """Re-enqueue keywords left dirty: a lost message or a stopped worker only delays values."""
    keyword_ids = services.dirty_keywords_due()
    for keyword_id in keyword_ids:
        recompute_keyword.delay(keyword_id)
    return len(keyword_ids)
