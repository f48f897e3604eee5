"""Fetching an evaluation's keywords: claim, request (threads bounded per endpoint), store
the snapshots or the error, and move the evaluation from fetching to active.

A task claims each keyword with a conditional UPDATE that stamps `fetch_claimed_at`; the
stamp is the claim: storing, renewing or giving a keyword up quotes it, so a task whose
claim lapsed and was taken over writes nothing. A claim lapses when its task has gone
quiet longer than the endpoint's requests can take
(search_requests.fetch_claim_lease_seconds): its worker died. The periodic sweep
(dispatch.keywords_fetch_requeue_lapsed) and a new start then hand the keyword to another
task.
"""

import logging
import queue
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta

import httpx
from django.conf import settings
from django.db import transaction
from django.db.models import Exists, Max, OuterRef, Q
from django.utils import timezone

from evaluations import crypto
from evaluations.events import By, Transition, transition_announce
from evaluations.fetching.search_requests import (
    FetchResult,
    fetch_claim_lease_seconds,
    fetch_keyword_results,
    limits_make_requests_wait,
    new_client,
    request_spec_for,
)
from evaluations.models import Evaluation, Keyword, Snapshot
from evaluations.offline_runs.services import offline_results
from evaluations.services.completion import evaluation_finish_if_complete
from evaluations.signals import snapshots_created
from searchtweak import outbound_limits
from searchtweak.bulk_insert import bulk_insert, bulk_update

logger = logging.getLogger(__name__)

DEFAULT_SNAPSHOT_DEPTH = 10
# A fetch stores what completed together in one transaction (keywords_fetch_store): at
# most this many keywords or this long after the last store, whichever comes first.
STORE_GROUP_SIZE = 100
STORE_GROUP_SECONDS = 0.5
# An offline model's rankings are all there at once: fewer, larger stores (each commit's
# follow-up work, the metrics' marks and recompute, is paid per store), still bounded.
OFFLINE_STORE_GROUP_SIZE = 500


def snapshot_depth(*, evaluation: Evaluation) -> int:
    """How many results to keep per keyword: the deepest configured k (nothing below it is
    ever measured, so grading it would be wasted), within FETCH_MAX_RESULTS."""
    deepest = evaluation.metric_configs.aggregate(deepest=Max("k"))["deepest"]
    return min(deepest or DEFAULT_SNAPSHOT_DEPTH, settings.FETCH_MAX_RESULTS)


def keyword_fetch_claim(*, keyword_id: int, lease_seconds: float,
                        now: datetime | None = None) -> datetime | None:
    """Claim a keyword for fetching with one conditional UPDATE: it is pending, its
    evaluation fetching, and nobody holds it or its holder's claim is older than
    `lease_seconds`. Returns the claim, which the holder quotes to store, renew or give
    the keyword up; None when another task has it, it is done, or the evaluation paused."""
    now = now or timezone.now()
    # Every condition on the keyword's own row, none through a join: a join makes Django
    # write `WHERE id IN (SELECT …)`, which PostgreSQL does not re-check after waiting for
    # a concurrent claim's lock, so two tasks both won the keyword and both fetched it.
    fetching = Evaluation.objects.filter(status=Evaluation.Status.FETCHING).values("pk")
    won = Keyword.objects.filter(
        Q(fetch_claimed_at__isnull=True)
        | Q(fetch_claimed_at__lt=now - timedelta(seconds=lease_seconds)),
        pk=keyword_id, fetch_status=Keyword.FetchStatus.PENDING,
        evaluation_id__in=fetching,
    ).update(fetch_claimed_at=now) == 1
    return now if won else None


def keywords_fetch_claim(*, keyword_ids: list[int], lease_seconds: float,
                         now: datetime) -> dict[int, str]:
    """keyword_fetch_claim for a batch in one UPDATE, the same conditions on each row; the
    keywords won (id → text, in position order) are those now stamped `now`."""
    fetching = Evaluation.objects.filter(status=Evaluation.Status.FETCHING).values("pk")
    Keyword.objects.filter(
        Q(fetch_claimed_at__isnull=True)
        | Q(fetch_claimed_at__lt=now - timedelta(seconds=lease_seconds)),
        pk__in=keyword_ids, fetch_status=Keyword.FetchStatus.PENDING,
        evaluation_id__in=fetching,
    ).update(fetch_claimed_at=now)
    return dict(Keyword.objects.filter(
        pk__in=keyword_ids, fetch_status=Keyword.FetchStatus.PENDING, fetch_claimed_at=now,
    ).order_by("position").values_list("pk", "text"))


