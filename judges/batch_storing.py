"""Storing what a judge run's batches found, for the items their claims still own: their
items, the judge's slots and grades, one announcement of the graded keywords, the run's
counters, in one transaction per group of batches. Also where a crash of a batch or a lane
is recorded, and where a run with every item answered is done.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import F
from django.urls import reverse
from django.utils import timezone

from judges import calls, queries
from judges.batch_claiming import COUNTING_MODES, Batch, Outcome
from judges.models import JudgeAnswer, JudgeRun, JudgeRunItem
from judgments import grading
from notifications.models import Event
from notifications.services import notify
from searchtweak import sql

logger = logging.getLogger(__name__)

Status, ItemStatus = JudgeRun.Status, JudgeRunItem.Status


def _store(*, run: JudgeRun, items: list[JudgeRunItem], outcomes: dict[int, Outcome],
           result: calls.AskResult | None) -> None:
    """Write what one batch found, for the items its claim still owns."""
    group_store(run=run, batches=[Batch(items=items, outcomes=outcomes, result=result)])


def store_alone(*, run: JudgeRun, batch: Batch) -> None:
    try:
        _group_write(run=run, batches=[batch])
    except Exception as error:
        logger.exception("a batch of judge run %s crashed", run.pk)
        crashed(run=run, items=batch.items, error=error)


def group_store(*, run: JudgeRun, batches: list[Batch]) -> None:
    """Write what the batches found, for the items their claims still own, in one
    transaction. When that raises, each batch is stored alone: one that still fails
    fails its own pairs (with the reason), not its neighbours'."""
    # A crashed batch failed its pairs already (batch_sending.concluded), and ended well in
    # nothing.
    batches = [batch for batch in batches if batch.error is None]
    if not batches:
        return
    if len(batches) == 1:
        store_alone(run=run, batch=batches[0])
        return
    try:
        _group_write(run=run, batches=batches)
    except Exception:
        logger.exception("a store of %s batches of judge run %s failed; one by one",
                         len(batches), run.pk)
        for batch in batches:
            store_alone(run=run, batch=batch)


def _group_write(*, run: JudgeRun, batches: list[Batch]) -> None:
    now = timezone.now()
    outcomes: dict[int, Outcome] = {}
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


def _grades_write(*, run: JudgeRun, items: list[JudgeRunItem], outcomes: dict[int, Outcome],
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


def crashed(*, run: JudgeRun, items: list[JudgeRunItem], error: BaseException) -> None:
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
