"""Adaptive slots ("1 → 3") when the two grades of a result land at the same moment, on
real PostgreSQL rows: the later grade waits on the result's row lock and sees the first,
so each tied result gets its third slot exactly once. (Today the keyword's recompute mark,
upserted in both grades' transactions, serializes them as well: this test still passes
without the row lock, which stays for the grades that leave the mark alone.)"""

import threading

import pytest
from django.db import connection
from django.utils import timezone

from evaluations.strategies import ADAPTIVE_STRATEGY
from judgments.grading import feedback_submit
from judgments.models import FeedbackSlot, OpenedBecause
from judgments.queue import LEASE
from searchtweak.models import Role
from tests.conftest import skip_or_fail
from tests.judgments.builders import evaluation_with_slots
from tests.searchtweak.factories import member
from tests.threads import run_together

pytestmark = pytest.mark.django_db(transaction=True)

RESULTS = 20


def test_two_grades_at_once_on_a_tied_result_open_its_third_slot_once(personas):
    if connection.vendor != "postgresql":
        skip_or_fail("concurrent transactions need PostgreSQL: set DATABASE_URL")
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=RESULTS,
                                       strategy=ADAPTIVE_STRATEGY)
    graders = [member(personas.team, Role.GRADER, f"g{n}") for n in range(2)]
    now = timezone.now()
    held: dict[int, list[int]] = {grader.pk: [] for grader in graders}
    for first in FeedbackSlot.objects.filter(evaluation=evaluation).order_by("position"):
        second = FeedbackSlot.objects.create(
            snapshot_id=first.snapshot_id, keyword_id=first.keyword_id, evaluation=evaluation,
            index=1, keyword_position=first.keyword_position, position=first.position,
            opened_because=OpenedBecause.BOUNDS)
        for grader, slot in zip(graders, (first, second), strict=True):
            FeedbackSlot.objects.filter(pk=slot.pk).update(
                user=grader, assigned_at=now, lease_expires_at=now + LEASE)
            held[grader.pk].append(slot.pk)
    together = threading.Barrier(2)

    def run(grader, grade: int) -> None:
        for slot_id in held[grader.pk]:
            together.wait(timeout=30)
            feedback_submit(user=grader, slot_id=slot_id, grade=grade)

    run_together(run, list(zip(graders, (0, 1), strict=True)), timeout=120)
    # 0 and 1 on the graded scale: a tie at the binary cut-off on every result.
    thirds = FeedbackSlot.objects.filter(evaluation=evaluation, index=2)
    assert thirds.count() == RESULTS
    assert set(thirds.values_list("opened_because", flat=True)) == {"cutoff"}