def keyword_fetch_claims_renew(*, keyword_ids: list[int], claimed_at: datetime) -> datetime:
    """Move the claims a task still holds (stamped `claimed_at`) to now; the new stamp."""
    now = timezone.now()
    Keyword.objects.filter(pk__in=keyword_ids, fetch_status=Keyword.FetchStatus.PENDING,
                           fetch_claimed_at=claimed_at).update(fetch_claimed_at=now)
    return now


def keyword_fetch_store(*, keyword_id: int, claimed_at: datetime,
                        result: FetchResult) -> Keyword | None:
    """Store one keyword's results or its error (keywords_fetch_store of one); None when
    the claim `claimed_at` no longer holds it (stored or taken over meanwhile)."""
    stored = keywords_fetch_store(claimed_at=claimed_at, results=[(keyword_id, result)])
    return stored[0] if stored else None


@transaction.atomic
def keywords_fetch_store(*, claimed_at: datetime,
                         results: list[tuple[int, FetchResult]]) -> list[Keyword]:
    """Store a group of keywords' results (snapshots + status) or errors in one
    transaction, each keyword whole, if the claim `claimed_at` still holds it; returns the
    keywords stored. A crash stores none of the group: its keywords stay pending and a
    retry (the sweep's re-queue) stores them once.

    The statements do not grow with the group: one SELECT … FOR UPDATE, one UPDATE of
    the keywords, the snapshots in one COPY (searchtweak.bulk_insert) and, from the
    snapshots_created signal inside this transaction, their feedback slots in another, so
    a snapshot never exists without its slots.
    """
    by_id = dict(results)
    # No select_related: it would build one Evaluation (and decode its JSON) per keyword
    # row, though a group's keywords share one evaluation (read once, below).
    # Whether a keyword already has snapshots is asked per locked row (EXISTS in the
    # select list, an index probe each): asked as `keyword_id IN (…)` of the snapshots,
    # a table the fetch is filling and PostgreSQL has no statistics for yet was read
    # whole at every store, 30 ms at 200,000 snapshots and growing with them.
    keywords = list(Keyword.objects.select_for_update().filter(
        pk__in=by_id, fetch_status=Keyword.FetchStatus.PENDING, fetch_claimed_at=claimed_at,
    ).annotate(holding=Exists(Snapshot.objects.filter(keyword_id=OuterRef("pk"))))
        .order_by("pk"))
    if not keywords:
        return []
    evaluations = Evaluation.objects.in_bulk({keyword.evaluation_id for keyword in keywords})
    for keyword in keywords:
        Keyword.evaluation.field.set_cached_value(keyword, evaluations[keyword.evaluation_id])
    now = timezone.now()
    fetched: list[Keyword] = []
    for keyword in keywords:
        result = by_id[keyword.pk]
        keyword.fetch_status_code = result.status_code
        keyword.fetch_duration_ms = result.duration_ms
        keyword.fetched_at = now
        keyword.fetch_claimed_at = None
        if result.ok:
            keyword.fetch_status, keyword.fetch_error = Keyword.FetchStatus.FETCHED, ""
            fetched.append(keyword)
        else:
            keyword.fetch_status, keyword.fetch_error = Keyword.FetchStatus.FAILED, result.error
    bulk_update(keywords, ["fetch_status", "fetch_status_code", "fetch_duration_ms",
                           "fetched_at", "fetch_claimed_at", "fetch_error"])
    # Snapshots are only ever written here, together with the FETCHED status; a keyword
    # that already has some (impossible unless rows were edited by hand) keeps them.
    fresh = [keyword for keyword in fetched if not keyword.holding]
    # Positional arguments, in the model's field order (id first): Django's quicker
    # path, and a fetch builds ten to a hundred snapshots a keyword.
    snapshots_by_keyword = {keyword: [
        Snapshot(None, keyword.pk, position, doc.doc_id, doc.name, doc.image, doc.fields)
        for position, doc in enumerate(by_id[keyword.pk].documents, start=1)
    ] for keyword in fresh}
    bulk_insert([snapshot for snapshots in snapshots_by_keyword.values()
                 for snapshot in snapshots], with_ids=True)
    for evaluation_id, group in _by_evaluation(snapshots_by_keyword).items():
        snapshots_created.send(sender=Evaluation, evaluation=evaluations[evaluation_id],
                               snapshots_by_keyword=group)
    return keywords


def _by_evaluation(snapshots_by_keyword: dict[Keyword, list[Snapshot]]
                   ) -> dict[int, dict[Keyword, list[Snapshot]]]:
    """A fetch task's keywords share one evaluation; a caller may mix them all the same."""
    grouped: dict[int, dict[Keyword, list[Snapshot]]] = {}
    for keyword, snapshots in snapshots_by_keyword.items():
        grouped.setdefault(keyword.evaluation_id, {})[keyword] = snapshots
    return grouped


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


