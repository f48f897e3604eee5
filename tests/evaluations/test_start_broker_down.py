"""Starting (or retrying) an evaluation while the task broker is unreachable: Celery really
tries to publish to a closed port on 127.0.0.1 and gives up. The lead is told so on the
page and by the API (a 400 naming `status`), and the evaluation is left pending, startable
once the broker is back, rather than fetching for ever with every keyword waiting for a
task that was never sent. Where nobody is there to be told (a schedule's tick), the sweep
sends the never-claimed keywords again once the broker is back."""

import contextlib
import socket
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from evaluations import tasks
from evaluations.events import evaluation_transitioned
from evaluations.fetching import dispatch as fetch_dispatch
from evaluations.models import Evaluation, Keyword
from evaluations.query_sets import services as query_set_services
from evaluations.services import lifecycle
from schedules import firing
from schedules import services as schedule_services
from schedules.models import Schedule, ScheduleRun
from tests.evaluations.factories import (
    ES_MAPPER,
    EndpointFactory,
    SearchModelFactory,
    fetchable_evaluation,
)
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
        lifecycle.evaluation_retry_failed(evaluation=evaluation)
    assert raised.value.message_dict == {"status": [NOT_SENT.replace("not started",
                                                                     "not retried")]}
    assert waiting_for_nobody(evaluation) == ("pending", {"pending"})


def test_a_schedule_run_the_broker_refused_is_fetched_by_the_sweep_once_it_is_back(
        personas, server, settings):
    start = datetime(2026, 11, 26, 9, 0, tzinfo=UTC)
    model = SearchModelFactory(params={"q": "#query#"}, endpoint=EndpointFactory(
        team=personas.team, url=f"{server.url}/search", mapper=ES_MAPPER))
    query_set = query_set_services.query_set_create(team=personas.team, created_by=personas.lead,
                                                    name="Clothes", keywords=KEYWORDS)
    with time_machine.travel(start, tick=False):
        schedule_services.schedule_create(
            team=personas.team, created_by=personas.lead, name="Hourly", model=model,
            query_set=query_set, scale="graded", strategy=1,
            metrics=[{"code": "ndcg", "k": 3, "params": {}}], interval_minutes=60,
            baseline=Schedule.Baseline.FIRST)
        with tasks_sent_to(broker_url=f"redis://127.0.0.1:{closed_port()}/0",
                           queue="broker-down"), contextlib.suppress(fetch_dispatch.FetchNotSent):
            # The run commits, then its send fails: the tick stops there, or logs it.
            firing.schedules_tick()
    evaluation = ScheduleRun.objects.get().evaluation
    assert waiting_for_nobody(evaluation) == ("fetching", {"pending"})

    # The broker is back (tasks run in-process again). Within the window the sweep leaves
    # the run alone: its tasks might still be queued behind other work.
    resend = timedelta(seconds=settings.FETCH_RESEND_AFTER_SECONDS)
    with time_machine.travel(start + resend - timedelta(seconds=1), tick=False):
        assert tasks.sweep_stalled_fetches() == 0
    assert waiting_for_nobody(evaluation) == ("fetching", {"pending"})
    with time_machine.travel(start + resend + timedelta(seconds=1), tick=False):
        assert tasks.sweep_stalled_fetches() == len(KEYWORDS)
    assert waiting_for_nobody(evaluation) == ("active", {"fetched"})


def test_the_sweep_leaves_a_fetch_with_a_task_at_work_alone(settings):
    settings.FETCH_RETRIES = 0
    evaluation = fetchable_evaluation(url="http://127.0.0.1:9", keywords=KEYWORDS)
    now = timezone.now()
    Evaluation.objects.filter(pk=evaluation.pk).update(
        status=Evaluation.Status.FETCHING, fetch_sent_at=now - timedelta(hours=1))
    first = evaluation.keywords.order_by("position").first()
    Keyword.objects.filter(pk=first.pk).update(fetch_claimed_at=now)  # a task at work
    assert fetch_dispatch.keywords_fetch_resend_unsent(now=now) == 0
    Keyword.objects.filter(pk=first.pk).update(fetch_claimed_at=None)  # it died, unclaimed
    assert fetch_dispatch.keywords_fetch_resend_unsent(now=now) == len(KEYWORDS)
    evaluation.refresh_from_db()
    assert evaluation.fetch_sent_at > now  # stamped again: the next copy waits a window
