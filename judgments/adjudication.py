"""A lead settles a result: one answer for every graded slot of a snapshot (the judges'
triage page and API ask for it when a judge and people disagree).

The grades go through judgments.grading (slot_grade_by_lead, one slot at a time), the one
path of every grade write, so each changed slot marks its keyword dirty in this
transaction and the recompute follows after commit as for any grade. What was decided,
by whom and when is kept in AdjudicatedAnswer; an answer marked gold is the result's
GoldItem too (judgments.gold_items).
"""

from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from evaluations.models import Evaluation, Snapshot
from judgments.gold_items import gold_item_save
from judgments.grading import grade_checked, slot_grade_by_lead
from judgments.models import AdjudicatedAnswer, FeedbackSlot, GoldItem
from searchtweak.models import User


@transaction.atomic
def snapshot_adjudicate(*, lead: User, evaluation: Evaluation, snapshot: Snapshot, grade: Any,
                        gold: bool = False) -> AdjudicatedAnswer:
    """Set every graded slot of `snapshot` (the judges' and the people's alike) to `grade`
    and record the decision. Slots nobody graded stay in the queue. ValidationError naming
    the field (`grade` off the evaluation's scale, `snapshot` not graded or not the
    evaluation's, `gold` not a boolean); nothing is written then."""
    value = grade_checked(evaluation=evaluation, grade=grade)
    if not isinstance(gold, bool):
        raise ValidationError({"gold": "Say true or false."})
    if snapshot.keyword.evaluation_id != evaluation.pk:
        raise ValidationError({"snapshot": "This result is not one of the evaluation's."})
    slot_ids = list(FeedbackSlot.objects.filter(snapshot=snapshot, grade__isnull=False)
                    .order_by("index", "pk").values_list("pk", flat=True))
    if not slot_ids:
        raise ValidationError({"snapshot": "No one has graded this result: there is no "
                                           "disagreement to settle."})
    # Recorded before the grades: a "1 → 3" evaluation opens no slot on a decided result
    # (judgments.adaptive), not even between two of these grades.
    answer, _ = AdjudicatedAnswer.objects.update_or_create(
        snapshot=snapshot, defaults={"evaluation": evaluation, "grade": value, "gold": gold,
                                     "decided_by": lead, "decided_at": timezone.now()})
    for slot_id in slot_ids:
        slot_grade_by_lead(lead=lead, slot_id=slot_id, grade=value)
    if gold:
        gold_item_save(evaluation=evaluation, snapshot=snapshot, grade=value,
                       source=GoldItem.Source.ADJUDICATED, user=lead)
    else:
        # Decided again without gold: an adjudicated gold item no longer stands.
        GoldItem.objects.filter(snapshot=snapshot, source=GoldItem.Source.ADJUDICATED).delete()
    return answer
