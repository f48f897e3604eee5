"""Twenty graders claiming through the grading API at once while the queue slips gold
probes in, on real PostgreSQL rows."""

import threading

import pytest
from django.db import connection
from rest_framework.test import APIClient

from evaluations.models import Evaluation, Snapshot
from judgments.models import FeedbackSlot, GoldItem, GoldProbe
from searchtweak.models import Role
from tests.conftest import skip_or_fail
from tests.judgments.builders import evaluation_with_slots
from tests.searchtweak.factories import member
from tests.threads import run_together

pytestmark = pytest.mark.django_db(transaction=True)

GRADERS = 20
CLAIMS_EACH = 50  # 1,000 claims in all
GOLD_ITEMS = 30


@pytest.mark.slow_reason("twenty threads make 1,000 claims through the API on PostgreSQL")
def test_twenty_graders_lose_nothing_and_meet_the_gold_rate(personas):
    if connection.vendor != "postgresql":
        skip_or_fail("row locks (FOR UPDATE SKIP LOCKED) need PostgreSQL: set DATABASE_URL")
    source = evaluation_with_slots(personas.team, keywords=1, positions=GOLD_ITEMS,
                                   texts=["gold query"])
    gold_snapshots = {}
    for snapshot in Snapshot.objects.filter(keyword__evaluation=source):
        GoldItem.objects.create(team=personas.team, scale="graded", snapshot=snapshot,
                                grade=snapshot.position % 4, source="import")
        gold_snapshots[snapshot.pk] = snapshot.position % 4
    Evaluation.objects.filter(pk=source.pk).update(status=Evaluation.Status.FINISHED)
    # More slots than the claims, so every claim finds work.
    evaluation = evaluation_with_slots(personas.team, keywords=12, positions=100)
    assert evaluation.gold_rate == 0.05  # the default
    users = [member(personas.team, Role.GRADER, f"g{n}") for n in range(GRADERS)]
    handed: dict[int, list[dict]] = {user.pk: [] for user in users}
    start = threading.Barrier(GRADERS)
    url = f"/api/v1/evaluations/{evaluation.pk}/next/"

    def grade(user_id: int, slot: dict) -> int:
        # A grader answers right on the gold items of even position, wrong on the others.
        if slot["snapshot"] in gold_snapshots:
            expected = gold_snapshots[slot["snapshot"]]
            return expected if slot["position"] % 2 == 0 else (expected + 1) % 4
        return (slot["id"] * 7 + user_id) % 4

    def run(user) -> None:
        client = APIClient()
        client.force_authenticate(user)
        start.wait()
        response = client.post(url, {}, format="json")
        for claim in range(CLAIMS_EACH):
            assert response.status_code == 200, response.content
            slot = response.json()
            handed[user.pk].append(slot)
            body = {"snapshot": slot["snapshot"], "grade": grade(user.pk, slot)}
            if claim == CLAIMS_EACH - 1:
                # The last grade claims nothing more: through the snapshot's grade.
                response = client.post(f"/api/v1/snapshots/{slot['snapshot']}/grade/",
                                       {"grade": body["grade"]}, format="json")
                assert response.status_code == 200, response.content
            else:
                response = client.post(url, body, format="json")

    run_together(run, [(u,) for u in users], timeout=300)

    claims = [(user_id, slot) for user_id, slots in handed.items() for slot in slots]
    assert len(claims) == GRADERS * CLAIMS_EACH
    probes = [(user_id, slot) for user_id, slot in claims if slot["snapshot"] in gold_snapshots]
    slots = [(user_id, slot) for user_id, slot in claims if slot["snapshot"] not in gold_snapshots]
    # The gold rate over the 1,000 claims. Which claims are due is a hash of the user's,
    # the evaluation's and the claim's numbers (judgments.gold.probe_due), and the ids differ
    # from run to run (71 of 1,000 in one CI run): so a binomial(1000, 0.05) band, 50 ± 5 standard
    # deviations (6.9 each), which a working rule leaves about once in two million runs; 0 % or 10 %
    # fall far outside it. tests/judgments/test_gold_page.py checks the rule claim by claim.
    assert 16 <= len(probes) <= 84, len(probes)
    # No grader saw one gold item twice; every probe handed out is stored, graded as sent.
    pairs = [(user_id, slot["snapshot"]) for user_id, slot in probes]
    assert len(pairs) == len(set(pairs))
    stored = {(p.user_id, p.gold.snapshot_id): p for p in
              GoldProbe.objects.select_related("gold")}
    assert set(stored) == set(pairs)
    for user_id, slot in probes:
        assert stored[(user_id, slot["snapshot"])].grade == grade(user_id, slot)
    # No slot lost or handed twice: each handed slot holds its grader's grade, and the
    # graded slots are exactly those handed out.
    slot_ids = [slot["id"] for _, slot in slots]
    assert len(slot_ids) == len(set(slot_ids))
    rows = {s.pk: s for s in FeedbackSlot.objects.filter(evaluation=evaluation,
                                                         grade__isnull=False)}
    assert set(rows) == set(slot_ids)
    for user_id, slot in slots:
        assert (rows[slot["id"]].user_id, rows[slot["id"]].grade) == (
            user_id, grade(user_id, slot))
    # The gold items' own slots took no grade.
    assert not FeedbackSlot.objects.filter(evaluation=source, grade__isnull=False).exists()
