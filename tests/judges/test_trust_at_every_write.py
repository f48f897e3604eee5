"""A judge's trust is read at every grade write, not only when its run starts: an admin who
takes it back mid-run stops its answers filling counting slots from the next batch on; the
grades it wrote while it counted stay, as the run's done pairs."""

import threading

import pytest
from django.core.exceptions import ValidationError
from django.db import connection

from judges import runs, trust
from judges.models import JudgeRun, JudgeRunItem
from judgments.models import FeedbackSlot
from tests.conftest import skip_or_fail
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

pytestmark = pytest.mark.django_db(transaction=True)

WITHDRAWN = ("Judge Dredd no longer counts (an admin took its trust back): its answers fill "
             "no counting slots. The grades it wrote while it counted stay (this run's done "
             "pairs). Run it in shadow mode, or let it count again, to go on.")


def withdraw_on_second_call(judge, admin, *, on_asked=None):
    """A model answer that, when the run's second batch is asked, has an admin take the
    judge's trust back before it answers (from the fake provider's thread)."""
    asked: list[list[str]] = []

    def behaviour(prompt, request):
        ids = document_ids(prompt)
        asked.append(ids)
        if len(asked) == 2:
            trust.judge_mark_counts(judge=judge, counts=False, by=admin)
            connection.close()
        if on_asked is not None:
            on_asked(ids)
        return ModelAnswer({"grades": [{"id": doc_id, "grade": 2, "reason": "fits"}
                                       for doc_id in ids]})

    return behaviour, asked


def assert_stopped_after_the_first_batch(run, judge, asked):
    run.refresh_from_db()
    assert (run.status, run.pause_reason) == ("paused", WITHDRAWN)
    assert (run.done_count, run.failed_count, run.skipped_count) == (2, 0, 0)
    first = sorted(asked[0])
    # The first batch's grades, written while the judge counted, stay; nothing else.
    assert sorted(FeedbackSlot.objects.filter(user=judge.user).values_list(
        "snapshot__doc_id", "grade")) == [(doc_id, 2) for doc_id in first]
    assert sorted(JudgeRunItem.objects.filter(run=run, status="done").values_list(
        "snapshot__doc_id", flat=True)) == first
    assert JudgeRunItem.objects.filter(run=run, status="pending").count() == 4
    # The second batch's slots went back to the people's queue.
    assert not FeedbackSlot.objects.filter(user=judge.user, grade__isnull=True).exists()
    with pytest.raises(ValidationError) as refused:
        runs.run_resume(run=run)
    assert "does not count yet" in str(refused.value)


def test_trust_taken_back_mid_run_stops_the_next_batch(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=3, positions=2)
    with fake_provider(OPENAI) as provider:
        judge = judge_for(personas.team, provider, batch_size=2, max_concurrent_requests=1)
        provider.default, asked = withdraw_on_second_call(judge, personas.admin)
        run = runs.run_start(judge=judge, evaluation=evaluation, mode=JudgeRun.Mode.UNGRADED,
                             started_by=personas.lead)
    assert len(asked) == 2  # the third batch was never asked
    assert_stopped_after_the_first_batch(run, judge, asked)


@pytest.mark.worker
@pytest.mark.slow_reason("starts a real Celery worker")
def test_trust_taken_back_mid_run_stops_a_real_workers_next_batch(personas):
    if connection.vendor != "postgresql":
        skip_or_fail("the FOR SHARE read is PostgreSQL's: set DATABASE_URL")
    broker_url = require_redis()
    evaluation = evaluation_with_slots(personas.team, keywords=3, positions=2)
    second_answered = threading.Event()
    with fake_provider(OPENAI) as provider:
        judge = judge_for(personas.team, provider, batch_size=2, max_concurrent_requests=1)
        provider.default, asked = withdraw_on_second_call(
            judge, personas.admin,
            on_asked=lambda ids: len(asked) == 2 and second_answered.set())
        with celery_worker_process(broker_url=broker_url,
                                   database_url=database_url_for_workers()) as worker, \
                tasks_sent_to(broker_url=broker_url, queue=worker.queue):
            run = runs.run_start(judge=judge, evaluation=evaluation,
                                 mode=JudgeRun.Mode.UNGRADED, started_by=personas.lead)

            def paused() -> bool:
                run.refresh_from_db()
                return run.status == "paused"

            wait_until(paused, "paused by the withdrawn trust", timeout=60)
    assert second_answered.is_set()
    assert len(asked) == 2
    assert_stopped_after_the_first_batch(run, judge, asked)
