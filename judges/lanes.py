"""The lanes of a judge run, what a Celery lane repeats: claim batches
(judges.batch_claiming), answer each from the cache or with one call (judges.batch_sending),
store what the claims still own (judges.batch_storing); and the sweep that finds runs whose
lanes died.

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
from datetime import timedelta

import httpx
from django.conf import settings
from django.db import connection, connections, transaction
from django.utils import timezone

from judges import batch_claiming, batch_sending, batch_storing
from judges.batch_claiming import ONE_LANE, Batch, Lane
from judges.models import Judge, JudgeRun, JudgeRunItem

logger = logging.getLogger(__name__)

Status, ItemStatus = JudgeRun.Status, JudgeRunItem.Status
# How long a lane holds answers to store them with the next ones (judges.lanes.lane_run).
STORE_HOLD_SECONDS = 0.1


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


def batch_process(*, run: JudgeRun, client: httpx.Client | None = None,
                  lane: Lane = ONE_LANE) -> int:
    """Claim a batch of one keyword's pairs, answer it (cache, else one call), store the
    answers; how many pairs it claimed (0: nothing to claim now, or the run is no longer
    running)."""
    claimed, ready = _group_start(run=run, lane=lane, count=1)
    if not claimed:
        batch_storing.finish_if_done(run)
        return 0
    for batch in ready:
        if batch.asking:
            batch_sending.ask(run=run, batch=batch, client=client)
    batch_storing.group_store(run=run, batches=[batch_sending.concluded(run, batch)
                                                for batch in ready])
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
    in_flight: dict[Future, Batch] = {}
    done: queue.SimpleQueue = queue.SimpleQueue()
    # Claimed and ready to send: a call that returns is replaced at once, and the lane
    # stores and claims while its calls are out.
    waiting: list[Batch] = []
    # Answered (or found in the cache), to store: held until half a round of them is in,
    # STORE_HOLD_SECONDS at most, since a claim or a store costs about the same
    # statements for one batch as for several.
    ready: list[Batch] = []
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
                future = threads.submit(batch_sending.ask, run=run, batch=batch, client=client)
                in_flight[future] = batch
                future.add_done_callback(done.put)

        def hold(batches: list[Batch]) -> None:
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
                        batch_claiming.unclaim(run=run, items=batch.asking)
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
                    batch_storing.group_store(run=run, batches=stored)
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
                        batch_storing.finish_if_done(run)
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
                concluded = [batch_sending.concluded(run, in_flight.pop(future))
                             for future in answered]
                crashed = any(batch.error is not None for batch in concluded)
                allowed = 1 if crashed else min(width, allowed * 2)
                hold(concluded)
        finally:
            # Ending early (an exception): the calls out are paid for, keep their answers,
            # and those held; what waits goes back to the queue.
            for future, batch in list(in_flight.items()):
                future.result()
                batch_storing.store_alone(run=run, batch=batch_sending.concluded(run, batch))
            for batch in ready:
                batch_storing.store_alone(run=run, batch=batch)
            for batch in waiting:
                batch_claiming.unclaim(run=run, items=batch.asking)


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


def _group_start(*, run: JudgeRun, lane: Lane, count: int) -> tuple[int, list[Batch]]:
    """Claim up to `count` batches and ready them (documents, cache, budget); how many
    pairs were claimed, and the batches with something left to ask or store."""
    judge, now = run.judge, timezone.now()
    items = batch_claiming.items_claim(run=run, now=now, lease_until=now + timedelta(
        seconds=batch_claiming.lease_seconds(judge)), lane=lane, batches=count)
    if not items:
        return 0, []
    groups = batch_claiming.in_batches(
        [item for item in items if item.status == ItemStatus.CLAIMED], judge.batch_size)
    started = [Batch(items=group) for group in groups]
    try:
        batch_claiming.prepare(run=run, batches=started)
    except Exception as error:
        logger.exception("batches of judge run %s crashed", run.pk)
        for batch in started:
            batch_storing.crashed(run=run, items=batch.items, error=error)
        return len(items), []
    return len(items), started


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
        if count and not batch_storing.run_crash_record(run_id=run_id, detail=(
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
        batch_storing.finish_if_done(run)
    lapsed = running.filter(items__status=ItemStatus.CLAIMED, items__lease_expires_at__lt=now)
    quiet_since = now - timedelta(seconds=settings.JUDGE_STALL_SECONDS)
    idle = running.filter(items__status=ItemStatus.PENDING).exclude(
        items__claimed_at__gte=quiet_since)
    return sorted(set(lapsed.values_list("pk", flat=True)) | set(
        idle.values_list("pk", flat=True)))
