"""Celery tasks of evaluations: fetching keywords' results into snapshots."""

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded
from django.db import DatabaseError

from evaluations import services


@shared_task(
    name="evaluations.fetch_keywords", acks_late=True,
    # A batch of FETCH_BATCH_SIZE keywords with retries fits well inside; the claim lease
    # (services.FETCH_CLAIM_LEASE) equals the hard limit so a killed task's keywords return.
    soft_time_limit=1740, time_limit=1800,
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
