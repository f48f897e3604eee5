"""Batches of a judge run, what a Celery lane repeats: claim whole batches (up to
batch_size pairs of one keyword each, several batches in one claim) and, in counting
modes, the judge's slot of each pair; answer each batch from the cache or with one call;
store what the claims still own (judges.runs states the rules).

A lane keeps up to `lane_width` calls in flight at once on a small thread pool (the calls
wait on the network, not on the CPU), so one worker process does what took one process
per call. The database work is done per group of batches, by the lane's own thread: a
claim keeps a round of batches ahead of the calls, half a round at a time, with one read
of their results and of the cache; a store takes the answers of half a round (or what
came back within STORE_HOLD_SECONDS): their items, the judge's slots and grades, one
announcement of the graded keywords, the run's counters. Each call is still logged,
counted and reserved against the budgets as it leaves, from its thread.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal

import httpx
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import connection, connections, transaction
from django.db.models import F
from django.db.models.functions import Mod
from django.urls import reverse
from django.utils import timezone

from evaluations.models import Snapshot
from judges import budgets, calls, queries, token_counts
from judges.core.cache import cache_key
from judges.core.prompts import Document, PromptError, build_prompt, images_to_send
from judges.models import Judge, JudgeAnswer, JudgeRun, JudgeRunItem
from judges.run_selectors import token_cost
from judgments import grading
from judgments import scales as scale_lookup
from judgments.models import FeedbackSlot
from notifications.models import Event
from notifications.services import notify
from searchtweak import sql

logger = logging.getLogger(__name__)

Mode, Status, ItemStatus = JudgeRun.Mode, JudgeRun.Status, JudgeRunItem.Status
COUNTING_MODES = (Mode.UNGRADED, Mode.FILL)
# Beyond the longest a call can take: a claim outliving this means its worker is gone.
LEASE_MARGIN_SECONDS = 30.0
# How long a lane holds answers to store them with the next ones (judges.batches.lane_run).
STORE_HOLD_SECONDS = 0.1


def lease_seconds(judge: Judge) -> float:
    return calls.call_deadline_seconds(judge) + LEASE_MARGIN_SECONDS


@dataclass
class _Outcome:
    grade: int | None = None
    reason: str = ""
    failure: str = ""
    detail: str = ""
    from_cache: bool = False
    cache_key: str = ""


@dataclass(frozen=True)
class Lane:
    """Which share of the keywords a lane takes first: lanes that start on the same keyword
    split its batch between them (more calls, each with fewer documents)."""

    number: int = 0
    of: int = 1


ONE_LANE = Lane()


def lane_calls(judge: Judge) -> int:
    """How many calls a lane holds in flight where lanes run (a worker): the judge's
    concurrency, at most JUDGE_LANE_CALLS (more lanes share the rest,
    judges.runs.lane_count). One on SQLite: it takes one writer at a time, and a call's
    thread logging itself while the lane stores met "database is locked"."""
    if connection.vendor == "sqlite":
        return 1
    return max(1, min(judge.max_concurrent_requests or 1, settings.JUDGE_LANE_CALLS))


def lane_width(judge: Judge) -> int:
    """How many calls this lane holds: lane_calls, or one inside an open transaction (an
    eager run in a caller's atomic block): a call's thread has a connection of its own,
    which does not see that transaction's rows. Only the lane itself asks this: the run's
    start counts lanes with lane_calls, since its own transaction is not the lanes'."""
    if connection.in_atomic_block:
        return 1
    return lane_calls(judge)


def run_for_batches(run_id: int) -> JudgeRun | None:
    """The run with what every batch reads (judge, its account, the evaluation), loaded
    once per lane; its status is checked by each claim, not from this copy."""
    return JudgeRun.objects.select_related("judge__user", "evaluation").filter(
        pk=run_id).first()


def run_batch_process(*, run_id: int, client: httpx.Client | None = None,
                      lane: Lane = ONE_LANE) -> int:
    run = run_for_batches(run_id)
    return batch_process(run=run, client=client, lane=lane) if run else 0


@dataclass
class _Batch:
    """One call's worth of a claim: its items (the still claimed ones), what it asks, and
    what came back."""

    items: list[JudgeRunItem]
    keyword: str = ""
    documents: dict[int, Document] = field(default_factory=dict)
    outcomes: dict[int, _Outcome] = field(default_factory=dict)
    asking: list[JudgeRunItem] = field(default_factory=list)
    scale: object = None
    reserved: Decimal = Decimal(0)
    over_budget: bool = False
    result: calls.AskResult | None = None
    error: BaseException | None = None


def batch_process(*, run: JudgeRun, client: httpx.Client | None = None,
                  lane: Lane = ONE_LANE) -> int:
    """Claim a batch of one keyword's pairs, answer it (cache, else one call), store the
    answers; how many pairs it claimed (0: nothing to claim now, or the run is no longer
    running)."""
    claimed, ready = _group_start(run=run, lane=lane, count=1)
    if not claimed:
        finish_if_done(run)
        return 0
    for batch in ready:
        if batch.asking:
            _ask(run=run, batch=batch, client=client)
    _group_store(run=run, batches=[_concluded(run, batch) for batch in ready])
    return claimed


def lane_run(*, run: JudgeRun, client: httpx.Client, lane: Lane = ONE_LANE,
             seconds: float, width: int | None = None) -> bool:
    """Batches until nothing is claimable or `seconds` pass, up to `width` calls in flight
    (lane_width); whether work may remain. Exceptions from claiming or storing end the
    lane (tasks.lane_work counts them); a batch's own failure fails only its pairs."""
    width = width or lane_width(run.judge)
    ends_at = time.monotonic() + seconds
    if width == 1:
        while time.monotonic() < ends_at:
            if not batch_process(run=run, client=client, lane=lane):
                return False
        return True
    in_flight: dict[Future, _Batch] = {}
    done: queue.SimpleQueue = queue.SimpleQueue()
    # Claimed and ready to send: a call that returns is replaced at once, and the lane
    # stores and claims while its calls are out.
    waiting: list[_Batch] = []
    # Answered (or found in the cache), to store: held until half a round of them is in,
    # STORE_HOLD_SECONDS at most, since a claim or a store costs about the same
    # statements for one batch as for several.
    ready: list[_Batch] = []
    held_until = 0.0
    more = True
    # Calls allowed out at once: one at first and after a crash, doubling up to `width`
    # while batches end well, so a run whose batches crash stops calling the model after
    # JUDGE_MAX_CRASH_STREAK of them, as a lane of one call at a time would.
    allowed = 1
    with _CallThreads(width) as threads:

        def send() -> None:
            while waiting and len(in_flight) < allowed:
                batch = waiting.pop(0)
                future = threads.submit(_ask, run=run, batch=batch, client=client)
                in_flight[future] = batch
                future.add_done_callback(done.put)

        def hold(batches: list[_Batch]) -> None:
            nonlocal held_until
            if batches and not ready:
                held_until = time.monotonic() + STORE_HOLD_SECONDS
            ready.extend(batches)

        try:
            while True:
                group = max(1, allowed // 2)
                if waiting and len(in_flight) < allowed and not _still_running(run):
                    # Paused or cancelled since they were claimed: they wait, unasked.
                    for batch in waiting:
                        _unclaim(run=run, items=batch.asking)
                        batch.items = [item for item in batch.items
                                       if batch.outcomes[item.pk].from_cache]
                        batch.asking = []
                    hold(waiting)
                    waiting.clear()
                    more = False
                send()
                # Stored before claiming more: what came back is kept first.
                if ready and (len(ready) >= group or not in_flight
                              or time.monotonic() >= min(held_until, ends_at)):
                    stored, ready = ready, []
                    _group_store(run=run, batches=stored)
                # A round ahead is claimed, half a round at a time (all of it when
                # nothing is out).
                out = len(in_flight) + len(waiting)
                wanted = 2 * allowed - out
                if wanted >= (group if out else 1) and time.monotonic() < ends_at and (
                        more or not out):
                    claimed, started = _group_start(run=run, lane=lane, count=wanted)
                    more = bool(claimed)
                    for batch in started:
                        if batch.asking:
                            waiting.append(batch)
                        else:
                            hold([batch])
                    send()
                if not (in_flight or waiting or ready):
                    if not more:
                        finish_if_done(run)
                        return False
                    if time.monotonic() >= ends_at:
                        return True
                    continue
                if not in_flight:
                    continue  # only answers to store (from the cache): the top stores them
                # Wait for an answer (while answers are held, no longer than their hold).
                timeout = max(0.0, held_until - time.monotonic()) if ready else None
                try:
                    answered = [done.get(timeout=timeout)]
                except queue.Empty:
                    continue
                while not done.empty():
                    answered.append(done.get())
                concluded = [_concluded(run, in_flight.pop(future)) for future in answered]
                crashed = any(batch.error is not None for batch in concluded)
                allowed = 1 if crashed else min(width, allowed * 2)
                hold(concluded)
        finally:
            # Ending early (an exception): the calls out are paid for, keep their answers,
            # and those held; what waits goes back to the queue.
            for future, batch in list(in_flight.items()):
                future.result()
                _store_alone(run=run, batch=_concluded(run, batch))
            for batch in ready:
                _store_alone(run=run, batch=batch)
            for batch in waiting:
                _unclaim(run=run, items=batch.asking)


def _still_running(run: JudgeRun) -> bool:
    return JudgeRun.objects.filter(pk=run.pk, status=Status.RUNNING).exists()


class _CallThreads:
    """A lane's threads for its calls. Each keeps its own database connection (a call
    logs itself as it leaves) and closes it when the lane ends."""

    def __init__(self, width: int) -> None:
        self._work: queue.SimpleQueue = queue.SimpleQueue()
        self._threads = [threading.Thread(target=self._serve, daemon=True,
                                          name=f"judge-call-{n}") for n in range(width)]

    def __enter__(self) -> _CallThreads:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc) -> None:
        for _ in self._threads:
            self._work.put(None)
        for thread in self._threads:
            thread.join()

    def submit(self, function: Callable, **kwargs) -> Future:
        future: Future = Future()
        self._work.put((future, function, kwargs))
        return future

    def _serve(self) -> None:
        try:
            while (work := self._work.get()) is not None:
                future, function, kwargs = work
                try:
                    future.set_result(function(**kwargs))
                except BaseException as error:  # handed to the lane
                    future.set_exception(error)
        finally:
            connections.close_all()


def _group_start(*, run: JudgeRun, lane: Lane, count: int) -> tuple[int, list[_Batch]]:
    """Claim up to `count` batches and ready them (documents, cache, budget); how many
    pairs were claimed, and the batches with something left to ask or store."""
    judge, now = run.judge, timezone.now()
    items = _items_claim(run=run, now=now, lease_until=now + timedelta(
        seconds=lease_seconds(judge)), lane=lane, batches=count)
    if not items:
        return 0, []
    groups = _in_batches([item for item in items if item.status == ItemStatus.CLAIMED],
                         judge.batch_size)
    started = [_Batch(items=group) for group in groups]
    try:
        _prepare(run=run, batches=started)
    except Exception as error:
        logger.exception("batches of judge run %s crashed", run.pk)
        for batch in started:
            _crashed(run=run, items=batch.items, error=error)
        return len(items), []
    return len(items), started


def _in_batches(items: list[JudgeRunItem], size: int) -> list[list[JudgeRunItem]]:
    """Claimed items as calls: each keyword's in pk order, `size` at most a call."""
    by_keyword: dict[int, list[JudgeRunItem]] = {}
    for item in sorted(items, key=lambda item: item.pk):
        by_keyword.setdefault(item.keyword_id, []).append(item)
    return [group[start:start + size] for group in by_keyword.values()
            for start in range(0, len(group), size)]


def _items_claim(*, run: JudgeRun, now, lease_until, lane: Lane = ONE_LANE,
                 batches: int = 1) -> list[JudgeRunItem]:
    """Up to `batches` whole batches (batch_size claimable items of one keyword each)
    claimed with one stamp in one transaction; then, in counting modes, the judge's slot
    of each in one statement (after the items' commit, so with no savepoint per slot: a
    lane dying in between leaves only leases that lapse). Items that can no longer be
    graded come back skipped."""
    size = run.judge.batch_size
    with transaction.atomic():
        mine = JudgeRunItem.objects.select_for_update(skip_locked=True, of=("self",)).filter(
            run=run, run__status=Status.RUNNING).order_by("pk")
        # One more than wanted, to tell whether the last keyword goes on past the limit.
        wanted = batches * size + 1
        # Claims whose lease lapsed first (their lane died; a few rows at most), then the
        # pending items: each read walks judge_item_claim_order_idx from its start.
        rows = list(mine.filter(status=ItemStatus.CLAIMED, lease_expires_at__lt=now)[:wanted])
        if not rows:
            pending = mine.filter(status=ItemStatus.PENDING)
            if lane.of > 1:
                rows = list(pending.alias(share=Mod("keyword_id", lane.of))
                            .filter(share=lane.number)[:wanted])
            if not rows:
                rows = list(pending[:wanted])
        items = _whole_batches(rows, size=size, batches=batches, cut=len(rows) == wanted)
        if not items:
            return []
        JudgeRunItem.objects.filter(pk__in=[item.pk for item in items]).update(
            status=ItemStatus.CLAIMED, claimed_at=now, lease_expires_at=lease_until,
            attempt_count=F("attempt_count") + 1)
    for item in items:
        item.status, item.claimed_at, item.lease_expires_at = ItemStatus.CLAIMED, now, lease_until
        item.attempt_count += 1
    skipped = _slots_claim(run=run, items=items, now=now, lease_until=lease_until)
    if skipped:
        for item in items:
            if item.pk in skipped:
                item.status, item.failure, item.failure_detail = (
                    ItemStatus.SKIPPED, "taken", skipped[item.pk])
                item.answered_at = now
        with transaction.atomic():
            sql.rows_update(JudgeRunItem, fields=["failure_detail"],
                            rows=list(skipped.items()),
                            constants={"status": ItemStatus.SKIPPED, "failure": "taken",
                                       "answered_at": now})
            JudgeRun.objects.filter(pk=run.pk).update(
                skipped_count=F("skipped_count") + len(skipped))
    return items


def _whole_batches(rows: list[JudgeRunItem], *, size: int, batches: int, cut: bool
                   ) -> list[JudgeRunItem]:
    """The first `batches` batches of `rows` (pk order): a keyword's items in calls of
    `size`. A last batch that the read's limit may have cut short (`cut`: the read found
    more) is left for the next claim, unless it is the only one, so a keyword is not
    asked about in more calls than its size needs."""
    if not rows:
        return []
    first_keyword = rows[0].keyword_id
    chosen = _in_batches(rows[:-1] if cut else rows, size)[:batches]
    if cut and len(chosen) > 1 and len(chosen[-1]) < size \
            and chosen[-1][0].keyword_id == rows[-1].keyword_id:
        chosen.pop()
    if not chosen:  # only possible when cut: take the first keyword's first batch
        chosen = [[row for row in rows if row.keyword_id == first_keyword][:size]]
    return [item for batch in chosen for item in batch]


def _slots_claim(*, run: JudgeRun, items: list[JudgeRunItem], now, lease_until
                 ) -> dict[int, str]:
    """Claim the judge's slot for each item (counting modes); {item id: why skipped}."""
    if run.mode not in COUNTING_MODES:
        return {}
    snapshot_ids = [item.snapshot_id for item in items]
    graded = set()
    if run.mode == Mode.UNGRADED:
        graded = set(FeedbackSlot.objects.filter(snapshot_id__in=snapshot_ids,
                                                 grade__isnull=False)
                     .values_list("snapshot_id", flat=True))
    held = grading.judge_slots_claim(
        judge_user=run.judge.user, snapshot_ids=[s for s in snapshot_ids if s not in graded],
        now=now, lease_until=lease_until)
    skipped = {}
    for item in items:
        if item.snapshot_id in graded:
            skipped[item.pk] = "someone graded it before the judge got to it"
        elif item.snapshot_id not in held:
            skipped[item.pk] = "no free slot left (people filled them, or the judge has one)"
    return skipped


def batch_documents(snapshots: list[Snapshot]) -> list[Document]:
    """A batch's documents; ids are the results' doc ids, made unique within the batch by
    their position when a result repeats."""
    documents, used = [], set()
    for snapshot in snapshots:
        doc_id = snapshot.doc_id or f"#{snapshot.position}"
        if doc_id in used:
            doc_id = f"{doc_id}#{snapshot.position}"
        used.add(doc_id)
        documents.append(Document(id=doc_id, fields=document_fields(snapshot),
                                  image=snapshot.image))
    return documents


def document_fields(snapshot: Snapshot) -> dict:
    """What the judge sees of a result: its name (when it has one), then its fields."""
    if snapshot.name:
        return {"name": snapshot.name, **(snapshot.fields or {})}
    return dict(snapshot.fields or {})


def answer_key(*, judge: Judge, evaluation, grade_scale, template: str, provider_identity: str,
               keyword: str, fields: dict, image: str = "") -> str:
    """The cache key of one pair's answer (judges.core.cache), as runs and estimates ask;
    the image is part of the question when it is sent."""
    sent = bool(images_to_send(template, [Document(id="-", fields={}, image=image)],
                               send_images=calls.sends_images(judge)))
    return cache_key(keyword=keyword, fields=fields, template=template,
                     provider=provider_identity, model=judge.model,
                     parameters=judge.parameters or {}, guidelines=evaluation.guidelines,
                     grades=list(grade_scale.grades), image=image if sent else "")


def _prepare(*, run: JudgeRun, batches: list[_Batch]) -> None:
    """Each batch's keyword, documents and cache keys, with one read of their results and
    one of the cache for all; answers found there, the rest to ask."""
    judge, evaluation = run.judge, run.evaluation
    snapshots = {s.pk: s for s in Snapshot.objects.select_related("keyword").filter(
        pk__in=[item.snapshot_id for batch in batches for item in batch.items])}
    for batch in batches:
        documents = batch_documents([snapshots[item.snapshot_id] for item in batch.items])
        batch.keyword = snapshots[batch.items[0].snapshot_id].keyword.text
        batch.documents = {item.pk: document
                           for item, document in zip(batch.items, documents, strict=True)}
    scale = scale_lookup.scale_for_team(team_id=evaluation.team_id, code=evaluation.scale)
    if scale is None:
        for batch in batches:
            batch.outcomes = {item.pk: _Outcome(failure="scale", detail=(
                f"the evaluation's scale {evaluation.scale!r} is gone"))
                for item in batch.items}
        return
    template, provider = calls.template_for(judge, scale.scale), calls.provider_for(judge)
    for batch in batches:
        batch.scale = scale.scale
        for item in batch.items:
            document = batch.documents[item.pk]
            batch.outcomes[item.pk] = _Outcome(cache_key=answer_key(
                judge=judge, evaluation=evaluation, grade_scale=scale.scale, template=template,
                provider_identity=provider.identity, keyword=batch.keyword,
                fields=dict(document.fields), image=document.image))
    if not run.refresh_cache:
        cached = {answer.key: answer for answer in JudgeAnswer.objects.filter(key__in=[
            outcome.cache_key for batch in batches for outcome in batch.outcomes.values()])}
        for batch in batches:
            for outcome in batch.outcomes.values():
                if outcome.cache_key in cached:
                    hit = cached[outcome.cache_key]
                    outcome.grade, outcome.reason, outcome.from_cache = \
                        hit.grade, hit.reason, True
    for batch in batches:
        batch.asking = [item for item in batch.items
                        if not batch.outcomes[item.pk].from_cache]


def _ask(*, run: JudgeRun, batch: _Batch, client: httpx.Client | None) -> None:
    """The batch's one call (on a lane's thread, or the lane's own), reserved against the
    budgets as it leaves and its cost settled; what raised is kept for the lane, which
    fails the batch's pairs with it. Reserved here, not when claimed: a lane claims a
    round ahead, and reservations for calls not yet made would pause a run that the
    money left still pays for (and stay counted when the pause gives those batches back)."""
    judge = run.judge
    try:
        reserved = _budget_reserve(
            run=run, template=calls.template_for(judge, batch.scale), keyword=batch.keyword,
            scale=batch.scale, documents=[batch.documents[i.pk] for i in batch.asking])
        if reserved is None:
            batch.over_budget = True
            return
        batch.reserved = reserved
        batch.result = calls.ask(
            judge=judge, keyword=batch.keyword, guidelines=run.evaluation.guidelines,
            scale=batch.scale, documents=[batch.documents[i.pk] for i in batch.asking],
            run=run, client=client)
        if batch.reserved:
            budgets.call_settle(run_id=run.pk, reserved=batch.reserved, cost=token_cost(
                judge=judge, tokens_in=batch.result.tokens_in,
                tokens_out=batch.result.tokens_out))
    except Exception as error:
        batch.error = error


def _concluded(run: JudgeRun, batch: _Batch) -> _Batch:
    """The batch's answer read into its outcomes. Whatever broke, its pairs end failed
    with the reason and the run counts the crash: a lane that let it escape would leave
    them claimed, to be asked (and paid for) again by every lane the sweep starts."""
    try:
        if batch.error is not None:
            raise batch.error
        result = batch.result
        if batch.over_budget or (result is not None and result.error_kind == "no_turn"):
            # Not asked (over a budget, which paused the run; or no turn in time): the
            # pairs wait for another lane.
            _unclaim(run=run, items=batch.asking)
            batch.items = [item for item in batch.items
                           if batch.outcomes[item.pk].from_cache]
        elif result is not None:
            _read_verdict(result, batch.asking, batch.documents, batch.outcomes)
    except Exception as error:
        logger.exception("a batch of judge run %s crashed", run.pk)
        _crashed(run=run, items=batch.items, error=error)
        batch.items, batch.error = [], error
    return batch


def _budget_reserve(*, run: JudgeRun, template: str, keyword: str, scale,
                    documents: list[Document]) -> Decimal | None:
    """The expected cost of the call about `documents`, counted against the budgets
    (judges.budgets); None when it would go over them (the run paused). A judge without
    prices reserves nothing."""
    judge = run.judge
    if judge.price_in_per_million is None and judge.price_out_per_million is None:
        return Decimal(0)
    try:
        prompt = build_prompt(template, keyword=keyword, guidelines=run.evaluation.guidelines,
                              documents=documents, scale=scale)
    except PromptError:
        return Decimal(0)  # the call fails before it is sent (calls.ask says why)
    cost = token_counts.call_cost(judge=judge, prompt=prompt, pair_count=len(documents),
                                  tokens_out=token_counts.tokens_out_expected(judge=judge))
    if budgets.call_reserve(run_id=run.pk, cost=cost):
        return None
    return cost


def _read_verdict(result: calls.AskResult, asking: list[JudgeRunItem],
                  documents: dict[int, Document], outcomes: dict[int, _Outcome]) -> None:
    if result.verdict is None:
        for item in asking:
            outcomes[item.pk].failure = result.error_kind
            outcomes[item.pk].detail = result.error
        return
    accepted = {answer.id: answer for answer in result.verdict.accepted}
    rejected = {answer.id: answer for answer in result.verdict.rejected}
    for item in asking:
        doc_id, outcome = documents[item.pk].id, outcomes[item.pk]
        if doc_id in accepted:
            outcome.grade, outcome.reason = accepted[doc_id].grade, accepted[doc_id].reason
        else:
            outcome.failure = str(rejected[doc_id].code)
            outcome.detail = rejected[doc_id].detail


def _unclaim(*, run: JudgeRun, items: list[JudgeRunItem]) -> None:
    """The model was not asked (no turn in time): the items wait for another lane."""
    with transaction.atomic():
        ids = list(JudgeRunItem.objects.select_for_update().filter(
            pk__in=[item.pk for item in items], status=ItemStatus.CLAIMED,
            claimed_at=items[0].claimed_at).values_list("pk", flat=True))
        JudgeRunItem.objects.filter(pk__in=ids).update(
            status=ItemStatus.PENDING, lease_expires_at=None)
        grading.judge_slots_release(judge_user=run.judge.user, snapshot_ids=[
            item.snapshot_id for item in items if item.pk in ids])


def _store(*, run: JudgeRun, items: list[JudgeRunItem], outcomes: dict[int, _Outcome],
           result: calls.AskResult | None) -> None:
    """Write what one batch found, for the items its claim still owns."""
    _group_store(run=run, batches=[_Batch(items=items, outcomes=outcomes, result=result)])


def _store_alone(*, run: JudgeRun, batch: _Batch) -> None:
    try:
        _group_write(run=run, batches=[batch])
    except Exception as error:
        logger.exception("a batch of judge run %s crashed", run.pk)
        _crashed(run=run, items=batch.items, error=error)


def _group_store(*, run: JudgeRun, batches: list[_Batch]) -> None:
    """Write what the batches found, for the items their claims still own, in one
    transaction. When that raises, each batch is stored alone: one that still fails
    fails its own pairs (with the reason), not its neighbours'."""
    # A crashed batch failed its pairs already (_concluded), and ended well in nothing.
    batches = [batch for batch in batches if batch.error is None]
    if not batches:
        return
    if len(batches) == 1:
        _store_alone(run=run, batch=batches[0])
        return
    try:
        _group_write(run=run, batches=batches)
    except Exception:
        logger.exception("a store of %s batches of judge run %s failed; one by one",
                         len(batches), run.pk)
        for batch in batches:
            _store_alone(run=run, batch=batch)


def _group_write(*, run: JudgeRun, batches: list[_Batch]) -> None:
    now = timezone.now()
    outcomes: dict[int, _Outcome] = {}
    call_of: dict[int, object] = {}
    for batch in batches:
        outcomes.update(batch.outcomes)
        answering = batch.result.calls[-1] if batch.result and batch.result.calls else None
        for item in batch.items:
            call_of[item.pk] = answering
    items = [item for batch in batches for item in batch.items]
    tokens_in = sum(batch.result.tokens_in for batch in batches if batch.result)
    tokens_out = sum(batch.result.tokens_out for batch in batches if batch.result)
    with transaction.atomic():
        # Each item's claim stamp is quoted: a lapsed claim another lane took over writes
        # nothing.
        stamps = dict(JudgeRunItem.objects.select_for_update().filter(
            pk__in=[item.pk for item in items], status=ItemStatus.CLAIMED).values_list(
            "pk", "claimed_at")) if items else {}
        items = [item for item in items if item.pk in stamps
                 and stamps[item.pk] == item.claimed_at]
        written = _grades_write(run=run, items=items, outcomes=outcomes, now=now)
        if written is None:
            return
        done = failed = cached = skipped = 0
        release, rows = [], []
        for item in items:
            outcome = outcomes[item.pk]
            call = None if outcome.from_cache else call_of[item.pk]
            if outcome.failure:
                status, failure, detail = ItemStatus.FAILED, outcome.failure, \
                    outcome.detail[:2000]
                grade, reason, from_cache = item.grade, item.reason, item.from_cache
                release.append(item.snapshot_id)
                failed += 1
            elif run.mode in COUNTING_MODES and item.snapshot_id not in written:
                status, failure = ItemStatus.SKIPPED, "taken"
                detail = "the slot was reset before the answer arrived"
                grade, reason, from_cache = item.grade, item.reason, item.from_cache
                skipped += 1
            else:
                status, failure, detail = ItemStatus.DONE, item.failure, item.failure_detail
                grade, reason, from_cache = outcome.grade, outcome.reason, outcome.from_cache
                done += 1
                cached += outcome.from_cache
            rows.append((item.pk, status, grade, reason, failure, detail, from_cache,
                         call.pk if call is not None else None))
        # One statement for all the items, each with its own grade, reason and call.
        sql.rows_update(JudgeRunItem, fields=[
            "status", "grade", "reason", "failure", "failure_detail", "from_cache", "call"],
            rows=rows, constants={"answered_at": now, "lease_expires_at": None})
        if release and run.mode in COUNTING_MODES:
            grading.judge_slots_release(judge_user=run.judge.user, snapshot_ids=release)
        answers = [JudgeAnswer(key=outcomes[pk].cache_key, judge=run.judge, grade=grade,
                               reason=reason, created_at=now)
                   for pk, status, grade, reason, _, _, from_cache, _ in rows
                   if status == ItemStatus.DONE and not from_cache]
        if answers:
            JudgeAnswer.objects.bulk_create(answers, ignore_conflicts=True)
        JudgeRun.objects.filter(pk=run.pk).update(
            crash_streak=0,
            done_count=F("done_count") + done, failed_count=F("failed_count") + failed,
            skipped_count=F("skipped_count") + skipped, cached_count=F("cached_count") + cached,
            tokens_in=F("tokens_in") + tokens_in, tokens_out=F("tokens_out") + tokens_out)


def _grades_write(*, run: JudgeRun, items: list[JudgeRunItem], outcomes: dict[int, _Outcome],
                  now) -> set[int] | None:
    """Counting modes: the accepted grades into the judge's slots; the snapshots written, or
    None when the evaluation stopped taking grades (the run pauses, the items wait)."""
    grades = [(item.snapshot_id, outcomes[item.pk].grade, outcomes[item.pk].reason)
              for item in items if not outcomes[item.pk].failure]
    if run.mode not in COUNTING_MODES or not grades:
        return set()
    if not _judge_counts_now(run.judge_id):
        _items_give_back(run=run, items=items, reason=(
            f"{run.judge.name} no longer counts (an admin took its trust back): its answers "
            "fill no counting slots. The grades it wrote while it counted stay (this run's "
            "done pairs). Run it in shadow mode, or let it count again, to go on."))
        return None
    try:
        # Its own atomic block is a savepoint here: a refusal leaves this transaction usable.
        return grading.judge_grades_write(judge_user=run.judge.user, evaluation=run.evaluation,
                                          grades=grades, now=now)
    except ValidationError:
        _items_give_back(run=run, items=items)
        return None


def _judge_counts_now(judge_id: int) -> bool:
    """Whether the judge counts, read in the write's transaction: the trust an admin takes
    back mid-run stops the next batch's grades, not only the next run. On PostgreSQL the
    row is read FOR SHARE, so a withdrawal waits for a write that read it still trusted
    (those grades were written while it counted) and every later write sees it."""
    return queries.judge_counts_locked(judge_id=judge_id)


def _items_give_back(*, run: JudgeRun, items: list[JudgeRunItem], reason: str = "") -> None:
    """The items wait again, their slots go back to the queue, and the run pauses (with
    `reason`, when given): their answers are not stored."""
    JudgeRunItem.objects.filter(pk__in=[item.pk for item in items]).update(
        status=ItemStatus.PENDING, lease_expires_at=None)
    grading.judge_slots_release(judge_user=run.judge.user,
                                snapshot_ids=[item.snapshot_id for item in items])
    JudgeRun.objects.filter(pk=run.pk, status=Status.RUNNING).update(
        status=Status.PAUSED, **({"pause_reason": reason} if reason else {}))


def crash_text(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"[:2000]


def _crashed(*, run: JudgeRun, items: list[JudgeRunItem], error: BaseException) -> None:
    """The batch raised: the pairs its claim still owns fail with the reason."""
    detail = crash_text(error)
    if not items:
        run_crash_record(run_id=run.pk, detail=detail)
        return
    with transaction.atomic():
        owned = list(JudgeRunItem.objects.select_for_update().filter(
            pk__in=[item.pk for item in items], status=ItemStatus.CLAIMED,
            claimed_at=items[0].claimed_at).values_list("pk", "snapshot_id"))
        JudgeRunItem.objects.filter(pk__in=[pk for pk, _ in owned]).update(
            status=ItemStatus.FAILED, failure="crash", failure_detail=detail,
            answered_at=timezone.now(), lease_expires_at=None)
        if run.mode in COUNTING_MODES:
            grading.judge_slots_release(judge_user=run.judge.user,
                                        snapshot_ids=[snapshot for _, snapshot in owned])
        JudgeRun.objects.filter(pk=run.pk).update(failed_count=F("failed_count") + len(owned))
    run_crash_record(run_id=run.pk, detail=detail)


def run_crash_record(*, run_id: int, detail: str) -> bool:
    """Count a crash of one of the run's lanes; after JUDGE_MAX_CRASH_STREAK of them with no
    batch ending well in between, pause the run with the reason (the sweep then leaves it
    alone). Whether it paused."""
    with transaction.atomic():
        run = JudgeRun.objects.select_for_update().filter(pk=run_id).first()
        if run is None:
            return False
        run.crash_count += 1
        run.crash_streak += 1
        run.last_crash = detail
        fields = ["crash_count", "crash_streak", "last_crash"]
        paused = run.status == Status.RUNNING and \
            run.crash_streak >= settings.JUDGE_MAX_CRASH_STREAK
        if paused:
            run.status = Status.PAUSED
            run.pause_reason = (
                f"Paused after {run.crash_streak} lane crashes in a row, so that it stops "
                f"calling the model; the last: {detail}")
            fields += ["status", "pause_reason"]
        run.save(update_fields=fields)
    if paused:
        logger.error("judge run %s paused: %s", run_id, run.pause_reason)
        notify(team_id=run.judge.team_id, event=Event.JUDGE_RUN_FAILED,
               text=f"Judge run of “{run.judge.name}” on “{run.evaluation.name}” failed: "
                    f"{run.pause_reason}",
               url=reverse("judges:run_detail", args=[run.pk]),
               payload={"judge_run": run.pk, "evaluation": run.evaluation_id})
    return paused


def finish_if_done(run: JudgeRun) -> None:
    """Done only when every item is answered: pending or claimed ones keep it running."""
    open_items = JudgeRunItem.objects.filter(
        run_id=run.pk, status__in=[ItemStatus.PENDING, ItemStatus.CLAIMED])
    if not open_items.exists():
        JudgeRun.objects.filter(pk=run.pk, status=Status.RUNNING).update(
            status=Status.DONE, finished_at=timezone.now())


def lapsed_claims_count(*, now=None) -> list[int]:
    """A claim that outlived its lease means the lane holding it died without a word (its
    worker killed): count that as a crash of the run, once (its items go back to pending;
    their stamp changes on the next claim, so the dead lane's late answer writes nothing),
    and pause a run whose lanes keep dying. The runs still running, which need a lane."""
    now = now or timezone.now()
    restart = []
    lapsed = JudgeRunItem.objects.filter(run__status=Status.RUNNING,
                                         status=ItemStatus.CLAIMED, lease_expires_at__lt=now)
    for run_id in sorted(set(lapsed.values_list("run_id", flat=True))):
        with transaction.atomic():
            count = JudgeRunItem.objects.filter(
                run_id=run_id, status=ItemStatus.CLAIMED, lease_expires_at__lt=now).update(
                status=ItemStatus.PENDING, lease_expires_at=None)
        if count and not run_crash_record(run_id=run_id, detail=(
                f"a lane stopped while it held {count} pair(s) (its worker died or was "
                "killed); they went back to the queue")):
            restart.append(run_id)
    return restart


def runs_stalled(*, now=None) -> list[int]:
    """Running runs whose lanes are gone: a claim lapsed, or work is pending and nothing
    was claimed for JUDGE_STALL_SECONDS. A run with nothing open is marked done here."""
    now = now or timezone.now()
    running = JudgeRun.objects.filter(status=Status.RUNNING)
    for run in running.exclude(items__status__in=[ItemStatus.PENDING, ItemStatus.CLAIMED]):
        finish_if_done(run)
    lapsed = running.filter(items__status=ItemStatus.CLAIMED, items__lease_expires_at__lt=now)
    quiet_since = now - timedelta(seconds=settings.JUDGE_STALL_SECONDS)
    idle = running.filter(items__status=ItemStatus.PENDING).exclude(
        items__claimed_at__gte=quiet_since)
    return sorted(set(lapsed.values_list("pk", flat=True)) | set(
        idle.values_list("pk", flat=True)))
