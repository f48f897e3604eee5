"""Celery tasks of evaluations: fetching keywords' results into snapshots."""

import logging
from concurrent.futures import ThreadPoolExecutor

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import DatabaseError, connection

from evaluations import services

logger = logging.getLogger(__name__)


@shared_task(
    name="evaluations.fetch_keywords",
    # Acknowledged once done, and put back when the process running it dies: the message
    # of a killed worker returns (at once from a lost pool process, after the broker's
    # visibility timeout from a vanished worker) and finds what was stored done. Claims
    # (fetching.fetch_claim_lease_seconds) and the sweep below bring the rest back sooner.
    acks_late=True, reject_on_worker_lost=True,
    soft_time_limit=settings.FETCH_TASK_TIME_LIMIT - 60,
    time_limit=settings.FETCH_TASK_TIME_LIMIT,
    # HTTP retries happen per keyword inside the task; these cover a database hiccup.
    autoretry_for=(DatabaseError,), retry_backoff=2, retry_backoff_max=60, max_retries=3,
)
def fetch_keywords(evaluation_id: int, keyword_ids: list[int]) -> int:
    """Fetch a batch of keywords. Idempotent: each keyword is claimed with a conditional
    UPDATE, so a redelivered or duplicated task skips what is done or in flight."""
    try:
        return services.keywords_fetch(evaluation_id=evaluation_id, keyword_ids=keyword_ids)
    except SoftTimeLimitExceeded:
        # keywords_fetch already recorded the unfinished keywords as failed.
        return 0


@shared_task(name="evaluations.sweep_stalled_fetches", time_limit=60, soft_time_limit=50)
def sweep_stalled_fetches() -> int:
    """Re-queue the keywords whose fetch claim lapsed (their worker died mid-fetch); how
    many. Celery beat runs it every FETCH_SWEEP_EVERY_SECONDS."""
    return services.keywords_fetch_requeue_lapsed()


# Two batches at a time: SQLite takes one writer anyway, and each batch already sends up to
# FETCH_CONCURRENCY_PER_ENDPOINT requests at once.
_background = ThreadPoolExecutor(max_workers=2, thread_name_prefix="embedded-fetch")


def fetch_keywords_dispatch(evaluation_id: int, keyword_ids: list[int]) -> None:
    """Send a batch to the Celery workers. Without a broker (tasks run eagerly) and with
    EMBEDDED_TASKS_IN_BACKGROUND, fetch it on a background thread of this process instead,
    so the request that started it answers at once rather than after the whole fetch."""
    from searchtweak.celery import app

    if settings.EMBEDDED_TASKS_IN_BACKGROUND and app.conf.task_always_eager:
        _background.submit(fetch_keywords_in_background, evaluation_id, keyword_ids)
        return
    fetch_keywords.delay(evaluation_id, keyword_ids)


def fetch_keywords_in_background(evaluation_id: int, keyword_ids: list[int]) -> int:
    """fetch_keywords on a thread of the web process: a crash is logged and leaves the
    batch's keywords failed, never pending, and the thread's connection is closed."""
    try:
        return services.keywords_fetch(evaluation_id=evaluation_id, keyword_ids=keyword_ids)
    except Exception as error:
        logger.exception("fetching keywords of evaluation %s in the background failed",
                         evaluation_id)
        try:
            services.keywords_fetch_abandon(
                evaluation_id=evaluation_id, keyword_ids=keyword_ids,
                error=f"internal error: {type(error).__name__}: {error}")
        except Exception:
            logger.exception("could not record the failed keywords of evaluation %s",
                             evaluation_id)
        return 0
    finally:
        connection.close()
