"""One slot JSON: the grading API's fast path (a raw row, judgments.api.assigned_slot_data)
and its serializer over the model answer byte for byte the same, in every state of a slot
(SQLite by default; PostgreSQL with DATABASE_URL)."""

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.renderers import JSONRenderer

from evaluations.models import Snapshot
from judgments import selectors
from judgments.api import AssignedSlotOutputSerializer, SlotOutputSerializer, assigned_slot_data
from judgments.grading import snapshot_grade_and_claim_next
from judgments.models import FeedbackSlot, PoolJudgment
from judgments.queue import slot_claim_next_assigned
from judgments.slot_json import ASSIGNED_SLOT_FIELDS, SLOT_FIELDS
from tests.judgments.builders import evaluation_with_slots

pytestmark = pytest.mark.django_db


def by_serializer(slot_id: int) -> bytes:
    slot = FeedbackSlot.objects.select_related("user", "keyword", "snapshot").get(pk=slot_id)
    return JSONRenderer().render(AssignedSlotOutputSerializer(slot).data)


def by_fast_path(row: dict) -> bytes:
    return JSONRenderer().render(assigned_slot_data(row))


def test_the_serializers_have_exactly_the_defined_fields():
    assert list(SlotOutputSerializer().fields) == [f.name for f in SLOT_FIELDS]
    assert list(AssignedSlotOutputSerializer().fields) == [f.name for f in ASSIGNED_SLOT_FIELDS]


def test_fast_path_and_serializer_give_identical_json_in_every_state(personas):
    evaluation = evaluation_with_slots(personas.team, strategy=3, keywords=1, positions=3)
    slots = list(FeedbackSlot.objects.filter(evaluation=evaluation).order_by("pk"))
    Snapshot.objects.filter(pk=slots[0].snapshot_id).update(
        fields={"price": 9.5, "tags": ["a", "ü"]}, image="https://example.test/p.png")
    now = timezone.now()
    # Free; held by a grader, unsure with a note; graded; copied from an imported judgment.
    FeedbackSlot.objects.filter(pk=slots[1].pk).update(
        user=personas.grader, assigned_at=now, lease_expires_at=now + timedelta(minutes=5),
        unsure=True, note="not sure")
    FeedbackSlot.objects.filter(pk=slots[2].pk).update(
        user=personas.lead, assigned_at=now, graded_at=now, grade=3)
    judgment = PoolJudgment.objects.create(
        team=personas.team, scale=evaluation.scale, normalized_text="query 1", text="query 1",
        doc_id="x",
        grade=1)
    FeedbackSlot.objects.filter(pk=slots[3].pk).update(
        reused_from_pool=judgment, grade=1, graded_at=now)
    for slot in slots[:4]:
        row = selectors.assigned_slot(slot_id=slot.pk)
        assert by_fast_path(row) == by_serializer(slot.pk), slot.pk


def test_the_claim_and_grade_paths_answer_the_serializers_json(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=2)
    claimed = slot_claim_next_assigned(user=personas.grader,
                                       evaluation_ids=[evaluation.pk])
    assert by_fast_path(claimed) == by_serializer(claimed["id"])
    target = selectors.snapshot_target_for_user(user=personas.grader,
                                                snapshot_id=claimed["snapshot"])
    following = snapshot_grade_and_claim_next(
        user=personas.grader, target=target, grade=2, evaluation_ids=[evaluation.pk])
    assert following["id"] != claimed["id"]
    assert by_fast_path(following) == by_serializer(following["id"])
    graded = selectors.assigned_slot(slot_id=claimed["id"])
    assert graded["grade"] == 2 and by_fast_path(graded) == by_serializer(claimed["id"])
