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


def test_a_lost_message_returns_only_after_its_task_could_have_ended(settings):
    """Tasks are acknowledged late: Redis hands an unacknowledged message to another worker
    after the visibility timeout. Shorter than a task's hard limit, a task still running
    would be started twice; it is set to just outlast the longest one."""
    from searchtweak.celery import app

    app.loader.import_default_modules()  # what a worker does at start: every app's tasks
    limits = {name: task.time_limit or settings.CELERY_TASK_TIME_LIMIT
              for name, task in app.tasks.items() if not name.startswith("celery.")}
    assert limits["evaluations.fetch_keywords"] == settings.FETCH_TASK_TIME_LIMIT
    assert limits["metrics.recompute_evaluation"] == settings.RECOMPUTE_EVALUATION_TIME_LIMIT
    assert app.tasks["evaluations.fetch_keywords"].acks_late
    assert app.tasks["evaluations.fetch_keywords"].reject_on_worker_lost
    visibility = app.conf.broker_transport_options["visibility_timeout"]
    assert visibility == max(limits.values()) + 60


@pytest.mark.parametrize("signal_name", ["worker_ready", "worker_process_init"])
def test_a_ready_worker_leaves_its_start_up_objects_out_of_garbage_collection(signal_name):
    # A full collection walked the whole start-up heap with the GIL held: 100-170 ms
    # in which a fetch's request threads sent nothing (searchtweak.celery).
    import gc

    from celery import signals

    import searchtweak.celery  # noqa: F401  (connects the receivers)

    # The test process froze what its collection built (tests/startup.py): thaw it, so
    # what is frozen next is the receiver's doing, and freeze it again after.
    gc.unfreeze()
    try:
        getattr(signals, signal_name).send(sender=None)
        assert gc.get_freeze_count() > 10_000
    finally:
        gc.unfreeze()
        gc.freeze()
