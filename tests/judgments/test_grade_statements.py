"""What one grade costs the database, pinned: the statements of the grading loop's request
(the API's next/ with a grade, snapshots/{id}/grade/, the grading page's POST).

bench/grading.py measures the loop's throughput; these counts say where a slowdown would
come from before it shows there. The state is the loop's steady one: the keyword is dirty
already and a recompute run answers for the evaluation (RecomputeDue), so a grade queues
nothing. transaction=True: inside a test's transaction every atomic block would be a
savepoint that production does not run.
"""

from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient

from judgments.models import FeedbackSlot
from metrics.models import RecomputeDue
from searchtweak.models import ApiToken, hash_token_key
from tests.evaluations.factories import EvaluationMetricFactory
from tests.judgments.builders import evaluation_with_slots

pytestmark = pytest.mark.django_db(transaction=True)

# Statements of one grade, by backend. PostgreSQL: the token and its user; the snapshot's
# evaluation and the caller's role; the grade, the keyword's version bump and the next
# lease in one statement (judgments.grading); after commit, the receiver's one read of
# which runs to queue (metrics.recompute.scheduling.grades_changed_runs). No BEGIN, no
# savepoint: each is atomic on its own.
NEXT_WITH_GRADE = {"postgresql": 4, "sqlite": 11}
# snapshots/{id}/grade/: the same first two reads, the grade in one statement, the
# receiver's read, and the slot read back for the answer.
SNAPSHOT_GRADE = {"postgresql": 5, "sqlite": 9}
# The grading page's POST (session, user, the slot and the scope's reads, then
# feedback_submit's transaction: lock, scale, write, version bump).
PAGE_POST = {"postgresql": 13, "sqlite": 13}


@pytest.fixture
def loop(personas):
    """An evaluation mid-grading: the grader has graded one result of the first keyword
    (so it is dirty) and holds the next; a run answers for the evaluation."""
    evaluation = evaluation_with_slots(personas.team, keywords=2, positions=4, strategy=1)
    EvaluationMetricFactory(evaluation=evaluation, code="ndcg", k=10, position=0)
    RecomputeDue.objects.create(evaluation=evaluation,
                                due_at=timezone.now() + timedelta(hours=1))
    ApiToken.objects.create(user=personas.grader, name="loop", key_hash=hash_token_key("k1"),
                            key_prefix="k1")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token k1")
    url = f"/api/v1/evaluations/{evaluation.pk}/next/"
    first = client.post(url).json()
    held = client.post(url, {"snapshot": first["snapshot"], "grade": 1}, format="json").json()
    return evaluation, client, url, held


def statements(captured: CaptureQueriesContext) -> list[str]:
    return [query["sql"] for query in captured.captured_queries]


def test_a_grade_through_next_costs_its_pinned_statements(loop):
    _, client, url, held = loop
    with CaptureQueriesContext(connection) as captured:
        response = client.post(url, {"snapshot": held["snapshot"], "grade": 2}, format="json")
    assert response.status_code == 200 and response.json()["snapshot"] != held["snapshot"]
    assert FeedbackSlot.objects.get(pk=held["id"]).grade == 2
    assert len(statements(captured)) == NEXT_WITH_GRADE[connection.vendor], statements(captured)
    if connection.vendor == "postgresql":
        assert not [sql for sql in statements(captured)
                    if sql.split()[0] in ("BEGIN", "COMMIT", "SAVEPOINT", "RELEASE")]


def test_a_grade_through_the_snapshot_costs_its_pinned_statements(loop):
    _, client, _, held = loop
    with CaptureQueriesContext(connection) as captured:
        response = client.post(f"/api/v1/snapshots/{held['snapshot']}/grade/", {"grade": 3},
                               format="json")
    assert response.status_code == 200 and response.json()["id"] == held["id"]
    assert FeedbackSlot.objects.get(pk=held["id"]).grade == 3
    assert len(statements(captured)) == SNAPSHOT_GRADE[connection.vendor], statements(captured)


def test_a_grade_through_the_page_costs_its_pinned_statements(personas, loop):
    evaluation, _, _, held = loop
    page = Client()
    page.force_login(personas.grader)
    with CaptureQueriesContext(connection) as captured:
        response = page.post(f"/grade/slots/{held['id']}/?evaluation={evaluation.pk}",
                             {"grade": "0", "evaluation": str(evaluation.pk)})
    assert response.status_code == 302
    assert FeedbackSlot.objects.get(pk=held["id"]).grade == 0
    assert len(statements(captured)) == PAGE_POST[connection.vendor], statements(captured)
