"""A judge put to work on an evaluation: starting a run, pausing, cancelling, retrying,
its progress. What a Celery lane repeats (claim, send and store batches) is judges.lanes.

Run states: running ⇄ paused; running or paused → cancelled; running → done once no item
is pending or claimed (failed items are counted and listed, never dropped).
Item states: pending → claimed (stamped, with a lease) → done | failed | skipped; a claim
whose lease lapsed (its worker died) is claimable again; "retry failed" puts failed items
back to pending. Storing an answer quotes the claim's stamp, so a lapsed claim that
another lane took over writes nothing: no pair is graded twice.

Counting modes (ungraded, fill) hold a feedback slot per claimed item through the judge's
account, exactly as a person's claim does, and write grades with
judgments.grading.judge_grades_write; shadow runs keep their grades on the items only.
"""

from __future__ import annotations

from decimal import Decimal

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Count, F, Min, Q
from django.utils import timezone

from audit.models import Action
from audit.services import audit_object
from evaluations.models import Evaluation
from judges import tasks
from judges.batch_claiming import COUNTING_MODES
from judges.lanes import lane_calls
from judges.local_graders import local_dispatcher
from judges.models import CALLED_PROVIDERS, Judge, JudgeRun, JudgeRunItem
from judges.run_selectors import token_cost
from judgments.models import FeedbackSlot
from judgments.queue_selectors import tags_route
from searchtweak.bulk_insert import bulk_insert
from searchtweak.models import User

Mode, Status, ItemStatus = JudgeRun.Mode, JudgeRun.Status, JudgeRunItem.Status
# More lanes than this only queue for the judge's concurrency turns.
MAX_LANES = 16


