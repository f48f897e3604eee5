"""Fetching through real Celery workers that die: the evaluation still finishes, and no
keyword's results are stored twice (with its fault proofs)."""

import threading
from datetime import timedelta

import pytest
from django.db.models import Count
from django.utils import timezone

from evaluations import tasks
from evaluations.models import Evaluation, Keyword, Snapshot
from evaluations.services import lifecycle
from tests.evaluations.factories import fetchable_evaluation
from tests.evaluations.servers import Reply, hits, running_server
from tests.workers import (
    celery_worker_process,
    database_url_for_workers,
    require_redis,
    tasks_sent_to,
    wait_until,
)

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

KEYWORDS = [f"kw {n:02d}" for n in range(1, 31)]
WORKER_ENV = {"FETCH_RETRY_BACKOFF_MS": "20", "FETCH_CONCURRENCY_PER_ENDPOINT": "4"}


def is_active(evaluation) -> bool:
    evaluation.refresh_from_db()
    return evaluation.status == Evaluation.Status.ACTIVE


def assert_each_keyword_stored_once(evaluation, per_keyword: int = 3) -> None:
    assert set(evaluation.keywords.values_list("fetch_status", flat=True)) == {"fetched"}
    counts = dict(Snapshot.objects.filter(keyword__evaluation=evaluation)
                  .values_list("keyword__text").annotate(n=Count("id")))
    assert counts == dict.fromkeys(KEYWORDS, per_keyword)
    positions = Snapshot.objects.filter(keyword__evaluation=evaluation).values_list(
        "keyword_id", "position")
    assert len(set(positions)) == len(positions)


@pytest.mark.slow_reason("starts real Celery workers and kills one mid-fetch")
def test_a_worker_killed_mid_fetch_leaves_nothing_stranded(settings):
    """The defect's probe, kept: SIGKILL while a request is in flight, restart. The dead
    task's claims lapse (backdated here: the worker died long ago) and the sweep hands them
    to the new worker; batches still queued go to it directly."""
    broker_url = require_redis()
    settings.FETCH_BATCH_SIZE = 10
    released = threading.Event()
    with running_server() as server:
        def handler(request):
            query = request.query["q"][0]
            if query == "kw 15" and not released.is_set():
                released.wait(timeout=60)  # in flight when the worker dies
            return Reply(body=hits(query), delay=0.02)

        server.handler = handler
        evaluation = fetchable_evaluation(url=server.url, keywords=KEYWORDS, timeout_seconds=5)
        database_url = database_url_for_workers()
        try:
            with celery_worker_process(broker_url=broker_url, database_url=database_url,
                                       extra_env=WORKER_ENV) as first, \
                    tasks_sent_to(broker_url=broker_url, queue=first.queue):
                lifecycle.evaluation_start(evaluation=evaluation)
                wait_until(lambda: "kw 15" in server.queries(), "asked for kw 15")
                first.kill()
        finally:
            released.set()
        stranded = Keyword.objects.filter(evaluation=evaluation, fetch_status="pending",
                                          fetch_claimed_at__isnull=False)
        assert stranded.filter(text="kw 15").exists()
        assert not is_active(evaluation)
        stranded.update(fetch_claimed_at=timezone.now() - timedelta(hours=1))

        with celery_worker_process(broker_url=broker_url, database_url=database_url,
                                   extra_env=WORKER_ENV, queue=first.queue), \
                tasks_sent_to(broker_url=broker_url, queue=first.queue):
            # What beat does every FETCH_SWEEP_EVERY_SECONDS, run once through the worker.
            assert tasks.sweep_stalled_fetches.delay().get(timeout=60) >= 1
            wait_until(lambda: is_active(evaluation), "active")

    assert_each_keyword_stored_once(evaluation)
    assert sorted(set(server.queries())) == KEYWORDS


@pytest.mark.slow_reason("starts two real Celery workers on one fetch")
def test_two_workers_given_every_batch_twice_store_each_keyword_once(settings):
    """Duplicated messages (a redelivery, a sweep racing a slow task) reach two workers at
    once: the per-keyword claim lets one of them fetch and store each keyword."""
    broker_url = require_redis()
    settings.FETCH_BATCH_SIZE = 10
    with running_server() as server:
        server.handler = lambda request: Reply(body=hits(request.query["q"][0]), delay=0.02)
        evaluation = fetchable_evaluation(url=server.url, keywords=KEYWORDS, timeout_seconds=5)
        database_url = database_url_for_workers()
        with celery_worker_process(broker_url=broker_url, database_url=database_url,
                                   extra_env=WORKER_ENV) as first, \
                celery_worker_process(broker_url=broker_url, database_url=database_url,
                                      extra_env=WORKER_ENV, queue=first.queue), \
                tasks_sent_to(broker_url=broker_url, queue=first.queue):
            lifecycle.evaluation_start(evaluation=evaluation, enqueue=False)
            ids = list(evaluation.keywords.order_by("position").values_list("pk", flat=True))
            for start in range(0, len(ids), 10):
                for _ in range(2):
                    tasks.fetch_keywords.delay(evaluation.pk, ids[start:start + 10])
            wait_until(lambda: is_active(evaluation), "active")

    assert_each_keyword_stored_once(evaluation)
    assert sorted(server.queries()) == KEYWORDS  # each asked once: the second task skipped it
