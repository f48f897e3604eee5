from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from evaluations.models import Evaluation
from judgments import selectors
from judgments.grading import feedback_submit, snapshot_grade
from judgments.models import FeedbackSlot
from judgments.queue import slot_skip
from searchtweak.models import ApiToken, hash_token_key
from tests.judgments.builders import evaluation_with_slots
from tests.recompute_state import mark_of

pytestmark = pytest.mark.django_db


def client_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def evaluation(personas):
    return evaluation_with_slots(personas.team, keywords=2, positions=2, strategy=1)


# --- POST /api/v1/evaluations/{id}/next/ ---


def test_next_assigns_the_first_free_slot_with_its_lease(personas, evaluation):
    response = client_for(personas.grader).post(f"/api/v1/evaluations/{evaluation.pk}/next/")
    assert response.status_code == 200
    body = response.json()
    slot = FeedbackSlot.objects.get(pk=body["id"])
    assert slot.user_id == personas.grader.pk
    assert (body["keyword"], body["position"], body["doc_id"], body["user"]) == (
        "query 1", 1, "query 1-d1", "grader")
    assert body["lease_expires_at"] is not None and body["grade"] is None


def test_next_answers_204_when_nothing_is_left(personas, evaluation):
    client = client_for(personas.grader)
    for _ in range(4):
        slot_id = client.post(f"/api/v1/evaluations/{evaluation.pk}/next/").json()["id"]
        feedback_submit(user=personas.grader, slot_id=slot_id, grade=1)
    response = client.post(f"/api/v1/evaluations/{evaluation.pk}/next/")
    assert response.status_code == 204 and response.content == b""


def test_next_is_404_for_an_outsider_and_405_for_get(personas, evaluation):
    url = f"/api/v1/evaluations/{evaluation.pk}/next/"
    assert client_for(personas.outsider).post(url).status_code == 404
    assert client_for(personas.grader).get(url).status_code == 405
    assert client_for(personas.grader).post("/api/v1/evaluations/999999/next/").status_code == 404
    assert not FeedbackSlot.objects.exclude(user=None).exists()
    assert APIClient().post(url).status_code in (401, 403)


def test_next_works_with_a_personal_token(personas, evaluation):
    ApiToken.objects.create(user=personas.grader, name="bench", key_hash=hash_token_key("k1"),
                            key_prefix="k1")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token k1")
    assert client.post(f"/api/v1/evaluations/{evaluation.pk}/next/").status_code == 200


def test_next_with_a_grade_grades_that_result_then_hands_out_the_next(personas, evaluation):
    client = client_for(personas.grader)
    url = f"/api/v1/evaluations/{evaluation.pk}/next/"
    first = client.post(url).json()
    response = client.post(url, {"snapshot": first["snapshot"], "grade": 3, "unsure": True,
                                 "note": " odd "}, format="json")
    assert response.status_code == 200
    second = response.json()
    assert (second["keyword"], second["position"], second["grade"]) == ("query 1", 2, None)
    graded = FeedbackSlot.objects.get(pk=first["id"])
    assert (graded.user_id, graded.grade, graded.unsure, graded.note) == (
        personas.grader.pk, 3, True, "odd")
    assert mark_of(graded.keyword).version == 1
    # Grading the last result answers 204: the grade is stored, nothing is left.
    for _ in range(3):
        last = second
        response = client.post(url, {"snapshot": last["snapshot"], "grade": 1}, format="json")
        second = response.json() if response.status_code == 200 else None
    assert response.status_code == 204
    assert FeedbackSlot.objects.filter(evaluation=evaluation, grade__isnull=False).count() == 4


def test_next_with_a_grade_hands_back_a_result_the_grader_still_holds(personas, evaluation):
    # A grader holding two results (two tabs) gets the other one back, its lease renewed,
    # before any free result.
    client = client_for(personas.grader)
    url = f"/api/v1/evaluations/{evaluation.pk}/next/"
    first = client.post(url).json()
    later = FeedbackSlot.objects.get(evaluation=evaluation, keyword__position=2, position=2)
    old_lease = timezone.now() + timedelta(minutes=1)
    FeedbackSlot.objects.filter(pk=later.pk).update(
        user=personas.grader, assigned_at=timezone.now(), lease_expires_at=old_lease)
    response = client.post(url, {"snapshot": first["snapshot"], "grade": 2}, format="json")
    assert response.status_code == 200
    assert response.json()["id"] == later.pk
    later.refresh_from_db()
    assert later.lease_expires_at > old_lease + timedelta(minutes=3)
    assert FeedbackSlot.objects.get(pk=first["id"]).grade == 2
    assert FeedbackSlot.objects.filter(user=personas.grader).count() == 2


