"""Fetching an evaluation's keywords: claim, request (threads bounded per endpoint), store
the snapshots or the error, and move the evaluation from fetching to active."""

import logging
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from datetime import timedelta

import httpx
from django.conf import settings
from django.db import transaction
from django.db.models import Max, Q
from django.utils import timezone

from evaluations import crypto
from evaluations.fetching import FetchResult, fetch_keyword_results, new_client, request_spec_for
from evaluations.models import Evaluation, Keyword, Snapshot
from evaluations.signals import snapshots_created

logger = logging.getLogger(__name__)

DEFAULT_SNAPSHOT_DEPTH = 10
# A claim older than the fetch task's hard time limit belongs to a worker that died.
FETCH_CLAIM_LEASE = timedelta(seconds=1800)


def snapshot_depth(*, evaluation: Evaluation) -> int:
    """How many results to keep per keyword: the deepest configured k (nothing below it is
    ever measured, so grading it would be wasted), within FETCH_MAX_RESULTS."""
    deepest = evaluation.metric_configs.aggregate(deepest=Max("k"))["deepest"]
    return min(deepest or DEFAULT_SNAPSHOT_DEPTH, settings.FETCH_MAX_RESULTS)


def keyword_fetch_claim(*, keyword_id: int) -> bool:
    """Claim a keyword for fetching with one conditional UPDATE; False when another task has
    it, it is done, or its evaluation is no longer fetching (paused)."""
    now = timezone.now()
    return Keyword.objects.filter(
        Q(fetch_claimed_at__isnull=True) | Q(fetch_claimed_at__lt=now - FETCH_CLAIM_LEASE),
        pk=keyword_id, fetch_status=Keyword.FetchStatus.PENDING,
        evaluation__status=Evaluation.Status.FETCHING,
    ).update(fetch_claimed_at=now) == 1


@transaction.atomic
def keyword_fetch_store(*, keyword_id: int, result: FetchResult) -> Keyword | None:
    """Store one keyword's results (snapshots + status) or its error, all or nothing.

    Judgments creates the feedback slots from the snapshots_created signal inside this
    transaction, so a snapshot never exists without its slots.
    """
    keyword = Keyword.objects.select_for_update().select_related("evaluation").filter(
        pk=keyword_id, fetch_status=Keyword.FetchStatus.PENDING,
        fetch_claimed_at__isnull=False).first()
    if keyword is None:
        return None  # stored by someone else meanwhile
    keyword.fetch_status_code = result.status_code
    keyword.fetch_duration_ms = result.duration_ms
    keyword.fetched_at = timezone.now()
    keyword.fetch_claimed_at = None
    update_fields = ["fetch_status", "fetch_status_code", "fetch_duration_ms", "fetched_at",
                     "fetch_claimed_at", "fetch_error"]
    if not result.ok:
        keyword.fetch_status = Keyword.FetchStatus.FAILED
        keyword.fetch_error = result.error
        keyword.save(update_fields=update_fields)
        return keyword
    keyword.fetch_status = Keyword.FetchStatus.FETCHED
    keyword.fetch_error = ""
    keyword.save(update_fields=update_fields)
    # Snapshots are only ever written here, together with the FETCHED status; a keyword
    # that already has some (impossible unless rows were edited by hand) keeps them.
    if not keyword.snapshots.exists():
        snapshots = Snapshot.objects.bulk_create([
            Snapshot(keyword=keyword, position=position, doc_id=doc.doc_id, name=doc.name,
                     image=doc.image, fields=doc.fields)
            for position, doc in enumerate(result.documents, start=1)
        ])
        snapshots_created.send(sender=Evaluation, evaluation=keyword.evaluation,
                               keyword=keyword, snapshots=snapshots)
    return keyword


def keywords_fetch_abandon(*, evaluation_id: int, keyword_ids: list[int], error: str) -> int:
    """Record the keywords of a batch that crashed before storing them as failed, claimed
    or not, so the evaluation ends instead of fetching forever; how many were recorded."""
    abandoned = Keyword.objects.filter(
        pk__in=keyword_ids, evaluation_id=evaluation_id,
        fetch_status=Keyword.FetchStatus.PENDING,
    ).update(fetch_status=Keyword.FetchStatus.FAILED, fetch_error=error, fetch_claimed_at=None,
             fetched_at=timezone.now())
    evaluation_fetch_complete(evaluation_id=evaluation_id)
    return abandoned


