"""Gold items: results with a known answer, slipped into graders' queues
as probes that measure each grader and never enter metrics.

- A gold item (GoldItem) is one result (Snapshot) of the team with its answer: from an
  adjudicated answer marked gold, a "make gold" action on a graded result or an import
  (judgments.gold_items).
- A probe (GoldProbe) is a gold item handed to one grader in one evaluation's queue: the
  claim decides it (probe_due: a fixed share `Evaluation.gold_rate` of each grader's
  claims, chosen by a hash of grader, evaluation and claim number, so the rate holds
  without a shared counter), never the same item twice to one grader (a unique
  constraint), only items of the evaluation's scale from another, finished evaluation,
  whose slots can take no grade: a grade sent for that result can only be the probe's. It
  is read as the grading API reads a slot (probe_row: the same fields, no mark of gold).
- probe_next is the one rule for both doors: the grading API's queue
  (judgments.queue.slot_claim_next_assigned) and the HTML grading page (judgments.views),
  which asks it before claiming a slot. On the page a probe may be skipped (probe_skip):
  put aside for good, never handed to that grader again.
- Its grade is written by judgments.grading.gold_probe_grade (the one writer of grades)
  on the probe, never on a FeedbackSlot, so the recompute never reads it.
"""

import hashlib
from collections.abc import Collection
from datetime import datetime, timedelta

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.http import Http404
from django.utils import timezone

from evaluations.models import Evaluation, Snapshot
from judgments.models import FeedbackSlot, GoldItem, GoldProbe
from judgments.slot_json import ASSIGNED_SLOT_FIELDS
from searchtweak.models import User

PROBE_LEASE = timedelta(minutes=5)

# --- the queue's probes ---


