"""Every statement of judgments.queries answers what the same question asked through the
ORM answers (SQLite by default; PostgreSQL with DATABASE_URL)."""

from datetime import timedelta

import pytest
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from evaluations.models import Evaluation, Snapshot
from judgments import queries, queue
from judgments.models import FeedbackSlot, GoldItem, SlotSkip
from judgments.slot_json import ASSIGNED_SLOT_FIELDS
from searchtweak import sql
from searchtweak.models import Membership
from tests.judgments.builders import evaluation_with_slots

pytestmark = pytest.mark.django_db


def orm_target(evaluation: Evaluation, user) -> dict:
    role = Membership.objects.filter(team_id=evaluation.team_id, user=user).values_list(
        "role", flat=True).first()
    return {"id": evaluation.pk, "team_id": evaluation.team_id, "status": evaluation.status,
            "scale": evaluation.scale, "tags": evaluation.tags,
            "shuffle_results": evaluation.shuffle_results,
            "grading_order": evaluation.grading_order, "strategy": evaluation.strategy,
            "role": role,
            "gold": evaluation.gold_rate > 0 and GoldItem.objects.filter(
                team_id=evaluation.team_id, scale=evaluation.scale).exists()}


def decoded(row: dict | None) -> dict | None:
    # SQLite answers a boolean as 0 or 1.
    return None if row is None else {**row, "tags": sql.json_value(row["tags"]),
                                     "shuffle_results": bool(row["shuffle_results"]),
                                     "gold": bool(row["gold"])}


def test_target_rows(personas):
    evaluation = evaluation_with_slots(personas.team, tags=["de"])
    snapshot = Snapshot.objects.filter(keyword__evaluation=evaluation).first()
    for user in (personas.grader, personas.owner, personas.outsider):
        expected = orm_target(evaluation, user)
        assert decoded(queries.evaluation_target_row(
            user_id=user.pk, evaluation_id=evaluation.pk)) == expected
        assert decoded(queries.snapshot_target_row(
            user_id=user.pk, snapshot_id=snapshot.pk)) == expected
    assert expected["role"] is None  # the outsider


def test_target_rows_say_whether_the_queue_slips_in_gold(personas):
    evaluation = evaluation_with_slots(personas.team)
    other = evaluation_with_slots(personas.team)
    row = queries.evaluation_target_row(user_id=personas.grader.pk, evaluation_id=evaluation.pk)
    assert not row["gold"] and not orm_target(evaluation, personas.grader)["gold"]
    GoldItem.objects.create(team=personas.team, scale=evaluation.scale, grade=1, source="page",
                            snapshot=Snapshot.objects.filter(keyword__evaluation=other).first())
    row = queries.evaluation_target_row(user_id=personas.grader.pk, evaluation_id=evaluation.pk)
    assert row["gold"] and orm_target(evaluation, personas.grader)["gold"]
    Evaluation.objects.filter(pk=evaluation.pk).update(gold_rate=0)
    evaluation.refresh_from_db()
    row = queries.evaluation_target_row(user_id=personas.grader.pk, evaluation_id=evaluation.pk)
    assert not row["gold"] and not orm_target(evaluation, personas.grader)["gold"]
    assert queries.evaluation_target_row(user_id=personas.grader.pk, evaluation_id=0) is None
    assert queries.snapshot_target_row(user_id=personas.grader.pk, snapshot_id=0) is None


def test_assigned_slot_row(personas):
    evaluation = evaluation_with_slots(personas.team)
    slot = FeedbackSlot.objects.filter(evaluation=evaluation).order_by("pk").first()
    now = timezone.now()
    FeedbackSlot.objects.filter(pk=slot.pk).update(
        user=personas.grader, assigned_at=now, lease_expires_at=now + timedelta(minutes=5),
        unsure=True, note="hm")
    Snapshot.objects.filter(pk=slot.snapshot_id).update(fields={"price": 3})
    loaded = FeedbackSlot.objects.select_related("user", "keyword", "snapshot").get(pk=slot.pk)

    def read(source: str):
        value = loaded
        for name in source.split("."):
            value = getattr(value, name) if value is not None else None
        return value

    expected = {field.name: read(field.source) for field in ASSIGNED_SLOT_FIELDS}
    row = queries.assigned_slot_row(slot_id=slot.pk)
    assert {**row, "unsure": bool(row["unsure"]), "fields": sql.json_value(row["fields"]),
            **{name: sql.time_value(row[name])
               for name in ("assigned_at", "lease_expires_at", "graded_at")}} == expected
    assert expected["user"] == personas.grader.username and expected["fields"] == {"price": 3}
    assert queries.assigned_slot_row(slot_id=0) is None


def test_own_slot_row_for_update(personas):
    evaluation = evaluation_with_slots(personas.team, strategy=3)
    slot = FeedbackSlot.objects.filter(evaluation=evaluation, index=1).first()
    FeedbackSlot.objects.filter(pk=slot.pk).update(user=personas.grader, grade=2)
    assert queries.own_slot_row_for_update(
        snapshot_id=slot.snapshot_id, user_id=personas.grader.pk) == FeedbackSlot.objects.filter(
        snapshot_id=slot.snapshot_id, user=personas.grader).values(
        "id", "grade", "keyword_id").get()
    assert queries.own_slot_row_for_update(
        snapshot_id=slot.snapshot_id, user_id=personas.lead.pk) is None