def test_next_with_a_grade_hands_out_skipped_results_last(personas, evaluation):
    client = client_for(personas.grader)
    url = f"/api/v1/evaluations/{evaluation.pk}/next/"
    first = client.post(url).json()
    slot_skip(user=personas.grader, slot_id=first["id"])
    handed = [client.post(url).json()]
    while True:
        response = client.post(url, {"snapshot": handed[-1]["snapshot"], "grade": 1},
                               format="json")
        if response.status_code == 204:
            break
        handed.append(response.json())
    # The three others in queue order, then the skipped one, then nothing.
    assert [(slot["keyword"], slot["position"]) for slot in handed] == [
        ("query 1", 2), ("query 2", 1), ("query 2", 2), ("query 1", 1)]
    assert list(FeedbackSlot.objects.filter(evaluation=evaluation)
                .values_list("grade", flat=True)) == [1, 1, 1, 1]


def test_next_with_a_grade_on_a_free_result_claims_it_first(personas, evaluation):
    client = client_for(personas.grader)
    url = f"/api/v1/evaluations/{evaluation.pk}/next/"
    free = FeedbackSlot.objects.get(evaluation=evaluation, keyword__position=2, position=1)
    response = client.post(url, {"snapshot": free.snapshot_id, "grade": 0}, format="json")
    assert response.status_code == 200
    assert (response.json()["keyword"], response.json()["position"]) == ("query 1", 1)
    free.refresh_from_db()
    assert (free.user_id, free.grade) == (personas.grader.pk, 0)
    assert mark_of(free.keyword).version == 1


def test_next_with_the_same_grade_again_changes_no_version(personas, evaluation):
    client = client_for(personas.grader)
    url = f"/api/v1/evaluations/{evaluation.pk}/next/"
    first = client.post(url).json()
    second = client.post(url, {"snapshot": first["snapshot"], "grade": 2}, format="json").json()
    # Re-grading the first result (Backspace) with the grade it has bumps nothing; the
    # result still held comes back.
    again = client.post(url, {"snapshot": first["snapshot"], "grade": 2}, format="json")
    assert again.json()["id"] == second["id"]
    graded = FeedbackSlot.objects.get(pk=first["id"])
    assert (graded.grade, mark_of(graded.keyword).version) == (2, 1)


@pytest.mark.parametrize("payload, field", [
    ({"snapshot": None, "grade": 2}, "snapshot"),
    ({"grade": 2}, "snapshot"),
    ({"snapshot": "SNAPSHOT"}, "grade"),
    ({"snapshot": "SNAPSHOT", "grade": 9}, "grade"),
    ({"snapshot": "OTHER", "grade": 2}, "snapshot"),
])
def test_next_with_a_bad_grade_is_a_400_and_claims_nothing(personas, evaluation, payload, field):
    other = evaluation_with_slots(personas.team, keywords=1, positions=1)
    ids = {"SNAPSHOT": _snapshot(evaluation).pk, "OTHER": _snapshot(other).pk}
    body = {key: ids.get(value, value) for key, value in payload.items()}
    response = client_for(personas.grader).post(
        f"/api/v1/evaluations/{evaluation.pk}/next/", body, format="json")
    assert response.status_code == 400
    assert field in response.json()
    assert not FeedbackSlot.objects.exclude(user=None).exists()


def test_next_with_a_grade_on_an_outsiders_snapshot_is_404(personas, evaluation):
    foreign = evaluation_with_slots(personas.other_team, keywords=1, positions=1)
    response = client_for(personas.grader).post(
        f"/api/v1/evaluations/{evaluation.pk}/next/",
        {"snapshot": _snapshot(foreign).pk, "grade": 1}, format="json")
    assert response.status_code == 404
    assert not FeedbackSlot.objects.exclude(user=None).exists()


def test_next_with_a_grade_conflicts_when_the_result_is_someone_elses(personas, evaluation):
    held = client_for(personas.lead).post(f"/api/v1/evaluations/{evaluation.pk}/next/").json()
    response = client_for(personas.grader).post(
        f"/api/v1/evaluations/{evaluation.pk}/next/",
        {"snapshot": held["snapshot"], "grade": 1}, format="json")
    assert response.status_code == 409
    assert FeedbackSlot.objects.get(pk=held["id"]).grade is None
    assert not FeedbackSlot.objects.filter(user=personas.grader).exists()


def test_next_answers_what_the_slot_serializer_would(personas, evaluation):
    from judgments.api import AssignedSlotOutputSerializer

    client = client_for(personas.grader)
    first = client.post(f"/api/v1/evaluations/{evaluation.pk}/next/").json()
    graded = client.post(f"/api/v1/snapshots/{first['snapshot']}/grade/",
                         {"grade": 2}, format="json").json()
    slot = FeedbackSlot.objects.select_related("keyword", "snapshot", "user").get(
        pk=first["id"])
    assert graded == AssignedSlotOutputSerializer(slot).data
    assert graded["graded_at"] is not None and graded["grade"] == 2


# --- POST /api/v1/snapshots/{id}/grade/ ---


def _snapshot(evaluation, position=1):
    return evaluation.keywords.get(position=1).snapshots.get(position=position)


