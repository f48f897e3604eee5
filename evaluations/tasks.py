"""Celery tasks of evaluations: fetching keywords' results into snapshots."""

import logging
from functools import partial

import kombu.exceptions
from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import DatabaseError

from evaluations.fetching import dispatch as fetch_dispatch
from evaluations.fetching import services as fetch_services
from searchtweak.background import BackgroundThreads, background_run

logger = logging.getLogger(__name__)


@shared_task(
    name="evaluations.fetch_keywords",
    # Acknowledged once done, and put back when the process running it dies: the message
    # of a killed worker returns (at once from a lost pool process, after the broker's
    # visibility timeout from a vanished worker) and finds what was stored done. Claims
    # (search_requests.fetch_claim_lease_seconds) and the sweep below bring the rest back sooner.
    acks_late=True, reject_on_worker_lost=True,
    soft_time_limit=settings.FETCH_TASK_TIME_LIMIT - 60,
    time_limit=settings.FETCH_TASK_TIME_LIMIT,
    # HTTP retries happen per keyword inside the task; these cover a database hiccup.
    autoretry_for=(DatabaseError,), retry_backoff=2, retry_backoff_max=60, max_retries=3,
    # What it did is in the database; nobody reads its result. Sending one also touched
    # the result store (the broker's Redis by default), whose reconnecting held a start
    # for a minute when Redis was down and then failed with a RuntimeError.
    ignore_result=True,
)
def fetch_keywords(evaluation_id: int, keyword_ids: list[int]) -> int:
    """Fetch a batch of keywords. Idempotent: each keyword is claimed with a conditional
    UPDATE, so a redelivered or duplicated task skips what is done or in flight."""
    try:
        return fetch_services.keywords_fetch(evaluation_id=evaluation_id, keyword_ids=keyword_ids)
    except SoftTimeLimitExceeded:
        # keywords_fetch already recorded the unfinished keywords as failed.
        return 0


@shared_task(name="evaluations.sweep_stalled_fetches", time_limit=60, soft_time_limit=50)
def sweep_stalled_fetches() -> int:
    """Re-queue the keywords whose fetch claim lapsed (their worker died mid-fetch); how
    many. Celery beat runs it every FETCH_SWEEP_EVERY_SECONDS."""
    return fetch_dispatch.keywords_fetch_requeue_lapsed()


# Two batches at a time: SQLite takes one writer anyway, and each batch already sends up to
# FETCH_CONCURRENCY_PER_ENDPOINT requests at once.
_background = BackgroundThreads("embedded-fetch", workers=2)


def fetch_keywords_dispatch(evaluation_id: int, keyword_ids: list[int]) -> None:
    """Send a batch to the Celery workers, or in the embedded mode fetch it on a background
    thread (searchtweak.background), so the request that started it answers at once rather
    than after the whole fetch. fetching.dispatch.keywords_fetch_enqueue calls it after
    commit (registered in EvaluationsConfig.ready)."""
    try:
        _background.send(fetch_keywords, evaluation_id, keyword_ids, background=partial(
            fetch_keywords_in_background, evaluation_id, keyword_ids))
    except kombu.exceptions.OperationalError as error:
        # Celery has tried (task_publish_retry) and gives up: the caller decides what the
        # evaluation becomes (services.lifecycle puts a start back to pending).
        raise fetch_dispatch.FetchNotSent(f"the task broker cannot be reached: {error}") from error


def fetch_keywords_in_background(evaluation_id: int, keyword_ids: list[int]) -> int:
    """fetch_keywords on a thread of the web process: a crash is logged and leaves the
    batch's keywords failed, never pending, and the thread's connection is closed."""
    def abandon(error: Exception) -> None:
        fetch_services.keywords_fetch_abandon(
            evaluation_id=evaluation_id, keyword_ids=keyword_ids,
            error=f"internal error: {type(error).__name__}: {error}")

    fetched = background_run(
        lambda: fetch_services.keywords_fetch(evaluation_id=evaluation_id, keyword_ids=keyword_ids),
        what=f"fetching keywords of evaluation {evaluation_id}", on_crash=abandon)
    return fetched or 0
