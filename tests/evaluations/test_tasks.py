"""Fetch tasks: without a broker, Start answers at once and the fetch runs on a background
thread of the web process (EMBEDDED_TASKS_IN_BACKGROUND), against a real slow server."""

import logging
import threading
import time

import pytest
from rest_framework.test import APIClient

from evaluations import tasks
from evaluations.fetching import services as fetch_services
from evaluations.models import Evaluation, Keyword
from evaluations.services import lifecycle
from tests.evaluations.factories import fetchable_evaluation
from tests.evaluations.servers import Reply, hits, running_server

pytestmark = pytest.mark.django_db(transaction=True)

KEYWORDS = [f"keyword {n}" for n in range(10)]
QUICK = set(KEYWORDS[:3])
DEADLINE_SECONDS = 30


@pytest.fixture(autouse=True)
def _background(settings):
    settings.EMBEDDED_TASKS_IN_BACKGROUND = True
    settings.FETCH_RETRY_BACKOFF_MS = 1


@pytest.fixture
def released():
    return threading.Event()


@pytest.fixture
def server(released):
    """Answers three keywords at once; the rest, 200 ms each, once the test releases them."""
    def handler(request):
        query = request.query["q"][0]
        if query not in QUICK:
            released.wait(DEADLINE_SECONDS)
            return Reply(body=hits(query), delay=0.2)
        return Reply(body=hits(query))

    with running_server() as server:
        server.handler = handler
        yield server
        released.set()  # let held requests finish before the server stops


def progress_until(client, evaluation, done, *, what: str) -> dict:
    deadline = time.monotonic() + DEADLINE_SECONDS
    while time.monotonic() < deadline:
        progress = client.get(f"/evaluations/{evaluation.pk}/progress/").json()
        if done(progress):
            return progress
        time.sleep(0.05)
    pytest.fail(f"no {what} within {DEADLINE_SECONDS} s: {progress}")


def fetch_statuses(evaluation) -> list[str]:
    return list(evaluation.keywords.order_by("position").values_list("fetch_status", flat=True))


def test_start_answers_before_the_fetch_ends_and_the_progress_moves(client, personas, server,
                                                                    released):
    evaluation = fetchable_evaluation(url=server.url, keywords=KEYWORDS, team=personas.team)
    client.force_login(personas.lead)

    response = client.post(f"/evaluations/{evaluation.pk}/start/")

    assert response.status_code == 302
    # The answer came while the held keywords are still waiting for the server.
    evaluation.refresh_from_db()
    assert evaluation.status == Evaluation.Status.FETCHING
    assert fetch_statuses(evaluation)[3:] == ["pending"] * 7
    assert "Fetching started." in client.get(response.url).content.decode()

    partial = progress_until(client, evaluation, lambda p: p["fetched"] == 3,
                             what="intermediate progress")
    assert partial == {"status": "fetching", "total": 10, "fetched": 3, "failed": 0,
                       "pending": 7, "percent": 30}

    released.set()
    final = progress_until(client, evaluation, lambda p: p["status"] != "fetching",
                           what="end of the fetch")
    assert final == {"status": "active", "total": 10, "fetched": 10, "failed": 0,
                     "pending": 0, "percent": 100}
    assert fetch_statuses(evaluation) == ["fetched"] * 10
    assert sorted(server.queries()) == sorted(KEYWORDS)


def test_the_api_start_answers_while_fetching(client, personas, server, released):
    evaluation = fetchable_evaluation(url=server.url, keywords=KEYWORDS, team=personas.team)
    api = APIClient()
    api.force_authenticate(personas.lead)

    body = api.post(f"/api/v1/evaluations/{evaluation.pk}/start/").json()

    assert body["status"] == "fetching"
    assert body["fetch"]["pending"] >= 7
    released.set()
    client.force_login(personas.lead)
    final = progress_until(client, evaluation, lambda p: p["status"] != "fetching",
                           what="end of the fetch")
    assert (final["status"], final["fetched"]) == ("active", 10)


def test_a_crash_in_the_background_is_logged_and_leaves_the_keywords_failed(
        personas, monkeypatch, caplog):
    evaluation = fetchable_evaluation(url="http://127.0.0.1:9", keywords=["a", "b"],
                                      team=personas.team)
    lifecycle.evaluation_start(evaluation=evaluation, enqueue=False)
    ids = list(evaluation.keywords.values_list("pk", flat=True))

    def broken(**kwargs):
        raise RuntimeError("disk on fire")

    # A bug in the fetch itself: what must not leave the evaluation fetching forever.
    monkeypatch.setattr(fetch_services, "keywords_fetch", broken)
    with caplog.at_level(logging.ERROR, logger="evaluations.tasks"):
        assert tasks.fetch_keywords_in_background(evaluation.pk, ids) == 0

    assert "in the background failed" in caplog.text and "disk on fire" in caplog.text
    evaluation.refresh_from_db()
    assert evaluation.status == Evaluation.Status.ACTIVE
    assert set(Keyword.objects.filter(evaluation=evaluation).values_list(
        "fetch_status", "fetch_error")) == {
        ("failed", "internal error: RuntimeError: disk on fire")}


def test_with_the_setting_off_start_fetches_before_answering(client, personas, settings):
    settings.EMBEDDED_TASKS_IN_BACKGROUND = False
    with running_server() as server:
        evaluation = fetchable_evaluation(url=server.url, keywords=["a", "b"],
                                          team=personas.team)
        client.force_login(personas.lead)
        response = client.post(f"/evaluations/{evaluation.pk}/start/", follow=True)
    assert "Every keyword is fetched; the evaluation is active." in response.content.decode()
    evaluation.refresh_from_db()
    assert evaluation.status == Evaluation.Status.ACTIVE
