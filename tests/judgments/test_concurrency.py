"""Eight graders claiming and grading one evaluation at once, on real PostgreSQL rows."""

import threading
from collections import Counter
from collections.abc import Callable

import pytest
from django.db import connection

from evaluations.models import Evaluation
from judgments import selectors
from judgments.grading import feedback_submit, snapshot_grade_and_claim_next
from judgments.models import FeedbackSlot
from judgments.queue import slot_claim_next, slot_claim_next_assigned
from metrics.models import KeywordMetricValue, KeywordRecomputeMark
from searchtweak.models import Role
from tests.conftest import skip_or_fail
from tests.evaluations.factories import EvaluationMetricFactory
from tests.judgments.builders import evaluation_with_slots
from tests.metrics.oracles import assert_stored_values_equal_a_full_recompute
from tests.recompute_state import dirty_marks
from tests.searchtweak.factories import member
from tests.threads import run_together

pytestmark = pytest.mark.django_db(transaction=True)

GRADERS = 8


def _grade_at_once(personas, grade_until_empty: Callable,
                   grading_order: str = Evaluation.GradingOrder.POSITION) -> tuple:
    """Eight graders of a fresh evaluation (4 keywords x 10 results x 3 slots, handing out
    in `grading_order`) each run
    grade_until_empty(user, evaluation, handed, submitted) in a thread of their own,
    started together; what they were handed ({user id: [slot ids]}) and sent ({slot id:
    grade})."""
    if connection.vendor != "postgresql":
        skip_or_fail("row locks (FOR UPDATE SKIP LOCKED) need PostgreSQL: set DATABASE_URL")
    evaluation = evaluation_with_slots(personas.team, keywords=4, positions=10, strategy=3,
                                       grading_order=grading_order)
    # Every grade's recompute runs (eagerly) in its grader's thread, concurrently.
    for position, code in enumerate(["precision", "ndcg", "err"]):
        EvaluationMetricFactory(evaluation=evaluation, code=code, k=10, position=position)
    users = [member(personas.team, Role.GRADER, f"g{n}") for n in range(GRADERS)]
    handed: dict[int, list[int]] = {user.pk: [] for user in users}
    submitted: dict[int, int] = {}
    start = threading.Barrier(GRADERS)

    def run(user) -> None:
        start.wait()
        grade_until_empty(user, evaluation, handed[user.pk], submitted)

    run_together(run, [(u,) for u in users], timeout=120)
    return evaluation, handed, submitted


def _assert_each_slot_graded_once(evaluation, handed, submitted) -> dict[int, FeedbackSlot]:
    all_handed = [slot_id for slot_ids in handed.values() for slot_id in slot_ids]
    slots = {slot.pk: slot for slot in FeedbackSlot.objects.filter(evaluation=evaluation)}
    assert len(slots) == 4 * 10 * 3
    # No slot was handed to two graders, and every slot was handed out once.
    assert sorted(all_handed) == sorted(slots)
    # No grade was lost: every slot holds the grade its grader sent, under their name.
    for user_id, slot_ids in handed.items():
        for slot_id in slot_ids:
            assert (slots[slot_id].user_id, slots[slot_id].grade) == (user_id, submitted[slot_id])
    # Nobody filled two slots of one result.
    pairs = [(slot.snapshot_id, slot.user_id) for slot in slots.values()]
    assert len(pairs) == len(set(pairs))
    # More than one grader did the work.
    assert sum(1 for slot_ids in handed.values() if slot_ids) > 1
    # Runs raced each other's grades; once all are in, nothing is left dirty and every
    # stored value is what a full recompute writes.
    assert not dirty_marks(evaluation=evaluation).exists()
    assert KeywordMetricValue.objects.filter(keyword__evaluation=evaluation).count() == 4 * 3
    assert_stored_values_equal_a_full_recompute(evaluation.pk)
    return slots


@pytest.mark.parametrize("grading_order", Evaluation.GradingOrder.values)
def test_eight_graders_grade_every_slot_exactly_once(personas, grading_order):
    def grade_until_empty(user, evaluation, handed, submitted) -> None:
        while (slot := slot_claim_next(user=user, team=personas.team,
                                       evaluation=evaluation)) is not None:
            handed.append(slot.pk)
            grade = (slot.pk * 7 + user.pk) % 4
            feedback_submit(user=user, slot_id=slot.pk, grade=grade)
            submitted[slot.pk] = grade

    _assert_each_slot_graded_once(*_grade_at_once(personas, grade_until_empty, grading_order))


@pytest.mark.parametrize("grading_order", Evaluation.GradingOrder.values)
def test_eight_graders_in_the_one_request_loop_grade_every_slot_exactly_once(personas,
                                                                             grading_order):
    # The grading API's loop (next/ carrying the previous result's grade): on PostgreSQL
    # each grade, lease and read is one statement.
    def grade_until_empty(user, evaluation, handed, submitted) -> None:
        decisive = [evaluation.pk] if grading_order == "decisive" else []
        slot = slot_claim_next_assigned(user=user, evaluation_ids=[evaluation.pk],
                                        decisive_ids=decisive)
        while slot is not None:
            handed.append(slot["id"])
            grade = (slot["id"] * 7 + user.pk) % 4
            target = selectors.snapshot_target_for_user(
                user=user, snapshot_id=slot["snapshot"])
            next_slot = snapshot_grade_and_claim_next(
                user=user, target=target, grade=grade, evaluation_ids=[evaluation.pk],
                decisive_ids=decisive)
            submitted[slot["id"]] = grade
            slot = next_slot

    evaluation, handed, submitted = _grade_at_once(personas, grade_until_empty, grading_order)
    slots = _assert_each_slot_graded_once(evaluation, handed, submitted)
    # Every grade (each a change from none) bumped its keyword's version once.
    versions = dict(KeywordRecomputeMark.objects.filter(evaluation=evaluation)
                    .values_list("keyword_id", "version"))
    assert versions == dict(Counter(slot.keyword_id for slot in slots.values()))