def keyword_fetch_fail(*, keyword_ids: list[int], error: str) -> None:
    """Record claimed keywords that a task could not finish as failed, never as lost."""
    Keyword.objects.filter(pk__in=keyword_ids, fetch_status=Keyword.FetchStatus.PENDING,
                           fetch_claimed_at__isnull=False).update(
        fetch_status=Keyword.FetchStatus.FAILED, fetch_error=error, fetch_claimed_at=None,
        fetched_at=timezone.now())


def evaluation_fetch_complete(*, evaluation_id: int) -> bool:
    """fetching → active once no keyword waits; safe to call from every task."""
    waiting = Keyword.objects.filter(evaluation_id=evaluation_id,
                                     fetch_status=Keyword.FetchStatus.PENDING).exists()
    if waiting:
        return False
    return Evaluation.objects.filter(pk=evaluation_id, status=Evaluation.Status.FETCHING).update(
        status=Evaluation.Status.ACTIVE) == 1


def keywords_fetch(
    *, evaluation_id: int, keyword_ids: list[int],
    transport: httpx.BaseTransport | None = None,
) -> int:
    """Fetch and store a batch of keywords; returns how many this call stored.

    Not one transaction: each keyword commits on its own, so progress shows while the batch
    runs and a crash loses at most the keywords in flight (their claims expire). Requests
    run in threads, bounded per endpoint; every database write stays on this thread.
    """
    evaluation = Evaluation.objects.select_related("model__endpoint").filter(
        pk=evaluation_id, status=Evaluation.Status.FETCHING).first()
    if evaluation is None:
        return 0
    claimed = {kid: text for kid, text in Keyword.objects.filter(pk__in=keyword_ids)
               .values_list("pk", "text") if keyword_fetch_claim(keyword_id=kid)}
    if not claimed:
        evaluation_fetch_complete(evaluation_id=evaluation_id)
        return 0
    try:
        spec = request_spec_for(evaluation.model, limit=snapshot_depth(evaluation=evaluation))
    except crypto.SecretsUnreadable as error:
        keyword_fetch_fail(keyword_ids=list(claimed), error=str(error))
        evaluation_fetch_complete(evaluation_id=evaluation_id)
        return 0
    stored = 0
    pending = set(claimed)
    # An in-process transport (seed_demo's) answers from this database, so it must run on
    # this thread, whose connection sees the catalog; real HTTP runs in threads.
    workers = 1 if transport is not None else settings.FETCH_CONCURRENCY_PER_ENDPOINT
    try:
        with new_client(timeout_seconds=spec.timeout_seconds, transport=transport) as client:
            for group in _results(spec, claimed, client=client, workers=workers):
                # Results that completed together commit together: one commit instead of
                # many when storing lags behind the network; each keyword stays whole.
                with transaction.atomic():
                    for keyword_id, result in group:
                        keyword_fetch_store(keyword_id=keyword_id, result=result)
                pending.difference_update(keyword_id for keyword_id, _ in group)
                stored += len(group)
    finally:
        if pending:
            keyword_fetch_fail(keyword_ids=list(pending),
                               error="the fetch task stopped before this keyword was stored")
        evaluation_fetch_complete(evaluation_id=evaluation_id)
    return stored


def _results(spec, keywords: dict[int, str], *, client: httpx.Client,
             workers: int) -> Iterator[list[tuple[int, FetchResult]]]:
    """Groups of (keyword id, result), each group what completed since the last one,
    with at most `workers` requests at a time."""
    def guarded(text: str) -> FetchResult:
        try:
            return fetch_keyword_results(spec, text, client=client)
        except Exception as error:  # a bug must cost one keyword, not the batch
            logger.exception("fetching %r failed", text)
            return FetchResult(error=f"internal error: {type(error).__name__}: {error}")

    if workers == 1:
        for keyword_id, text in keywords.items():
            yield [(keyword_id, guarded(text))]
        return
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="fetch") as pool:
        futures = {pool.submit(guarded, text): kid for kid, text in keywords.items()}
        waiting = set(futures)
        while waiting:
            done, waiting = wait(waiting, return_when=FIRST_COMPLETED)
            yield [(futures[future], future.result()) for future in done]