def keyword_fetch_fail(*, keyword_ids: list[int], claimed_at: datetime, error: str) -> None:
    """Record keywords that a task claimed (`claimed_at`) and could not finish as failed,
    never as lost; those another task has taken over meanwhile are left to it."""
    Keyword.objects.filter(pk__in=keyword_ids, fetch_status=Keyword.FetchStatus.PENDING,
                           fetch_claimed_at=claimed_at).update(
        fetch_status=Keyword.FetchStatus.FAILED, fetch_error=error, fetch_claimed_at=None,
        fetched_at=timezone.now())


def evaluation_fetch_complete(*, evaluation_id: int) -> bool:
    """fetching → active once no keyword waits; safe to call from every task: the one
    whose conditional UPDATE moves the evaluation announces `fetched`, or `failed` when
    no keyword of the evaluation is fetched (nothing to grade); the others nothing. The
    one that announces `fetched` then asks the lifecycle's finish rule, whose
    `finished` follows `fetched`."""
    waiting = Keyword.objects.filter(evaluation_id=evaluation_id,
                                     fetch_status=Keyword.FetchStatus.PENDING).exists()
    if waiting:
        return False
    moved = Evaluation.objects.filter(pk=evaluation_id, status=Evaluation.Status.FETCHING).update(
        status=Evaluation.Status.ACTIVE) == 1
    if moved:
        team_id, any_fetched = Evaluation.objects.filter(pk=evaluation_id).annotate(
            any_fetched=Exists(Keyword.objects.filter(
                evaluation_id=OuterRef("pk"), fetch_status=Keyword.FetchStatus.FETCHED)),
        ).values_list("team_id", "any_fetched").get()
        transition_announce(
            evaluation_id=evaluation_id, team_id=team_id,
            transition=Transition.FETCHED if any_fetched else Transition.FAILED,
            previous_status=Evaluation.Status.FETCHING, status=Evaluation.Status.ACTIVE,
            by=By.SYSTEM)
        if any_fetched:
            # Reuse and the pool may have filled every new slot as it was stored: the
            # recomputes of those keywords asked while it was still fetching, and no grade
            # will come to ask again (a schedule's run of an unchanged model).
            evaluation_finish_if_complete(evaluation_id=evaluation_id)
    return moved


def keywords_fetch(
    *, evaluation_id: int, keyword_ids: list[int],
    transport: httpx.BaseTransport | None = None,
) -> int:
    """Fetch and store a batch of keywords; returns how many this call stored.

    Idempotent: keywords done, or held by a live claim of another task, are skipped, so a
    redelivered or duplicated task does nothing twice. Not one transaction: each keyword
    commits on its own, so progress shows while the batch runs and a crash loses at most
    the keywords in flight (their claims lapse). Requests run in threads, bounded per
    endpoint; every database write stays on this thread.
    """
    evaluation = Evaluation.objects.select_related("model__endpoint").filter(
        pk=evaluation_id, status=Evaluation.Status.FETCHING).first()
    if evaluation is None:
        return 0
    if evaluation.model.is_offline:
        return _keywords_fetch_offline(evaluation=evaluation, keyword_ids=keyword_ids)
    endpoint = evaluation.model.endpoint
    lease_seconds = fetch_claim_lease_seconds(
        endpoint.timeout_seconds, limited=limits_make_requests_wait(
            max_concurrent_requests=endpoint.max_concurrent_requests,
            requests_per_minute=endpoint.requests_per_minute))
    # One stamp for the batch: it renews and releases the task's claims in one statement.
    claimed_at = timezone.now()
    claimed = keywords_fetch_claim(keyword_ids=keyword_ids, lease_seconds=lease_seconds,
                                   now=claimed_at)
    if not claimed:
        evaluation_fetch_complete(evaluation_id=evaluation_id)
        return 0
    try:
        spec = request_spec_for(evaluation.model, limit=snapshot_depth(evaluation=evaluation))
    except crypto.SecretsUnreadable as error:
        keyword_fetch_fail(keyword_ids=list(claimed), claimed_at=claimed_at, error=str(error))
        evaluation_fetch_complete(evaluation_id=evaluation_id)
        return 0
    stored = 0
    pending = set(claimed)
    # The lease bounds one keyword's fetch, not the batch's: claims still waiting are
    # renewed as results come in, at least every half margin.
    renew_every = settings.FETCH_CLAIM_MARGIN_SECONDS / 2
    renewed = time.monotonic()
    # An in-process transport (seed_demo's) answers from this database, so it must run on
    # this thread, whose connection sees the catalog; real HTTP runs in threads.
    workers = 1 if transport is not None else settings.FETCH_CONCURRENCY_PER_ENDPOINT
    try:
        with new_client(timeout_seconds=spec.timeout_seconds, transport=transport) as client:
            for group in _results(spec, claimed, client=client, workers=workers):
                # Results that completed together commit together: one commit instead of
                # many when storing lags behind the network; each keyword stays whole.
                stored += len(keywords_fetch_store(claimed_at=claimed_at, results=group))
                pending.difference_update(keyword_id for keyword_id, _ in group)
                if pending and time.monotonic() - renewed >= renew_every:
                    claimed_at = keyword_fetch_claims_renew(keyword_ids=list(pending),
                                                            claimed_at=claimed_at)
                    renewed = time.monotonic()
    finally:
        if pending:
            keyword_fetch_fail(keyword_ids=list(pending), claimed_at=claimed_at,
                               error="the fetch task stopped before this keyword was stored")
        evaluation_fetch_complete(evaluation_id=evaluation_id)
    return stored


