"""A 200-keyword fetch through a real Celery worker process on Redis."""

import time

import pytest

from evaluations.models import Evaluation, Keyword, Snapshot
from evaluations.services import lifecycle
from tests.evaluations.factories import fetchable_evaluation
from tests.evaluations.servers import Reply, hits, running_server
from tests.workers import celery_worker, database_url_for_workers, require_redis, tasks_sent_to

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def wait_for_status(evaluation, status: str, timeout: float = 90.0) -> Evaluation:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        evaluation.refresh_from_db()
        if evaluation.status == status:
            return evaluation
        time.sleep(0.2)
    counts = list(Keyword.objects.filter(evaluation=evaluation).values_list("fetch_status"))
    raise AssertionError(f"still {evaluation.status} after {timeout}s: {counts[:5]}…")


@pytest.mark.slow_reason("a real Celery worker fetches 200 keywords over HTTP")
def test_a_real_worker_fetches_200_keywords_once_each():
    broker_url = require_redis()
    keywords = [f"keyword {n:03d}" for n in range(200)]
    with running_server() as server:
        # Every tenth keyword fails once with a 503, so retries run in the worker too.
        failed_once: set[str] = set()

        def handler(request):
            query = request.query["q"][0]
            if query.endswith("0") and query not in failed_once:
                failed_once.add(query)
                return Reply(status=503)
            return Reply(body=hits(query, count=4), delay=0.01)

        server.handler = handler
        evaluation = fetchable_evaluation(url=server.url, keywords=keywords, strategy=3)
        with celery_worker(broker_url=broker_url, database_url=database_url_for_workers(),
                           extra_env={"FETCH_RETRY_BACKOFF_MS": "20",
                                      "FETCH_BATCH_SIZE": "50"}) as queue, \
                tasks_sent_to(broker_url=broker_url, queue=queue):
            lifecycle.evaluation_start(evaluation=evaluation)
            evaluation = wait_for_status(evaluation, Evaluation.Status.ACTIVE)

    statuses = set(evaluation.keywords.values_list("fetch_status", flat=True))
    assert statuses == {"fetched"}
    assert Snapshot.objects.filter(keyword__evaluation=evaluation).count() == 800
    assert len(server.received) == 200 + 20  # each keyword once, plus the 20 retried
    assert sorted(set(server.queries())) == keywords
    first = Keyword.objects.get(evaluation=evaluation, text="keyword 000")
    assert first.fetch_status_code == 200
    assert list(first.snapshots.values_list("doc_id", flat=True)) == [
        f"keyword 000-{n}" for n in range(1, 5)]
