"""One batch of a judge run, what a Celery lane repeats: claim up to batch_size pairs of
one keyword (and, in counting modes, the judge's slot of each), answer them from the cache
or with one call, and store what this claim still owns (judges.runs states the rules).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal

import httpx
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import F, Q
from django.db.models.functions import Mod
from django.urls import reverse
from django.utils import timezone

from evaluations.models import Snapshot
from judges import budgets, calls, token_counts
from judges.core.cache import cache_key
from judges.core.prompts import Document, PromptError, build_prompt, images_to_send
from judges.models import Judge, JudgeAnswer, JudgeRun, JudgeRunItem
from judges.run_selectors import token_cost
from judgments import grading
from judgments import scales as scale_lookup
from judgments.models import FeedbackSlot
from searchtweak.notification_models import Event
from searchtweak.notifications import notify

logger = logging.getLogger(__name__)

Mode, Status, ItemStatus = JudgeRun.Mode, JudgeRun.Status, JudgeRunItem.Status
COUNTING_MODES = (Mode.UNGRADED, Mode.FILL)
# Beyond the longest a call can take: a claim outliving this means its worker is gone.
LEASE_MARGIN_SECONDS = 30.0


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
    judge, now = run.judge, timezone.now()
    items = _items_claim(run=run, now=now, lease_until=now + timedelta(
        seconds=lease_seconds(judge)), lane=lane)
    if not items:
        finish_if_done(run)
        return 0
    asking = [item for item in items if item.status == ItemStatus.CLAIMED]
    if asking:
        try:
            _answer(run=run, items=asking, client=client)
        except Exception as error:
            # Whatever broke, these pairs end failed with the reason and the run counts
            # the crash: a lane that let it escape would leave them claimed, to be asked
            # (and paid for) again by every lane the sweep starts.
            logger.exception("a batch of judge run %s crashed", run.pk)
            _crashed(run=run, items=asking, error=error)
    return len(items)


def _items_claim(*, run: JudgeRun, now, lease_until, lane: Lane = ONE_LANE
                 ) -> list[JudgeRunItem]:
    """Up to batch_size claimable items of one keyword, claimed with one stamp; then, in
    counting modes, the judge's slot of each (after the items' commit, so with no savepoint per
    slot: a lane dying in between leaves only leases that lapse). Items that can no longer
    be graded come back skipped."""
    claimable = Q(status=ItemStatus.PENDING) | Q(status=ItemStatus.CLAIMED,
                                                  lease_expires_at__lt=now)
    with transaction.atomic():
        mine = JudgeRunItem.objects.select_for_update(skip_locked=True, of=("self",)).filter(
            run=run, run__status=Status.RUNNING)
        first = None
        if lane.of > 1:
            first = (mine.filter(claimable).alias(share=Mod("keyword_id", lane.of))
                     .filter(share=lane.number).order_by("pk").only("keyword_id").first())
        if first is None:
            first = mine.filter(claimable).order_by("pk").only("keyword_id").first()
        if first is None:
            return []
        items = list(mine.filter(claimable, keyword_id=first.keyword_id)
                     .order_by("pk")[:run.judge.batch_size])
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
            _items_save([item for item in items if item.pk in skipped],
                        ["status", "failure", "failure_detail", "answered_at"])
            JudgeRun.objects.filter(pk=run.pk).update(
                skipped_count=F("skipped_count") + len(skipped))
    return items


def _items_save(items: list[JudgeRunItem], fields: list[str]) -> None:
    """Save `fields` with one UPDATE per distinct set of values (a batch's items mostly
    share them). Django's bulk_update builds a CASE per field and item, which measured
    19 ms a batch on PostgreSQL, most of a lane's time besides the model's answer."""
    groups: dict[tuple, list[int]] = defaultdict(list)
    for item in items:
        groups[tuple(getattr(item, name) for name in fields)].append(item.pk)
    for values, ids in groups.items():
        JudgeRunItem.objects.filter(pk__in=ids).update(**dict(zip(fields, values, strict=True)))


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


def _documents(items: list[JudgeRunItem]) -> tuple[str, dict[int, Document]]:
    """The keyword's text and each item's document (batch_documents)."""
    snapshots = {s.pk: s for s in Snapshot.objects.select_related("keyword").filter(
        pk__in=[item.snapshot_id for item in items])}
    documents = batch_documents([snapshots[item.snapshot_id] for item in items])
    return snapshots[items[0].snapshot_id].keyword.text, {
        item.pk: document for item, document in zip(items, documents, strict=True)}


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


def _answer(*, run: JudgeRun, items: list[JudgeRunItem], client: httpx.Client | None) -> None:
    judge, evaluation = run.judge, run.evaluation
    scale = scale_lookup.scale_for_team(team_id=evaluation.team_id, code=evaluation.scale)
    keyword, documents = _documents(items)
    outcomes: dict[int, _Outcome] = {}
    if scale is None:
        for item in items:
            outcomes[item.pk] = _Outcome(failure="scale", detail=(
                f"the evaluation's scale {evaluation.scale!r} is gone"))
        _store(run=run, items=items, outcomes=outcomes, result=None)
        return
    template, provider = calls.template_for(judge, scale.scale), calls.provider_for(judge)
    for item in items:
        key = answer_key(judge=judge, evaluation=evaluation, grade_scale=scale.scale,
                         template=template, provider_identity=provider.identity,
                         keyword=keyword, fields=dict(documents[item.pk].fields),
                         image=documents[item.pk].image)
        outcomes[item.pk] = _Outcome(cache_key=key)
    if not run.refresh_cache:
        cached = {answer.key: answer for answer in JudgeAnswer.objects.filter(
            key__in=[outcome.cache_key for outcome in outcomes.values()])}
        for outcome in outcomes.values():
            if outcome.cache_key in cached:
                hit = cached[outcome.cache_key]
                outcome.grade, outcome.reason, outcome.from_cache = hit.grade, hit.reason, True
    asking = [item for item in items if not outcomes[item.pk].from_cache]
    result = None
    reserved = _budget_reserve(run=run, template=template, keyword=keyword, scale=scale.scale,
                               documents=[documents[i.pk] for i in asking]) if asking else 0
    if reserved is None:
        # Over a budget: the run paused with the reason; these pairs wait, unasked.
        _unclaim(run=run, items=asking)
        items = [item for item in items if outcomes[item.pk].from_cache]
        asking = []
    if asking:
        result = calls.ask(judge=judge, keyword=keyword, guidelines=evaluation.guidelines,
                           scale=scale.scale, documents=[documents[i.pk] for i in asking],
                           run=run, client=client)
        if reserved:
            budgets.call_settle(run_id=run.pk, reserved=reserved, cost=token_cost(
                judge=judge, tokens_in=result.tokens_in, tokens_out=result.tokens_out))
        if result.error_kind == "no_turn":
            _unclaim(run=run, items=asking)
            items = [item for item in items if outcomes[item.pk].from_cache]
        else:
            _read_verdict(result, asking, documents, outcomes)
    _store(run=run, items=items, outcomes=outcomes, result=result)


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
    """Write what the batch found, for the items this claim still owns."""
    now = timezone.now()
    answering_call = result.calls[-1] if result and result.calls else None
    with transaction.atomic():
        owned = set(JudgeRunItem.objects.select_for_update().filter(
            pk__in=[item.pk for item in items], status=ItemStatus.CLAIMED,
            claimed_at=items[0].claimed_at if items else None).values_list("pk", flat=True))
        items = [item for item in items if item.pk in owned]
        written = _grades_write(run=run, items=items, outcomes=outcomes, now=now)
        if written is None:
            return
        done = failed = cached = skipped = 0
        release = []
        for item in items:
            outcome = outcomes[item.pk]
            item.answered_at, item.lease_expires_at = now, None
            item.call = None if outcome.from_cache else answering_call
            if outcome.failure:
                item.status, item.failure, item.failure_detail = (
                    ItemStatus.FAILED, outcome.failure, outcome.detail[:2000])
                release.append(item.snapshot_id)
                failed += 1
            elif run.mode in COUNTING_MODES and item.snapshot_id not in written:
                item.status, item.failure = ItemStatus.SKIPPED, "taken"
                item.failure_detail = "the slot was reset before the answer arrived"
                skipped += 1
            else:
                item.status, item.grade, item.reason = ItemStatus.DONE, outcome.grade, \
                    outcome.reason
                item.from_cache = outcome.from_cache
                done += 1
                cached += outcome.from_cache
        _items_save(items, ["status", "grade", "reason", "failure", "failure_detail",
                            "from_cache", "call_id", "answered_at", "lease_expires_at"])
        if release and run.mode in COUNTING_MODES:
            grading.judge_slots_release(judge_user=run.judge.user, snapshot_ids=release)
        JudgeAnswer.objects.bulk_create([
            JudgeAnswer(key=outcomes[item.pk].cache_key, judge=run.judge, grade=item.grade,
                        reason=item.reason, created_at=now)
            for item in items if item.status == ItemStatus.DONE and not item.from_cache
        ], ignore_conflicts=True)
        JudgeRun.objects.filter(pk=run.pk).update(
            crash_streak=0,
            done_count=F("done_count") + done, failed_count=F("failed_count") + failed,
            skipped_count=F("skipped_count") + skipped, cached_count=F("cached_count") + cached,
            tokens_in=F("tokens_in") + (result.tokens_in if result else 0),
            tokens_out=F("tokens_out") + (result.tokens_out if result else 0))


def _grades_write(*, run: JudgeRun, items: list[JudgeRunItem], outcomes: dict[int, _Outcome],
                  now) -> set[int] | None:
    """Counting modes: the accepted grades into the judge's slots; the snapshots written, or
    None when the evaluation stopped taking grades (the run pauses, the items wait)."""
    grades = [(item.snapshot_id, outcomes[item.pk].grade, outcomes[item.pk].reason)
              for item in items if not outcomes[item.pk].failure]
    if run.mode not in COUNTING_MODES or not grades:
        return set()
    try:
        # Its own atomic block is a savepoint here: a refusal leaves this transaction usable.
        return grading.judge_grades_write(judge_user=run.judge.user, evaluation=run.evaluation,
                                          grades=grades, now=now)
    except ValidationError:
        JudgeRunItem.objects.filter(pk__in=[item.pk for item in items]).update(
            status=ItemStatus.PENDING, lease_expires_at=None)
        grading.judge_slots_release(judge_user=run.judge.user,
                                    snapshot_ids=[item.snapshot_id for item in items])
        JudgeRun.objects.filter(pk=run.pk, status=Status.RUNNING).update(status=Status.PAUSED)
        return None


def crash_text(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"[:2000]


def _crashed(*, run: JudgeRun, items: list[JudgeRunItem], error: BaseException) -> None:
    """The batch raised: the pairs its claim still owns fail with the reason."""
    detail = crash_text(error)
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