def test_grading_a_snapshot_claims_a_slot_and_stores_the_grade(personas, evaluation):
    snapshot = _snapshot(evaluation)
    response = client_for(personas.grader).post(
        f"/api/v1/snapshots/{snapshot.pk}/grade/", {"grade": 3, "unsure": True, "note": "hm"},
        format="json")
    assert response.status_code == 200
    assert (response.json()["grade"], response.json()["unsure"]) == (3, True)
    slot = FeedbackSlot.objects.get(snapshot=snapshot)
    assert (slot.user_id, slot.grade, slot.note) == (personas.grader.pk, 3, "hm")
    assert mark_of(slot.keyword).version == 1


def test_regrading_uses_the_callers_own_slot_even_after_the_lease(personas, evaluation):
    snapshot = _snapshot(evaluation)
    client = client_for(personas.grader)
    client.post(f"/api/v1/evaluations/{evaluation.pk}/next/")
    FeedbackSlot.objects.filter(snapshot=snapshot).update(
        lease_expires_at=timezone.now() - timedelta(minutes=1))
    response = client.post(f"/api/v1/snapshots/{snapshot.pk}/grade/", {"grade": 0},
                           format="json")
    assert response.status_code == 200
    assert FeedbackSlot.objects.get(snapshot=snapshot).grade == 0


def test_grading_conflicts_when_every_slot_is_someone_elses(personas, evaluation):
    snapshot = _snapshot(evaluation)
    client_for(personas.lead).post(f"/api/v1/evaluations/{evaluation.pk}/next/")
    response = client_for(personas.grader).post(
        f"/api/v1/snapshots/{snapshot.pk}/grade/", {"grade": 2}, format="json")
    assert response.status_code == 409
    assert "another grader" in response.json()["detail"]
    assert FeedbackSlot.objects.get(snapshot=snapshot).user_id == personas.lead.pk


@pytest.mark.parametrize("payload", [
    {"grade": 4}, {"grade": -1}, {"grade": "3"}, {"grade": 1.5}, {"grade": True},
    {"grade": None}, {},
])
def test_a_bad_grade_is_a_400_naming_the_field_and_changes_nothing(personas, evaluation, payload):
    snapshot = _snapshot(evaluation)
    response = client_for(personas.grader).post(
        f"/api/v1/snapshots/{snapshot.pk}/grade/", payload, format="json")
    assert response.status_code == 400
    assert list(response.json()) == ["grade"]
    slot = FeedbackSlot.objects.get(snapshot=snapshot)
    assert (slot.user_id, slot.grade) == (None, None)


def test_grading_a_finished_evaluation_is_a_400(personas, evaluation):
    Evaluation.objects.filter(pk=evaluation.pk).update(status=Evaluation.Status.FINISHED)
    snapshot = _snapshot(evaluation)
    response = client_for(personas.grader).post(
        f"/api/v1/snapshots/{snapshot.pk}/grade/", {"grade": 2}, format="json")
    assert response.status_code == 400 and "evaluation" in response.json()
    assert FeedbackSlot.objects.get(snapshot=snapshot).grade is None


def test_grading_is_404_for_an_outsider_and_405_for_get(personas, evaluation):
    snapshot = _snapshot(evaluation)
    url = f"/api/v1/snapshots/{snapshot.pk}/grade/"
    assert client_for(personas.outsider).post(url, {"grade": 2}, format="json").status_code == 404
    assert client_for(personas.grader).get(url).status_code == 405
    assert FeedbackSlot.objects.get(snapshot=snapshot).grade is None


# --- GET /api/v1/evaluations/{id}/snapshots/ ---


def test_the_snapshot_list_is_paginated_with_slots(personas, django_assert_max_num_queries):
    evaluation = evaluation_with_slots(personas.team, keywords=3, positions=2, strategy=3)
    first = _snapshot(evaluation)
    snapshot_grade(
        user=personas.grader, grade=2,
        target=selectors.snapshot_target_for_user(user=personas.grader, snapshot_id=first.pk))
    client = client_for(personas.lead)
    with django_assert_max_num_queries(12):
        response = client.get(f"/api/v1/evaluations/{evaluation.pk}/snapshots/?page_size=4")
    body = response.json()
    assert response.status_code == 200
    assert body["count"] == 6 and body["next"] and len(body["results"]) == 4
    row = body["results"][0]
    assert (row["keyword"], row["position"], row["doc_id"], row["name"]) == (
        "query 1", 1, "query 1-d1", "Result 1 for query 1")
    assert [(s["index"], s["user"], s["grade"]) for s in row["slots"]] == [
        (0, "grader", 2), (1, None, None), (2, None, None)]
    filtered = client.get(
        f"/api/v1/evaluations/{evaluation.pk}/snapshots/?keyword={first.keyword_id}").json()
    assert filtered["count"] == 2


def test_the_snapshot_list_is_404_for_an_outsider(personas, evaluation):
    url = f"/api/v1/evaluations/{evaluation.pk}/snapshots/"
    assert client_for(personas.outsider).get(url).status_code == 404
    assert client_for(personas.grader).post(url).status_code == 405
