"""Claiming a judge run's batches and readying them: whole batches (up to batch_size pairs
of one keyword each, several batches in one claim) and, in counting modes, the judge's slot
of each pair; then each batch's documents and cache keys, with one read of their results
and of the cache for all, the answers found there and the rest to ask (judges.runs states
the rules). Pairs the model was not asked about go back unclaimed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal

from django.db import transaction
from django.db.models import F
from django.db.models.functions import Mod

from evaluations.models import Snapshot
from judges import calls
from judges.core.cache import cache_key
from judges.core.prompts import Document, images_to_send
from judges.models import Judge, JudgeAnswer, JudgeRun, JudgeRunItem
from judgments import grading
from judgments import scales as scale_lookup
from judgments.models import FeedbackSlot
from searchtweak import sql

Mode, Status, ItemStatus = JudgeRun.Mode, JudgeRun.Status, JudgeRunItem.Status
COUNTING_MODES = (Mode.UNGRADED, Mode.FILL)
# Beyond the longest a call can take: a claim outliving this means its worker is gone.
LEASE_MARGIN_SECONDS = 30.0


def lease_seconds(judge: Judge) -> float:
    return calls.call_deadline_seconds(judge) + LEASE_MARGIN_SECONDS


@dataclass
class Outcome:
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


@dataclass
class Batch:
    """One call's worth of a claim: its items (the still claimed ones), what it asks, and
    what came back."""

    items: list[JudgeRunItem]
    keyword: str = ""
    documents: dict[int, Document] = field(default_factory=dict)
    outcomes: dict[int, Outcome] = field(default_factory=dict)
    asking: list[JudgeRunItem] = field(default_factory=list)
    scale: object = None
    reserved: Decimal = Decimal(0)
    over_budget: bool = False
    result: calls.AskResult | None = None
    error: BaseException | None = None


def in_batches(items: list[JudgeRunItem], size: int) -> list[list[JudgeRunItem]]:
    """Claimed items as calls: each keyword's in pk order, `size` at most a call."""
    by_keyword: dict[int, list[JudgeRunItem]] = {}
    for item in sorted(items, key=lambda item: item.pk):
        by_keyword.setdefault(item.keyword_id, []).append(item)
    return [group[start:start + size] for group in by_keyword.values()
            for start in range(0, len(group), size)]


def items_claim(*, run: JudgeRun, now, lease_until, lane: Lane = ONE_LANE,
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
    chosen = in_batches(rows[:-1] if cut else rows, size)[:batches]
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


def prepare(*, run: JudgeRun, batches: list[Batch]) -> None:
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
            batch.outcomes = {item.pk: Outcome(failure="scale", detail=(
                f"the evaluation's scale {evaluation.scale!r} is gone"))
                for item in batch.items}
        return
    template, provider = calls.template_for(judge, scale.scale), calls.provider_for(judge)
    for batch in batches:
        batch.scale = scale.scale
        for item in batch.items:
            document = batch.documents[item.pk]
            batch.outcomes[item.pk] = Outcome(cache_key=answer_key(
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


def unclaim(*, run: JudgeRun, items: list[JudgeRunItem]) -> None:
    """The model was not asked (no turn in time): the items wait for another lane."""
    with transaction.atomic():
        ids = list(JudgeRunItem.objects.select_for_update().filter(
            pk__in=[item.pk for item in items], status=ItemStatus.CLAIMED,
            claimed_at=items[0].claimed_at).values_list("pk", flat=True))
        JudgeRunItem.objects.filter(pk__in=ids).update(
            status=ItemStatus.PENDING, lease_expires_at=None)
        grading.judge_slots_release(judge_user=run.judge.user, snapshot_ids=[
            item.snapshot_id for item in items if item.pk in ids])
