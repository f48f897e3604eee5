import pytest
from celery import Celery

from tests.workers import celery_worker, require_redis


@pytest.mark.worker
def test_a_real_worker_process_runs_a_task_sent_through_redis():
    broker_url = require_redis()
    with celery_worker(broker_url=broker_url) as queue:
        # A separate client app, as another web process would be: only Redis connects them.
        client = Celery("client", broker=broker_url, backend=broker_url)
        result = client.send_task("searchtweak.ping", args=["hello"], queue=queue)
        assert result.get(timeout=30) == "pong:hello"
        assert result.successful()
