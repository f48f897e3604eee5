"""A judge run through real Celery workers that die mid-batch: the claims' leases lapse,
the sweep restarts the run, every pair ends graded once, no slot is held."""

import threading
from datetime import timedelta

import pytest
from django.db.models import Count
from django.utils import timezone

from judges import lanes, runs, tasks
from judges.models import JudgeRun, JudgeRunItem
from judgments.models import FeedbackSlot
from tests.judges.builders import judge_for
from tests.judges.fake_providers import OPENAI, ModelAnswer, document_ids, fake_provider
from tests.judgments.builders import evaluation_with_slots
from tests.workers import (
    celery_worker_process,
    database_url_for_workers,
    require_redis,
    tasks_sent_to,
    wait_until,
)

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def run_status(run) -> str:
    run.refresh_from_db()
    return run.status


@pytest.mark.slow_reason("starts real Celery workers and kills one mid-batch")
def test_a_worker_killed_mid_batch_strands_no_pair_and_grades_none_twice(personas):
    broker_url = require_redis()
    evaluation = evaluation_with_slots(personas.team, keywords=6, positions=3)
    released = threading.Event()
    asked: list[str] = []
    with fake_provider(OPENAI) as provider:
        def answer(prompt, request):
            ids = document_ids(prompt)
            asked.extend(ids)
            if "query 3-d1" in ids and not released.is_set():
                released.wait(timeout=60)  # in flight when the worker dies
            return ModelAnswer({"grades": [{"id": doc_id, "grade": 2, "reason": "ok"}
                                           for doc_id in ids]}, delay=0.02)

        provider.default = answer
        judge = judge_for(personas.team, provider, batch_size=3, max_concurrent_requests=2)
        database_url = database_url_for_workers()
        try:
            with celery_worker_process(broker_url=broker_url, database_url=database_url) \
                    as first, tasks_sent_to(broker_url=broker_url, queue=first.queue):
                run = runs.run_start(judge=judge, evaluation=evaluation,
                                     mode=JudgeRun.Mode.UNGRADED, started_by=personas.lead)
                wait_until(lambda: "query 3-d1" in asked, "asked about query 3")
                first.kill()
        finally:
            released.set()
        claimed = JudgeRunItem.objects.filter(run=run, status="claimed")
        assert claimed.filter(snapshot__doc_id="query 3-d1").exists()
        assert FeedbackSlot.objects.filter(user=judge.user, grade__isnull=True,
                                           snapshot__doc_id="query 3-d1").exists()
        assert run_status(run) == "running"
        # The worker died long ago: its leases (minutes, from the judge's deadline) lapsed.
        lapsed = timezone.now() - timedelta(hours=1)
        claimed.update(lease_expires_at=lapsed)
        FeedbackSlot.objects.filter(user=judge.user, grade__isnull=True).update(
            lease_expires_at=lapsed)

        assert lanes.runs_stalled() == [run.pk]

        with celery_worker_process(broker_url=broker_url, database_url=database_url,
                                   queue=first.queue), \
                tasks_sent_to(broker_url=broker_url, queue=first.queue):
            # What beat does every JUDGE_SWEEP_EVERY_SECONDS, run once through the worker
            # (a lane message the dead worker never took may get there first).
            tasks.sweep_stalled_runs.delay()
            wait_until(lambda: run_status(run) == "done", "done")

    run.refresh_from_db()
    assert (run.pair_count, run.done_count, run.failed_count, run.left_count) == (18, 18, 0, 0)
    slots = FeedbackSlot.objects.filter(user=judge.user)
    assert slots.count() == 18 and not slots.filter(grade__isnull=True).exists()
    per_snapshot = slots.values("snapshot_id").annotate(n=Count("pk")).filter(n__gt=1)
    assert not per_snapshot.exists()
    # Only the batches the dead worker had not committed were asked twice: the one held,
    # at most one beside it in flight (a lane holds up to the judge's 2 concurrent calls),
    # and at most one answered but still in its store's transaction (a lane sends the next
    # call before storing an answer: lanes.lane_run), so at most three of six.
    twice = {doc_id.split("-")[0] for doc_id in asked if asked.count(doc_id) > 1}
    assert "query 3" in twice and len(twice) <= 3, twice
