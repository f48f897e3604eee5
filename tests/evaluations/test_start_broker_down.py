"""Starting (or retrying) an evaluation while the task broker is unreachable: Celery really
tries to publish to a closed port on 127.0.0.1 and gives up. The lead is told so on the
page and by the API (a 400 naming `status`), and the evaluation is left pending, startable
once the broker is back, rather than fetching for ever with every keyword waiting for a
task that was never sent."""

import socket

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from evaluations import services
from evaluations.events import evaluation_transitioned
from evaluations.models import Evaluation, Keyword
from tests.evaluations.factories import fetchable_evaluation
from tests.evaluations.servers import Reply, hits, running_server
from tests.workers import tasks_sent_to

pytestmark = pytest.mark.django_db(transaction=True)

KEYWORDS = ["red shoes", "blue hat", "green scarf"]
NOT_SENT = ("The task queue (the broker) cannot be reached, so no fetch could be sent: the "
            "evaluation was not started and is paused. Start it again once the queue is back.")


def closed_port() -> int:
    """A port of 127.0.0.1 that nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def broker_down():
    with tasks_sent_to(broker_url=f"redis://127.0.0.1:{closed_port()}/0",
                       queue="broker-down"):
        yield


@pytest.fixture
def server():
    with running_server() as server:
        server.handler = lambda request: Reply(body=hits(request.query["q"][0]))
        yield server


@pytest.fixture
def transitions():
    heard = []

    def listen(sender, event, **kwargs):
        heard.append((event.transition, event.status))

    evaluation_transitioned.connect(listen, dispatch_uid="test_start_broker_down")
    yield heard
    evaluation_transitioned.disconnect(dispatch_uid="test_start_broker_down")


def waiting_for_nobody(evaluation: Evaluation) -> tuple[str, set[str]]:
    evaluation.refresh_from_db()
    return evaluation.status, set(evaluation.keywords.values_list("fetch_status", flat=True))


def test_the_api_says_the_broker_is_down_and_leaves_the_evaluation_startable(
        personas, server, transitions, broker_down):
    evaluation = fetchable_evaluation(url=server.url, keywords=KEYWORDS)
    evaluation.team = personas.team
    Evaluation.objects.filter(pk=evaluation.pk).update(team=personas.team)
    api = APIClient()
    api.force_authenticate(personas.lead)
    response = api.post(f"/api/v1/evaluations/{evaluation.pk}/start/")
    assert (response.status_code, response.json()) == (400, {"status": [NOT_SENT]})
    assert waiting_for_nobody(evaluation) == ("pending", {"pending"})
    # Announced as it happened: started, then put back.
    assert transitions == [("started", "fetching"), ("paused", "pending")]
    assert not Keyword.objects.filter(evaluation=evaluation,
                                      fetch_claimed_at__isnull=False).exists()


def test_the_page_says_so_and_a_start_once_the_broker_is_back_fetches(personas, server,
                                                                     client):
    evaluation = fetchable_evaluation(url=server.url, keywords=KEYWORDS)
    Evaluation.objects.filter(pk=evaluation.pk).update(team=personas.team)
    client.force_login(personas.lead)
    url = reverse("evaluations:evaluation_action", args=[evaluation.pk, "start"])
    with tasks_sent_to(broker_url=f"redis://127.0.0.1:{closed_port()}/0",
                       queue="broker-down"):
        response = client.post(url, follow=True)
    assert response.status_code == 200
    assert NOT_SENT in [str(message) for message in response.context["messages"]]
    assert waiting_for_nobody(evaluation) == ("pending", {"pending"})
    # The broker back (here: tasks run in-process again), the same button fetches.
    client.post(url)
    assert waiting_for_nobody(evaluation) == ("active", {"fetched"})


def test_a_retry_of_failed_keywords_with_the_broker_down_says_so_too(personas, server,
                                                                     broker_down):
    evaluation = fetchable_evaluation(url=server.url, keywords=KEYWORDS)
    Evaluation.objects.filter(pk=evaluation.pk).update(status=Evaluation.Status.ACTIVE)
    Keyword.objects.filter(evaluation=evaluation).update(
        fetch_status=Keyword.FetchStatus.FAILED, fetch_error="HTTP 500")
    with pytest.raises(Exception) as raised:
        services.evaluation_retry_failed(evaluation=evaluation)
    assert raised.value.message_dict == {"status": [NOT_SENT.replace("not started",
                                                                     "not retried")]}
    assert waiting_for_nobody(evaluation) == ("pending", {"pending"})