def lane_count(run: JudgeRun) -> int:
    """Lanes to start: enough for the judge's concurrency, each holding lane_calls calls
    at once, no more than there are batches. Not lane_width: the start runs in a
    transaction (which would say one call a lane, so 16 lanes of 8 threads each for a
    judge of 16, 144 connections fighting for 16 turns), the lanes on a worker do not."""
    batches = -(-run.pair_count // run.judge.batch_size)
    width = lane_calls(run.judge)
    return max(1, min(-(-(run.judge.max_concurrent_requests or 1) // width), MAX_LANES,
                      -(-batches // width)))


# --- starting and steering a run ---


def _check_can_run(*, judge: Judge, evaluation: Evaluation, mode: str) -> None:
    if judge.team_id != evaluation.team_id:
        raise ValidationError({"judge": "This judge belongs to another team."})
    if not judge.is_active:
        raise ValidationError({"judge": f"The judge {judge.name!r} is not active."})
    if mode not in Mode.values:
        raise ValidationError({"mode": f"{mode!r} is not a mode ({', '.join(Mode.values)})."})
    # A shadow run writes no grades (they stay on its items), so it may also judge a
    # finished evaluation; the others write grades, which the evaluation must take.
    shadow_of_finished = mode == Mode.SHADOW and evaluation.status == Evaluation.Status.FINISHED
    if not (evaluation.takes_grades() or shadow_of_finished):
        raise ValidationError({"evaluation": (
            "Judges grade only running evaluations (a shadow run may also grade a finished "
            f"one); this one is {evaluation.get_status_display().lower()}.")})
    if mode in COUNTING_MODES and not judge.counts:
        raise ValidationError({"mode": (
            f"{judge.name!r} does not count yet: run it in shadow mode, check its "
            "calibration, then let its grades count.")})
    if not tags_route(needed=evaluation.tags, carried=judge.tags):
        raise ValidationError({"judge": (
            "This evaluation routes its work to the tags " + ", ".join(evaluation.tags)
            + f"; the judge carries {', '.join(judge.tags) or 'none'}.")})


def pairs_to_ask(*, evaluation: Evaluation, mode: str, judge_user: User
                   ) -> list[tuple[int, int]]:
    """(snapshot id, keyword id) the run asks about, in the grading queue's order."""
    rows = (FeedbackSlot.objects.filter(evaluation=evaluation)
            .values("snapshot_id", "keyword_id")
            .annotate(graded=Count("pk", filter=Q(grade__isnull=False)),
                      free=Count("pk", filter=Q(grade__isnull=True)),
                      mine=Count("pk", filter=Q(user=judge_user)),
                      keyword_order=Min("keyword_position"), order=Min("position"))
            .order_by("keyword_order", "order", "snapshot_id"))
    if mode == Mode.UNGRADED:
        rows = rows.filter(graded=0, mine=0)
    elif mode == Mode.FILL:
        rows = rows.filter(free__gt=0, mine=0)
    return [(row["snapshot_id"], row["keyword_id"]) for row in rows]


def _check_local_options(*, judge: Judge, refresh_cache: bool, budget: Decimal | None
                         ) -> None:
    """A judge that grades here (a clicks grader) calls nothing: no cache to skip, no cost
    to cap. Asking for either is a mistake about what it is, so it is refused, not dropped."""
    problems = {}
    if refresh_cache:
        problems["refresh_cache"] = (f"{judge.name!r} learns from clicks and keeps no cache: "
                                     "every run learns again.")
    if budget is not None:
        problems["budget"] = (f"{judge.name!r} learns from clicks and makes no call, so it "
                              "costs nothing and takes no budget.")
    if problems:
        raise ValidationError(problems)


def _check_budget(*, judge: Judge, budget: Decimal) -> None:
    if budget <= 0:
        raise ValidationError({"budget": "A budget is more than zero (or left empty)."})
    if judge.price_in_per_million is None and judge.price_out_per_million is None:
        raise ValidationError({"budget": (
            f"{judge.name!r} has no prices, so its calls have no cost to hold to a "
            "budget: an admin sets its prices per million tokens first.")})


@transaction.atomic
def run_start(*, judge: Judge, evaluation: Evaluation, mode: str, started_by: User | None,
              refresh_cache: bool = False, budget: Decimal | None = None) -> JudgeRun:
    """A run with one item per snapshot to ask about; its lanes start after commit. With a
    budget, it pauses before a call would take its spend over it (judges.budgets)."""
    _check_can_run(judge=judge, evaluation=evaluation, mode=mode)
    if judge.provider not in CALLED_PROVIDERS:
        _check_local_options(judge=judge, refresh_cache=refresh_cache, budget=budget)
    if budget is not None:
        _check_budget(judge=judge, budget=budget)
    Judge.objects.select_for_update().filter(pk=judge.pk).first()  # one start at a time
    if JudgeRun.objects.filter(judge=judge, evaluation=evaluation,
                               status__in=[Status.RUNNING, Status.PAUSED]).exists():
        raise ValidationError({"judge": (
            "This judge already has a run on this evaluation: finish or cancel it first.")})
    pairs = pairs_to_ask(evaluation=evaluation, mode=mode, judge_user=judge.user)
    now = timezone.now()
    run = JudgeRun.objects.create(judge=judge, evaluation=evaluation, mode=mode,
                                  refresh_cache=refresh_cache, started_by=started_by,
                                  budget=budget,
                                  pair_count=len(pairs), created_at=now)
    # One COPY on PostgreSQL (searchtweak.bulk_insert): a run over a million results
    # writes its items in seconds, inside this transaction, all or none.
    bulk_insert([JudgeRunItem(run=run, snapshot_id=snapshot_id, keyword_id=keyword_id)
                 for snapshot_id, keyword_id in pairs])
    if not pairs:
        JudgeRun.objects.filter(pk=run.pk).update(status=Status.DONE, finished_at=now)
        run.status, run.finished_at = Status.DONE, now
    else:
        _lanes_start_on_commit(run)
    audit_object(action=Action.JUDGE_RUN_STARTED, instance=run, object_type="judge_run",
                 actor=started_by, team_id=evaluation.team_id,
                 after={"judge": judge.pk, "evaluation": evaluation.pk, "mode": mode,
                        "pair_count": len(pairs),
                        "budget": str(budget) if budget is not None else None})
    return run


def _lanes_start_on_commit(run: JudgeRun) -> None:
    local = local_dispatcher(run.judge.provider)
    if local is not None:
        transaction.on_commit(lambda: local(run.pk))
        return
    count = lane_count(run)
    transaction.on_commit(lambda: tasks.run_lanes_dispatch(run.pk, count))


def _locked(run: JudgeRun) -> JudgeRun:
    return JudgeRun.objects.select_for_update().select_related("judge").get(pk=run.pk)


def _refuse(run: JudgeRun, action: str) -> None:
    raise ValidationError({"status": f"A {run.get_status_display().lower()} run cannot be "
                                     f"{action}."})


@transaction.atomic
def run_pause(*, run: JudgeRun) -> JudgeRun:
    """Lanes stop claiming; batches already asked are still stored."""
    run = _locked(run)
    if run.status != Status.RUNNING:
        _refuse(run, "paused")
    run.status = Status.PAUSED
    run.save(update_fields=["status"])
    _audit_status(run, before=Status.RUNNING)
    return run


def _audit_status(run: JudgeRun, *, before: str, **after: object) -> None:
    audit_object(action=Action.JUDGE_RUN_CHANGED, instance=run, object_type="judge_run",
                 team_id=run.judge.team_id, before={"status": before},
                 after={"status": run.status, **after})


@transaction.atomic
def run_resume(*, run: JudgeRun, budget: Decimal | None = None) -> JudgeRun:
    """Running again; with `budget`, under that budget from now on (a run its budget
    paused would otherwise pause again before its next call)."""
    run = _locked(run)
    if run.status != Status.PAUSED:
        _refuse(run, "resumed")
    _check_can_run(judge=run.judge, evaluation=run.evaluation, mode=run.mode)
    fields = ["status", "crash_streak", "pause_reason"]
    if budget is not None:
        _check_budget(judge=run.judge, budget=budget)
        run.budget = budget
        fields.append("budget")
    # Whoever resumes has seen why it paused: its lanes get a fresh count of crashes.
    run.status, run.crash_streak, run.pause_reason = Status.RUNNING, 0, ""
    run.save(update_fields=fields)
    _audit_status(run, before=Status.PAUSED,
                  **({"budget": str(budget)} if budget is not None else {}))
    _lanes_start_on_commit(run)
    return run


@transaction.atomic
def run_cancel(*, run: JudgeRun) -> JudgeRun:
    """Stop for good: what is pending stays unasked (shown as left). A batch already
    asked is still stored: its answer was paid for, and its claim releases its slots."""
    run = _locked(run)
    if run.status not in (Status.RUNNING, Status.PAUSED):
        _refuse(run, "cancelled")
    previous = run.status
    run.status, run.finished_at = Status.CANCELLED, timezone.now()
    run.save(update_fields=["status", "finished_at"])
    audit_object(action=Action.JUDGE_RUN_CANCELLED, instance=run, object_type="judge_run",
                 team_id=run.judge.team_id, before={"status": previous},
                 after={"status": run.status})
    return run


@transaction.atomic
def run_retry_failed(*, run: JudgeRun) -> int:
    """Put the failed items back to pending and run again; how many."""
    run = _locked(run)
    if run.status == Status.CANCELLED:
        _refuse(run, "retried")
    if run.status == Status.DONE:
        _check_can_run(judge=run.judge, evaluation=run.evaluation, mode=run.mode)
    count = JudgeRunItem.objects.filter(run=run, status=ItemStatus.FAILED).update(
        status=ItemStatus.PENDING, failure="", failure_detail="", claimed_at=None,
        lease_expires_at=None, call=None)
    if not count:
        return 0
    run.failed_count = F("failed_count") - count
    was_running = run.status == Status.RUNNING
    if run.status == Status.DONE:
        run.status, run.finished_at = Status.RUNNING, None
    previous = run.status
    run.save(update_fields=["failed_count", "status", "finished_at"])
    run.refresh_from_db()
    _audit_status(run, before=previous, retried=count)
    if run.status == Status.RUNNING and not was_running:
        _lanes_start_on_commit(run)
    return count


def run_progress(*, run: JudgeRun) -> dict:
    run.refresh_from_db()
    cost = token_cost(judge=run.judge, tokens_in=run.tokens_in, tokens_out=run.tokens_out)
    finished = run.done_count + run.failed_count + run.skipped_count
    return {
        "status": run.status, "pairs": run.pair_count, "done": run.done_count,
        "failed": run.failed_count, "skipped": run.skipped_count, "left": run.left_count,
        "cached": run.cached_count, "calls": run.call_count, "tokens_in": run.tokens_in,
        "tokens_out": run.tokens_out, "cost": cost, "currency": run.judge.price_currency,
        "crashes": run.crash_count,
        "pause_reason": run.pause_reason,
        "budget": run.budget, "spend": run.spend,
        "percent_done": 100 if not run.pair_count else finished * 100 // run.pair_count,
    }