def probe_due(*, user_id: int, evaluation_id: int, claim_number: int, rate: float) -> bool:
    """Whether the grader's `claim_number`-th claim in the evaluation hands out a gold item:
    a hash of the three read as a number in [0, 1) below `rate`. Deterministic, so tests
    count the rate exactly and a reload asks the same question; unpredictable to a grader,
    who sees neither the hash nor their claim number."""
    digest = hashlib.sha256(f"gold:{user_id}:{evaluation_id}:{claim_number}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < rate


def _usable_gold(*, user: User, evaluation: Evaluation):
    """The team's gold items the grader may be probed with in the evaluation: same scale,
    from another evaluation that is finished, never handed to them, not a result they
    graded themselves."""
    return (GoldItem.objects.filter(team_id=evaluation.team_id, scale=evaluation.scale,
                                    snapshot__keyword__evaluation__status=Evaluation.Status.FINISHED)
            .exclude(snapshot__keyword__evaluation_id=evaluation.pk)
            .exclude(Q(probes__user=user) | Q(snapshot__slots__user=user)))


def probe_held(*, user: User, evaluation_ids: list[int], now: datetime) -> GoldProbe | None:
    """The grader's ungraded probe in these evaluations, its lease renewed. An ungraded
    probe stays the grader's (no one else may take it): it comes back first, as a held
    slot does."""
    probe = (GoldProbe.objects.filter(user=user, evaluation_id__in=evaluation_ids,
                                      grade__isnull=True, skipped_at__isnull=True)
             .order_by("assigned_at", "pk").first())
    if probe is not None:
        probe.lease_expires_at = now + PROBE_LEASE
        probe.save(update_fields=["lease_expires_at"])
    return probe


def probe_claim(*, user: User, evaluation: Evaluation, now: datetime) -> GoldProbe | None:
    """Hand the grader a probe in the evaluation if this claim is due one (probe_due) and
    a gold item is left for them, among real work (a free slot is left for them there);
    None otherwise (the claim takes a slot). The caller
    checked that they hold no slot or probe there."""
    if evaluation.gold_rate <= 0:
        return None
    claim_number = (FeedbackSlot.objects.filter(user=user, evaluation=evaluation).count()
                    + GoldProbe.objects.filter(user=user, evaluation=evaluation).count())
    if not probe_due(user_id=user.pk, evaluation_id=evaluation.pk, claim_number=claim_number,
                     rate=evaluation.gold_rate):
        return None
    # Slipped in among real work only: once nothing is left for the grader, a claim still
    # "due" would hand out probes alone, after the evaluation's work is done.
    if not FeedbackSlot.objects.filter(
            Q(user__isnull=True) | Q(lease_expires_at__lt=now), evaluation=evaluation,
            grade__isnull=True).exclude(snapshot__slots__user=user).exists():
        return None
    for gold in _usable_gold(user=user, evaluation=evaluation).order_by("?")[:3]:
        try:
            with transaction.atomic():
                return GoldProbe.objects.create(
                    gold=gold, user=user, evaluation=evaluation, expected=gold.grade,
                    assigned_at=now, lease_expires_at=now + PROBE_LEASE)
        except IntegrityError:
            continue  # the same grader's parallel request took it: the next one
    return None


def probe_next(*, user: User, evaluation_ids: list[int],
               gold_ids: Collection[int]) -> GoldProbe | None:
    """The probe for this claim: the one the grader holds ungraded, else a new one when the
    claim is due one in the first evaluation (the one a slot would come from) and the
    grader holds no slot; None: claim a slot. The API's queue and the grading page both
    ask this, so the rate and the rules are the same whatever the door."""
    now = timezone.now()
    probing = [evaluation_id for evaluation_id in evaluation_ids if evaluation_id in gold_ids]
    held = probe_held(user=user, evaluation_ids=probing, now=now) if probing else None
    if held is not None:
        return held
    if not evaluation_ids or evaluation_ids[0] not in gold_ids or FeedbackSlot.objects.filter(
            user=user, evaluation_id__in=evaluation_ids, grade__isnull=True,
            lease_expires_at__gte=now).exists():
        return None
    evaluation = Evaluation.objects.only("team_id", "scale", "gold_rate").get(
        pk=evaluation_ids[0])
    return probe_claim(user=user, evaluation=evaluation, now=now)


def probing_evaluation_ids(*, evaluation_ids: Collection[int]) -> frozenset[int]:
    """Which of these evaluations slip in probes (probe_next's `gold_ids`): a rate above
    0 and gold items of their scale in their team, as the grading target's `gold` says
    for the API (judgments.queries)."""
    if not evaluation_ids:
        return frozenset()
    rows = Evaluation.objects.filter(pk__in=evaluation_ids, gold_rate__gt=0).values_list(
        "pk", "team_id", "scale")
    with_gold = set(GoldItem.objects.filter(
        team_id__in={team_id for _, team_id, _ in rows}).values_list("team_id", "scale"))
    return frozenset(pk for pk, team_id, scale in rows if (team_id, scale) in with_gold)


def probe_get_for_user(*, user: User, probe_id: int) -> GoldProbe:
    """One of the grader's own probes, for the grading page; 404 for anyone else's, as
    for a missing one (no one may see that another's item is a probe)."""
    probe = (GoldProbe.objects.select_related("gold__snapshot__keyword", "evaluation")
             .filter(pk=probe_id, user=user).first())
    if probe is None:
        raise Http404("No such result.")
    return probe


def probe_previous(*, user: User, evaluation_ids: list[int], before_at: datetime | None,
                   before_probe_id: int | None = None) -> GoldProbe | None:
    """The grader's last probe graded in these evaluations that was handed out before
    `before_at` (all of them when None): the grading page's Backspace, beside
    queue_selectors.previous_graded_slot, so going back passes no probe by."""
    probes = GoldProbe.objects.filter(user=user, evaluation_id__in=evaluation_ids,
                                      grade__isnull=False)
    if before_at is not None:
        earlier = Q(assigned_at__lt=before_at)
        if before_probe_id is not None:
            earlier |= Q(assigned_at=before_at, pk__lt=before_probe_id)
        probes = probes.filter(earlier)
    return probes.order_by("-assigned_at", "-pk").first()


def probe_skip(*, user: User, probe_id: int) -> None:
    """Put an ungraded probe aside for good: it stays the grader's row (so the unique
    constraint keeps its item from ever coming back to them), is no longer held, and
    is not graded, so accuracy never reads it."""
    GoldProbe.objects.filter(pk=probe_id, user=user, grade__isnull=True).update(
        skipped_at=timezone.now(), lease_expires_at=None)


def probe_row(probe: GoldProbe) -> dict:
    """The probe as judgments.selectors.assigned_slot reads a slot: the same keys and
    kinds (judgments.slot_json), the evaluation the grader grades, the gold result's
    document, nothing that says gold."""
    snapshot = Snapshot.objects.select_related("keyword").get(pk=probe.gold.snapshot_id)
    evaluation = Evaluation.objects.only("shuffle_results").get(pk=probe.evaluation_id)
    values = {
        "id": probe.pk, "index": 0, "user": probe.user.username, "grade": probe.grade,
        "unsure": probe.unsure, "note": probe.note, "assigned_at": probe.assigned_at,
        "lease_expires_at": probe.lease_expires_at, "graded_at": probe.graded_at,
        "reused_from": None, "reused_from_pool": None, "evaluation": probe.evaluation_id,
        "snapshot": snapshot.pk, "keyword": snapshot.keyword.text,
        "position": None if evaluation.shuffle_results else snapshot.position,
        "doc_id": snapshot.doc_id, "name": snapshot.name, "image": snapshot.image,
        "fields": snapshot.fields,
    }
    return {f.name: values[f.name] for f in ASSIGNED_SLOT_FIELDS}


def probe_for_grade(*, user: User, snapshot_id: int,
                    evaluation_id: int | None = None) -> GoldProbe | None:
    """The grader's probe showing this result (in this evaluation when given), locked:
    where a grade sent for the result goes. Not a skipped one: put aside, it takes no
    grade by any door (a late answer would count after the grader declined it)."""
    probes = GoldProbe.objects.select_for_update().filter(
        user=user, gold__snapshot_id=snapshot_id, skipped_at__isnull=True)
    if evaluation_id is not None:
        probes = probes.filter(evaluation_id=evaluation_id)
    return probes.first()