def _keywords_fetch_offline(*, evaluation: Evaluation, keyword_ids: list[int]) -> int:
    """keywords_fetch for an offline model: the rankings come from its run file, not
    requests, and are stored by the same path (keywords_fetch_store), so slots, metrics and
    the finish rule answer as they do for an endpoint's results."""
    claimed_at = timezone.now()
    claimed = keywords_fetch_claim(keyword_ids=keyword_ids,
                                   lease_seconds=settings.FETCH_CLAIM_MARGIN_SECONDS,
                                   now=claimed_at)
    stored = 0
    try:
        results = offline_results(model=evaluation.model, keywords=claimed,
                                  limit=snapshot_depth(evaluation=evaluation))
        for start in range(0, len(results), OFFLINE_STORE_GROUP_SIZE):
            stored += len(keywords_fetch_store(
                claimed_at=claimed_at,
                results=results[start:start + OFFLINE_STORE_GROUP_SIZE]))
    finally:
        keyword_fetch_fail(keyword_ids=list(claimed), claimed_at=claimed_at,
                           error="the fetch task stopped before this keyword was stored")
        evaluation_fetch_complete(evaluation_id=evaluation.pk)
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
    # Each request thread hands its result to a queue as it completes: waiting on the
    # futures themselves (concurrent.futures.wait, FIRST_COMPLETED) visits every pending
    # future on each call, quadratic in the batch (500 futures, 500 calls), all of it
    # holding the GIL the request threads need.
    done: queue.SimpleQueue[tuple[int, FetchResult]] = queue.SimpleQueue()

    def run(keyword_id: int, text: str) -> None:
        # The loop below counts results down to zero: a thread ended by anything `guarded`
        # does not catch (a BaseException) must still hand one in, or the loop never ends.
        result = FetchResult(error="internal error: the request thread stopped")
        try:
            result = guarded(text)
        finally:
            done.put((keyword_id, result))

    todo: queue.SimpleQueue[tuple[int, str]] = queue.SimpleQueue()
    for item in keywords.items():
        todo.put(item)

    def work() -> None:
        # One loop per thread, not a task per keyword, so the thread keeps its turn of the
        # endpoint's limit from one request to the next (outbound_limits.turns_kept).
        with outbound_limits.turns_kept():
            while True:
                try:
                    keyword_id, text = todo.get_nowait()
                except queue.Empty:
                    return
                try:
                    run(keyword_id, text)
                except BaseException:  # run has handed in its result; go on with the rest
                    logger.exception("a request thread's keyword %s stopped", keyword_id)

    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="fetch") as pool:
        for _ in range(min(workers, len(keywords))):
            pool.submit(work)
        left = len(keywords)
        ready: list[tuple[int, FetchResult]] = []
        flushed = time.monotonic()
        while left:
            # Results gather while the requests run (the pool keeps `workers` in flight):
            # a group is stored once STORE_GROUP_SIZE wait or STORE_GROUP_SECONDS passed,
            # so a write's fixed cost (its statements and commit) is paid per group, not
            # per keyword, and a keyword waits at most that long to show as stored.
            timeout = STORE_GROUP_SECONDS - (time.monotonic() - flushed)
            try:
                ready.append(done.get(timeout=timeout) if timeout > 0 else
                             done.get_nowait())
                left -= 1
                while left and len(ready) < STORE_GROUP_SIZE:
                    ready.append(done.get_nowait())
                    left -= 1
            except queue.Empty:
                pass
            # Once every request has started, what is ready is stored at once: the task
            # ends when its last store does, and its worker's requests wait for the next
            # task meanwhile, so a group left to fill up then would keep them all idle.
            if ready and (len(ready) >= STORE_GROUP_SIZE or not left or todo.empty()
                          or time.monotonic() - flushed >= STORE_GROUP_SECONDS):
                yield ready
                ready, flushed = [], time.monotonic()
