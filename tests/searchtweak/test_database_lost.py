"""A database connection lost while a request is answered (PostgreSQL restarted, the
backend terminated) is a 503 that says to retry, never a 500: each change is one
transaction, so it was saved whole or not at all, and the retry is answered normally."""

import psycopg
import pytest
from django.db import connection
from rest_framework.test import APIClient

from judgments.models import FeedbackSlot
from searchtweak.errors import DATABASE_LOST
from tests.conftest import skip_or_fail
from tests.judgments.builders import evaluation_with_slots


def terminate_this_connections_backend() -> None:
    """What `pg_terminate_backend` from another session does to a web process."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        (pid,) = cursor.fetchone()
    with psycopg.connect(**connection.get_connection_params(), autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [pid])


@pytest.fixture
def graded_slot(personas):
    if connection.vendor != "postgresql":
        skip_or_fail("terminating a backend needs PostgreSQL: set DATABASE_URL")
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=1, strategy=1)
    yield FeedbackSlot.objects.get(evaluation=evaluation)
    connection.close()  # whatever the test left, the teardown's flush gets a fresh one


@pytest.mark.django_db(transaction=True)
def test_the_api_answers_503_to_retry_and_the_retry_grades(personas, graded_slot):
    client = APIClient(raise_request_exception=False)
    client.force_authenticate(personas.grader)
    url = f"/api/v1/snapshots/{graded_slot.snapshot_id}/grade/"
    terminate_this_connections_backend()
    response = client.post(url, {"grade": 2}, format="json")
    assert response.status_code == 503
    assert response.json() == {"detail": DATABASE_LOST}
    assert response["Retry-After"] == "1"
    connection.close()  # as the next request's start does for an unusable connection
    assert FeedbackSlot.objects.get(pk=graded_slot.pk).grade is None  # nothing half-written
    retried = client.post(url, {"grade": 2}, format="json")
    assert retried.status_code == 200, retried.content
    assert FeedbackSlot.objects.get(pk=graded_slot.pk).grade == 2


@pytest.mark.django_db(transaction=True)
def test_a_page_answers_503_in_plain_text(client, personas, graded_slot):
    client.raise_request_exception = False
    client.force_login(personas.grader)
    terminate_this_connections_backend()
    response = client.get("/evaluations/")
    assert response.status_code == 503
    assert response.content.decode() == DATABASE_LOST
    assert response["Content-Type"] == "text/plain; charset=utf-8"
