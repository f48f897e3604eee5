"""Handing an evaluation's keywords to fetch tasks: after commit, in batches, and again
when their task was lost (its claim lapsed, or the broker never took it).

The tasks (evaluations.tasks) call evaluations.fetching.services back, so this module does
not import them: the dispatcher is handed over when the app is ready.
"""

import logging
from collections.abc import Callable
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from evaluations.fetching.search_requests import (
    fetch_claim_lease_seconds,
    limits_make_requests_wait,
)
from evaluations.models import Evaluation, Keyword

logger = logging.getLogger(__name__)


FetchDispatcher = Callable[[int, list[int]], None]
"""Sends (evaluation id, keyword ids) to a fetch task: evaluations.tasks.fetch_keywords_dispatch;
raises FetchNotSent when the broker does not take it."""


class FetchNotSent(Exception):
    """The broker could not be reached to take a fetch task (it is down, or its address is
    wrong): the keywords it carried wait for nobody."""


_dispatcher: FetchDispatcher | None = None


def keywords_fetch_dispatcher_register(dispatcher: FetchDispatcher) -> None:
    """The fetch tasks call these services, so this module does not import them (no
    import cycle): evaluations.tasks hands its dispatcher over when the app is ready
    (EvaluationsConfig.ready), as judgments hands evaluations its scales."""
    global _dispatcher
    _dispatcher = dispatcher


# A task of MAX_BATCH_GROWTH x FETCH_BATCH_SIZE keywords (2,000), 16 at a time, still ends
# within FETCH_TASK_TIME_LIMIT (1,800 s) with answers of up to 14 s each.
MAX_BATCH_GROWTH = 4


def keywords_fetch_enqueue(*, evaluation_id: int, keyword_ids: list[int],
                           stamped: bool = False) -> None:
    """Send the keywords' fetch tasks after commit, fetch_batch_size keywords a task, and
    stamp the evaluation's fetch_sent_at (unless the caller wrote it: `stamped`). A send
    the broker refuses raises FetchNotSent from the commit (the outermost atomic block's
    end), after the writes committed and before the later batches are sent."""
    dispatch = _dispatcher
    if dispatch is None:
        raise RuntimeError("no fetch dispatcher: EvaluationsConfig.ready registers it")
    # Stamped as sent before the send: a send the broker refuses leaves keywords no task
    # will claim, which the sweep sends again FETCH_RESEND_AFTER_SECONDS after this.
    if not stamped:
        Evaluation.objects.filter(pk=evaluation_id).update(fetch_sent_at=timezone.now())
    size = fetch_batch_size(evaluation_id=evaluation_id, keywords=len(keyword_ids))
    for start in range(0, len(keyword_ids), size):
        batch = keyword_ids[start:start + size]
        transaction.on_commit(lambda batch=batch: dispatch(evaluation_id, batch))


