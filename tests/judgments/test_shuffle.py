"""Shuffled evaluations (position bias): each grader gets a keyword's results in
their own stable order, never sees the engine's position, and every person's grade records
where its result was shown (SQLite by default; PostgreSQL with DATABASE_URL)."""

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from evaluations.models import Evaluation, Snapshot
from judgments import queries
from judgments.grading import feedback_submit, slot_grade_by_lead, slot_reset
from judgments.models import FeedbackSlot
from judgments.queue import slot_claim_next
from searchtweak import sql
from searchtweak.models import Role
from tests.judgments.builders import evaluation_with_slots
from tests.searchtweak.factories import member

pytestmark = pytest.mark.django_db


def own_order(evaluation: Evaluation, keyword_position: int, user) -> list[int]:
    """The positions of a keyword's results in the grader's shuffled order, from the key."""
    keyword = evaluation.keywords.get(position=keyword_position)
    positions = keyword.snapshots.order_by("position").values_list("position", flat=True)
    return sorted(positions, key=lambda position: (queries.shuffle_key(
        evaluation_id=evaluation.pk, keyword_id=keyword.pk, user_id=user.pk,
        position=position), position))


def grade_through_queue(evaluation: Evaluation, user) -> list[tuple[int, int, int]]:
    """(keyword position, position, shown position) of each result the queue hands the
    grader, graded 2 through the grading page's service, until nothing is left."""
    handed = []
    while (slot := slot_claim_next(user=user, team=evaluation.team,
                                   evaluation=evaluation)) is not None:
        graded = feedback_submit(user=user, slot_id=slot.pk, grade=2)
        handed.append((slot.keyword.position, slot.snapshot.position, graded.shown_position))
    return handed


def test_the_sql_key_is_the_python_key(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=2, positions=5)
    key = queries.shuffle_key_sql(evaluation="%s", keyword='s."keyword_id"', user="%s",
                                  position='s."position"')
    rows = sql.fetch_all(f'SELECT s."keyword_id", s."position", {key} FROM'
                         f' {queries.SNAPSHOTS} s ORDER BY s."id"',
                         # Each input appears in both factors of the key.
                         [evaluation.pk, personas.grader.pk] * 2)
    assert len(rows) == 10
    for keyword_id, position, computed in rows:
        assert computed == queries.shuffle_key(
            evaluation_id=evaluation.pk, keyword_id=keyword_id, user_id=personas.grader.pk,
            position=position)


def test_the_key_of_small_ids_worked_by_hand():
    # M = 2^31 - 1. Evaluation 1, keyword 2, grader 3, position 4:
    # A = 1000003·1 + 7919·2 + 2654435·3 + 40503·4 + 0 = 9141158
    # B = 69069·1 + 1103515·2 + 48271·3 + 16807·4 + 12345 = 2500485
    # A·B = 22857328461630 ≡ 1660006609 (mod M). Position 5: A = 9181661, B = 2517292,
    # A·B ≡ 1702772998, so position 4 sorts first for this grader.
    assert queries.shuffle_key(evaluation_id=1, keyword_id=2, user_id=3, position=4) == (
        1660006609)
    assert queries.shuffle_key(evaluation_id=1, keyword_id=2, user_id=3, position=5) == (
        1702772998)


def test_the_key_stays_inside_64_bits_for_the_largest_ids():
    # Every id below 2**63 is reduced first; the product of two reduced terms fits.
    key = queries.shuffle_key(evaluation_id=2**63 - 1, keyword_id=2**63 - 1,
                              user_id=2**63 - 1, position=32767)
    assert 0 <= key < 2**31 - 1