def orm_first_free(*, evaluation: Evaluation, user, now, include_skipped: bool) -> int | None:
    """The slot the claim takes: free, of a snapshot the user holds no other slot of (and
    did not skip), first in keyword, position, index order."""
    holds_another = FeedbackSlot.objects.filter(
        snapshot_id=OuterRef("snapshot_id"), user=user).exclude(pk=OuterRef("pk"))
    slots = FeedbackSlot.objects.filter(
        Q(user__isnull=True) | Q(lease_expires_at__lt=now),
        evaluation=evaluation, grade__isnull=True).exclude(Exists(holds_another))
    if not include_skipped:
        slots = slots.exclude(Exists(SlotSkip.objects.filter(
            snapshot_id=OuterRef("snapshot_id"), user=user)))
    return slots.order_by("keyword_position", "position", "index").values_list(
        "pk", flat=True).first()


@pytest.mark.parametrize("include_skipped", [False, True])
def test_claim_statement(personas, include_skipped):
    evaluation = evaluation_with_slots(personas.team, strategy=3, keywords=1, positions=3)
    now = timezone.now()
    slots = list(FeedbackSlot.objects.filter(evaluation=evaluation)
                 .order_by("keyword_position", "position", "index"))
    # The first result: a slot graded by someone else, one held by the grader (the result
    # is theirs already), one free; the second: skipped by the grader; the third: a slot
    # leased by another grader, then one whose lease ran out.
    FeedbackSlot.objects.filter(pk=slots[0].pk).update(user=personas.lead, grade=1)
    FeedbackSlot.objects.filter(pk=slots[1].pk).update(
        user=personas.grader, lease_expires_at=now + timedelta(minutes=1))
    SlotSkip.objects.create(user=personas.grader, snapshot_id=slots[3].snapshot_id,
                            evaluation=evaluation, skipped_at=now)
    FeedbackSlot.objects.filter(pk=slots[6].pk).update(
        user=personas.lead, lease_expires_at=now + timedelta(minutes=1))
    FeedbackSlot.objects.filter(pk=slots[7].pk).update(
        user=personas.admin, lease_expires_at=now - timedelta(minutes=1))
    expected = orm_first_free(evaluation=evaluation, user=personas.grader, now=now,
                              include_skipped=include_skipped)
    assert expected == (slots[3].pk if include_skipped else slots[7].pk)
    statement, params = queries.queue_claim_sql(
        user_id=personas.grader.pk, now=now, lease_until=now + queue.LEASE,
        evaluation_id=evaluation.pk, include_skipped=include_skipped)
    claimed = sql.fetch_one(statement, params)
    assert claimed["id"] == expected
    slot = FeedbackSlot.objects.get(pk=expected)
    assert (slot.user_id, slot.assigned_at, slot.lease_expires_at) == (
        personas.grader.pk, now, now + queue.LEASE)


def test_renew_held_statement(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=2, positions=2)
    other = evaluation_with_slots(personas.team, keywords=1, positions=1)
    now = timezone.now()
    slots = list(FeedbackSlot.objects.filter(evaluation=evaluation).order_by("pk"))
    held = {slots[0].pk: now - timedelta(seconds=30), slots[1].pk: now - timedelta(seconds=60),
            slots[2].pk: now - timedelta(seconds=90)}
    for pk, assigned_at in held.items():
        FeedbackSlot.objects.filter(pk=pk).update(
            user=personas.grader, assigned_at=assigned_at,
            lease_expires_at=now + timedelta(minutes=1))
    FeedbackSlot.objects.filter(pk=slots[2].pk).update(lease_expires_at=now - timedelta(1))
    FeedbackSlot.objects.filter(pk=slots[1].pk).update(grade=2)
    FeedbackSlot.objects.filter(evaluation=other).update(
        user=personas.grader, assigned_at=now - timedelta(hours=1),
        lease_expires_at=now + timedelta(minutes=1))
    expected = FeedbackSlot.objects.filter(
        user=personas.grader, evaluation=evaluation, grade__isnull=True,
        lease_expires_at__gte=now).order_by("assigned_at", "pk").values_list(
        "pk", flat=True).first()
    assert expected == slots[0].pk
    renewed = sql.fetch_one(*queries.renew_held_sql(
        user_id=personas.grader.pk, evaluation_ids=[evaluation.pk], now=now,
        lease_until=now + queue.LEASE))
    assert renewed == {"id": expected}
    assert FeedbackSlot.objects.get(pk=expected).lease_expires_at == now + queue.LEASE
    assert sql.fetch_one(*queries.renew_held_sql(
        user_id=personas.lead.pk, evaluation_ids=[evaluation.pk], now=now,
        lease_until=now + queue.LEASE)) is None