def fetch_batch_size(*, evaluation_id: int, keywords: int) -> int:
    """FETCH_BATCH_SIZE keywords a task, or more (up to MAX_BATCH_GROWTH times) so that a
    large fetch is at most FETCH_MAX_BATCHES tasks: each task pays a fixed cost (its claim,
    its last requests alone in flight, its last store). Not when the endpoint's own limits
    make requests wait: the batch does not change their pace, and its task would run
    longer, towards FETCH_TASK_TIME_LIMIT."""
    size = settings.FETCH_BATCH_SIZE
    wanted = -(-keywords // settings.FETCH_MAX_BATCHES)
    if wanted <= size:
        return size
    limits = Evaluation.objects.filter(pk=evaluation_id).values_list(
        "model__endpoint__max_concurrent_requests",
        "model__endpoint__requests_per_minute").first()
    if limits is None or limits_make_requests_wait(max_concurrent_requests=limits[0],
                                                   requests_per_minute=limits[1]):
        return size
    return min(wanted, MAX_BATCH_GROWTH * size)


def keywords_fetch_requeue_lapsed() -> int:
    """Send fetch tasks for the pending keywords of fetching evaluations that no live task
    holds; how many. Those whose claim lapsed (the worker of their task died mid-fetch),
    and those never claimed long after their tasks were sent (keywords_fetch_resend_unsent).
    The tasks claim them again, so a keyword another task took meanwhile is not fetched
    twice."""
    now = timezone.now()
    resent = keywords_fetch_resend_unsent(now=now)
    claims = Keyword.objects.filter(
        fetch_status=Keyword.FetchStatus.PENDING, fetch_claimed_at__isnull=False,
        evaluation__status=Evaluation.Status.FETCHING,
    ).order_by("evaluation_id", "position").values_list(
        "pk", "evaluation_id", "fetch_claimed_at", "evaluation__model__endpoint__timeout_seconds",
        "evaluation__model__endpoint__max_concurrent_requests",
        "evaluation__model__endpoint__requests_per_minute")
    lapsed: dict[int, list[int]] = {}
    for keyword_id, evaluation_id, claimed_at, timeout_seconds, concurrent, per_minute in claims:
        # An offline model has no endpoint (timeout None): its fetch sends no request, so
        # its lease is the storing margin alone, as _keywords_fetch_offline claims it.
        lease = timedelta(seconds=settings.FETCH_CLAIM_MARGIN_SECONDS) if (
            timeout_seconds is None) else timedelta(seconds=fetch_claim_lease_seconds(
            timeout_seconds, limited=limits_make_requests_wait(
                max_concurrent_requests=concurrent, requests_per_minute=per_minute)))
        if claimed_at < now - lease:
            lapsed.setdefault(evaluation_id, []).append(keyword_id)
    for evaluation_id, keyword_ids in lapsed.items():
        logger.warning("re-queueing %d keywords of evaluation %s: their fetch task was lost",
                       len(keyword_ids), evaluation_id)
        keywords_fetch_enqueue(evaluation_id=evaluation_id, keyword_ids=keyword_ids)
    return resent + sum(len(keyword_ids) for keyword_ids in lapsed.values())


def keywords_fetch_resend_unsent(*, now: datetime) -> int:
    """Send again the unclaimed pending keywords of each fetching evaluation whose tasks
    were sent over FETCH_RESEND_AFTER_SECONDS ago (or never stamped) and of which no
    keyword is claimed now: the broker refused the send, or the process that committed
    the start died before sending. An evaluation with a claimed keyword has a task at
    work and is left alone. Each send stamps the evaluation again, so a fetch queued
    behind other work gets at most one copy of its tasks per FETCH_RESEND_AFTER_SECONDS;
    how many keywords were sent."""
    due = now - timedelta(seconds=settings.FETCH_RESEND_AFTER_SECONDS)
    claimed = Keyword.objects.filter(evaluation_id=OuterRef("pk"),
                                     fetch_status=Keyword.FetchStatus.PENDING,
                                     fetch_claimed_at__isnull=False)
    stalled = Evaluation.objects.filter(
        Q(fetch_sent_at__lt=due) | Q(fetch_sent_at__isnull=True),
        status=Evaluation.Status.FETCHING,
    ).exclude(Exists(claimed)).values_list("pk", flat=True)
    sent = 0
    for evaluation_id in stalled:
        keyword_ids = list(Keyword.objects.filter(
            evaluation_id=evaluation_id, fetch_status=Keyword.FetchStatus.PENDING,
            fetch_claimed_at__isnull=True).order_by("position").values_list("pk", flat=True))
        if not keyword_ids:
            continue
        logger.warning("sending again %d keywords of evaluation %s: no task claimed them "
                       "since they were sent", len(keyword_ids), evaluation_id)
        keywords_fetch_enqueue(evaluation_id=evaluation_id, keyword_ids=keyword_ids)
        sent += len(keyword_ids)
    return sent
