"""Work on queues of its own (FETCH_QUEUE, JUDGES_QUEUE, NOTIFICATIONS_QUEUE): the routes the
settings make, the production layout that consumes them (docker-compose.yml), and two real
workers on two queues sharing an evaluation's fetch and recompute."""

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import yaml

from evaluations.models import Evaluation
from evaluations.services import lifecycle
from metrics.models import KeywordMetricValue
from searchtweak.celery import app
from tests.evaluations.factories import fetchable_evaluation
from tests.evaluations.servers import Reply, hits, running_server
from tests.workers import (
    celery_worker_process,
    database_url_for_workers,
    require_redis,
    tasks_sent_to,
    wait_until,
)

REPO = Path(__file__).resolve().parents[2]


def routes_with(env: dict[str, str]) -> dict:
    """CELERY_TASK_ROUTES as a fresh process reads it with `env`."""
    code = ("import django, json; django.setup(); from django.conf import settings; "
            "print(json.dumps(settings.CELERY_TASK_ROUTES))")
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True,
        env={"PATH": "/usr/bin:/bin", "DJANGO_SETTINGS_MODULE": "searchtweak.settings", **env})
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.slow_reason("starts a real Celery worker per queue setting")
def test_each_queue_setting_routes_its_tasks_and_none_routes_nothing():
    assert routes_with({}) == {}
    assert routes_with({"FETCH_QUEUE": "fetch", "JUDGES_QUEUE": "judges",
                        "NOTIFICATIONS_QUEUE": "mail"}) == {
        "evaluations.fetch_keywords": {"queue": "fetch"},
        "judges.run_lane": {"queue": "judges"},
        "searchtweak.webhook_deliver": {"queue": "mail"},
        "searchtweak.notification_mail": {"queue": "mail"},
    }
    assert routes_with({"JUDGES_QUEUE": "judges"}) == {"judges.run_lane": {"queue": "judges"}}


def test_the_routed_task_names_are_the_registered_tasks():
    from django.conf import settings

    assert set(settings.TASK_QUEUES) <= set(app.tasks)


def test_compose_runs_a_worker_for_every_queue_it_routes_to():
    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    environment = compose["x-app-env"]
    consumed = {}
    for name, service in compose["services"].items():
        command = service.get("command", "")
        if isinstance(command, str) and " worker " in command:
            words = command.split()
            consumed[name] = words[words.index("-Q") + 1].split(",")
    routed = {environment["FETCH_QUEUE"], environment["JUDGES_QUEUE"]}
    assert routed | {"celery"} == {queue for queues in consumed.values() for queue in queues}
    assert consumed["worker"] == ["celery"]  # the default queue: recompute, sweeps
    # Every worker reads the same settings, so each sends a task where the others expect it.
    assert all(compose["services"][name]["environment"] is environment for name in consumed)


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
@pytest.mark.slow_reason("starts two real Celery workers on two queues")
def test_a_fetch_worker_and_a_default_worker_share_an_evaluation():
    broker_url = require_redis()
    tag = uuid.uuid4().hex[:8]
    fetch_queue, default_queue = f"test-fetch-{tag}", f"test-default-{tag}"
    routes = {"evaluations.fetch_keywords": {"queue": fetch_queue}}
    # Both workers send as production's do: fetches to the fetch queue, the rest to the
    # default one.
    worker_env = {"FETCH_QUEUE": fetch_queue, "CELERY_TASK_DEFAULT_QUEUE": default_queue,
                  "FETCH_BATCH_SIZE": "10"}
    keywords = [f"keyword {n:02d}" for n in range(30)]
    previous_routes = app.conf.task_routes
    with running_server() as server:
        server.handler = lambda request: Reply(body=hits(request.query["q"][0], count=3))
        evaluation = fetchable_evaluation(url=server.url, keywords=keywords, strategy=1)
        app.conf.task_routes = routes
        try:
            with celery_worker_process(broker_url=broker_url,
                                       database_url=database_url_for_workers(),
                                       extra_env=worker_env, queue=fetch_queue) as fetcher, \
                    celery_worker_process(broker_url=broker_url,
                                          database_url=database_url_for_workers(),
                                          extra_env=worker_env, queue=default_queue) as other, \
                    tasks_sent_to(broker_url=broker_url, queue=default_queue):
                lifecycle.evaluation_start(evaluation=evaluation)
                wait_until(lambda: KeywordMetricValue.objects.filter(
                    keyword__evaluation=evaluation, value__isnull=False).count() == 0
                    and KeywordMetricValue.objects.filter(
                        keyword__evaluation=evaluation).count() == len(keywords),
                    "every fetched keyword's (empty) values stored")
                fetch_log, other_log = fetcher.log_path.read_text(), other.log_path.read_text()
        finally:
            app.conf.task_routes = previous_routes
    evaluation.refresh_from_db()
    assert evaluation.status == Evaluation.Status.ACTIVE
    assert sorted(server.queries()) == keywords  # each keyword asked once
    # Fetching ran on the fetch worker only, the recompute on the other only (each log
    # lists every task at start-up; "Task <name>[<id>] received" is one that ran there).
    assert "Task evaluations.fetch_keywords[" in fetch_log
    assert "Task evaluations.fetch_keywords[" not in other_log
    assert "Task metrics.recompute_keyword[" in other_log
    assert "Task metrics." not in fetch_log