def test_a_grader_gets_each_keyword_in_their_own_order_and_sees_where(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=2, positions=8, strategy=3,
                                       shuffle_results=True)
    handed = grade_through_queue(evaluation, personas.grader)
    first, second = own_order(evaluation, 1, personas.grader), own_order(
        evaluation, 2, personas.grader)
    # Keywords stay in order; within each, the grader's own order, shown 1, 2, 3...
    assert handed == ([(1, position, shown) for shown, position in enumerate(first, 1)]
                      + [(2, position, shown) for shown, position in enumerate(second, 1)])
    assert first != list(range(1, 9)) and sorted(first) == list(range(1, 9))
    stored = dict(FeedbackSlot.objects.filter(user=personas.grader, keyword__position=1)
                  .values_list("snapshot__position", "shown_position"))
    assert stored == {position: shown for shown, position in enumerate(first, 1)}


def test_two_graders_get_different_orders(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=8, strategy=3,
                                       shuffle_results=True)
    mine = [position for _, position, _ in grade_through_queue(evaluation, personas.grader)]
    theirs = [position for _, position, _ in grade_through_queue(evaluation, personas.lead)]
    assert mine == own_order(evaluation, 1, personas.grader)
    assert theirs == own_order(evaluation, 1, personas.lead)
    assert sorted(mine) == sorted(theirs) == list(range(1, 9))
    assert mine != theirs


def test_the_order_holds_across_reloads_and_a_lapsed_lease(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=6,
                                       shuffle_results=True)
    expected_first = own_order(evaluation, 1, personas.grader)[0]
    held = slot_claim_next(user=personas.grader, team=personas.team,
                           evaluation=evaluation)
    again = slot_claim_next(user=personas.grader, team=personas.team,
                            evaluation=evaluation)
    assert held.snapshot.position == again.snapshot.position == expected_first
    FeedbackSlot.objects.filter(pk=held.pk).update(
        lease_expires_at=timezone.now() - timedelta(seconds=1))
    # Not reshuffled: the lapsed result is still the grader's first.
    assert slot_claim_next(user=personas.grader, team=personas.team,
                           evaluation=evaluation).snapshot.position == expected_first


def test_without_shuffle_results_come_in_engine_order_shown_at_their_position(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=2, positions=4)
    assert grade_through_queue(evaluation, personas.grader) == [
        (1, 1, 1), (1, 2, 2), (1, 3, 3), (1, 4, 4), (2, 1, 1), (2, 2, 2), (2, 3, 3), (2, 4, 4)]


def test_the_team_queue_shuffles_only_the_shuffled_evaluation(personas):
    plain = evaluation_with_slots(personas.team, keywords=1, positions=5)
    shuffled = evaluation_with_slots(personas.team, keywords=1, positions=5,
                                     shuffle_results=True)
    Evaluation.objects.filter(pk=plain.pk).update(started_at=timezone.now() - timedelta(1))
    order = []
    while (slot := slot_claim_next(user=personas.grader, team=personas.team)):
        feedback_submit(user=personas.grader, slot_id=slot.pk, grade=1)
        order.append((slot.evaluation_id, slot.snapshot.position))
    assert order == [(plain.pk, p) for p in range(1, 6)] + [
        (shuffled.pk, p) for p in own_order(shuffled, 1, personas.grader)]


def test_the_grading_api_hands_out_and_records_the_shuffled_order(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=6,
                                       shuffle_results=True)
    client = APIClient()
    client.force_authenticate(personas.grader)
    url = f"/api/v1/evaluations/{evaluation.pk}/next/"
    slot = client.post(url, format="json").json()
    handed = []
    while slot is not None:
        snapshot = Snapshot.objects.get(pk=slot["snapshot"])
        handed.append(snapshot.position)
        response = client.post(url, {"snapshot": snapshot.pk, "grade": 1}, format="json")
        slot = response.json() if response.status_code == 200 else None
    expected = own_order(evaluation, 1, personas.grader)
    assert handed == expected
    assert dict(FeedbackSlot.objects.filter(evaluation=evaluation).values_list(
        "snapshot__position", "shown_position")) == {
        position: shown for shown, position in enumerate(expected, 1)}


