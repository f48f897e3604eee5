"""Eight graders claiming and grading one evaluation at once, on real PostgreSQL rows."""

import threading

import pytest
from django.db import connection

from judgments import services
from judgments.models import FeedbackSlot
from searchtweak.models import Role
from tests.conftest import skip_or_fail
from tests.judgments.builders import evaluation_with_slots
from tests.searchtweak.factories import member

pytestmark = pytest.mark.django_db(transaction=True)

GRADERS = 8


def test_eight_graders_grade_every_slot_exactly_once(personas):
    if connection.vendor != "postgresql":
        skip_or_fail("row locks (FOR UPDATE SKIP LOCKED) need PostgreSQL: set DATABASE_URL")
    team = personas.team
    evaluation = evaluation_with_slots(team, keywords=4, positions=10, strategy=3)
    users = [member(team, Role.GRADER, f"g{n}") for n in range(GRADERS)]
    claimed: dict[int, list[int]] = {user.pk: [] for user in users}
    submitted: dict[int, int] = {}
    errors: list[BaseException] = []
    start = threading.Barrier(GRADERS)

    def grade_until_empty(user) -> None:
        try:
            start.wait()
            while (slot := services.slot_claim_next(user=user, team=team,
                                                    evaluation=evaluation)) is not None:
                claimed[user.pk].append(slot.pk)
                grade = (slot.pk * 7 + user.pk) % 4
                services.feedback_submit(user=user, slot_id=slot.pk, grade=grade)
                submitted[slot.pk] = grade
        except BaseException as error:  # surfaced by the main thread below
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=grade_until_empty, args=(u,)) for u in users]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors

    all_claims = [slot_id for slots in claimed.values() for slot_id in slots]
    slots = {slot.pk: slot for slot in FeedbackSlot.objects.filter(evaluation=evaluation)}
    assert len(slots) == 4 * 10 * 3
    # No slot was handed to two graders, and every slot was handed out once.
    assert sorted(all_claims) == sorted(slots)
    # No grade was lost: every slot holds the grade its grader sent, under their name.
    for user_id, slot_ids in claimed.items():
        for slot_id in slot_ids:
            assert (slots[slot_id].user_id, slots[slot_id].grade) == (user_id, submitted[slot_id])
    # Nobody filled two slots of one result.
    pairs = [(slot.snapshot_id, slot.user_id) for slot in slots.values()]
    assert len(pairs) == len(set(pairs))
    # More than one grader did the work.
    assert sum(1 for slot_ids in claimed.values() if slot_ids) > 1