def test_grading_a_named_snapshot_records_its_shown_position(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=5,
                                       shuffle_results=True)
    order = own_order(evaluation, 1, personas.grader)
    snapshot = evaluation.keywords.get().snapshots.get(position=order[3])
    client = APIClient()
    client.force_authenticate(personas.grader)
    response = client.post(f"/api/v1/snapshots/{snapshot.pk}/grade/", {"grade": 0},
                           format="json")
    assert response.status_code in (200, 201), response.content
    assert FeedbackSlot.objects.get(snapshot=snapshot, user=personas.grader
                                    ).shown_position == 4


def test_judges_leads_and_resets_record_no_shown_position(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=2)
    slot = slot_claim_next(user=personas.grader, team=personas.team,
                           evaluation=evaluation)
    feedback_submit(user=personas.grader, slot_id=slot.pk, grade=3)
    assert FeedbackSlot.objects.get(pk=slot.pk).shown_position == 1
    # A lead correcting the grade did not see it in the queue.
    slot_grade_by_lead(lead=personas.lead, slot_id=slot.pk, grade=1)
    assert FeedbackSlot.objects.get(pk=slot.pk).shown_position is None
    feedback_submit(user=personas.grader, slot_id=slot.pk, grade=2)
    assert FeedbackSlot.objects.get(pk=slot.pk).shown_position == 1
    slot_reset(slot_id=slot.pk)
    assert FeedbackSlot.objects.get(pk=slot.pk).shown_position is None


# --- the grading page never shows the engine's position of a shuffled result ---


def test_the_grading_page_hides_the_engine_position_when_shuffled(personas):
    # Even an evaluation stored with both options (the services refuse that) hides it.
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=5,
                                       shuffle_results=True, show_position=True)
    first = own_order(evaluation, 1, personas.grader)[0]
    client = Client()
    client.force_login(personas.grader)
    html = client.get(f"/grade/evaluations/{evaluation.pk}/").content.decode()
    assert f"Result {first} for query 1" in html
    assert 'data-testid="position"' not in html and "Position " not in html
    Evaluation.objects.filter(pk=evaluation.pk).update(shuffle_results=False)
    html = client.get(f"/grade/evaluations/{evaluation.pk}/").content.decode()
    assert f"Position {first}</span>" in html


def test_a_grader_of_another_team_is_not_handed_shuffled_work(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=2,
                                       shuffle_results=True)
    stranger = member(personas.other_team, Role.GRADER, "stranger")
    assert slot_claim_next(user=stranger, team=personas.team,
                           evaluation=evaluation) is None


def test_the_grading_api_gives_no_engine_position_when_shuffled(personas):
    shuffled = evaluation_with_slots(personas.team, keywords=1, positions=4,
                                     shuffle_results=True)
    plain = evaluation_with_slots(personas.team, keywords=1, positions=4)
    client = APIClient()
    client.force_authenticate(personas.grader)
    slot = client.post(f"/api/v1/evaluations/{shuffled.pk}/next/", format="json").json()
    assert slot["position"] is None
    assert Snapshot.objects.get(pk=slot["snapshot"]).position == own_order(
        shuffled, 1, personas.grader)[0]
    graded = client.post(f"/api/v1/snapshots/{slot['snapshot']}/grade/", {"grade": 1},
                         format="json").json()
    assert graded["position"] is None
    assert client.post(f"/api/v1/evaluations/{plain.pk}/next/",
                       format="json").json()["position"] == 1


def test_the_slot_json_serializer_agrees_with_the_fast_path_when_shuffled(personas):
    from rest_framework.renderers import JSONRenderer

    from judgments.api import AssignedSlotOutputSerializer, assigned_slot_data
    from judgments.selectors import assigned_slot

    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=2,
                                       shuffle_results=True)
    slot = FeedbackSlot.objects.filter(evaluation=evaluation).first()
    loaded = FeedbackSlot.objects.select_related("user", "keyword", "snapshot").get(pk=slot.pk)
    served = JSONRenderer().render(AssignedSlotOutputSerializer(loaded).data)
    assert served == JSONRenderer().render(assigned_slot_data(assigned_slot(slot_id=slot.pk)))
    assert b'"position":null' in served
