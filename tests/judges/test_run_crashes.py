"""What a judge run does when things go wrong that are not the model's answer: a batch or a
lane that raises is a counted, visible failure, a run whose lanes keep crashing pauses
with the reason instead of being restarted without end, every call is logged as it
leaves, and a Test waits for the judge's shared turn no longer than its own deadline."""

import time
from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from judges import batch_claiming, batch_sending, lanes, runs, tasks
from judges.models import JudgeCall, JudgeRun, JudgeRunItem
from judgments.models import FeedbackSlot
from searchtweak import outbound_limits
from tests.judges.builders import judge_for
from tests.judges.fake_providers import OPENAI, ModelAnswer, document_ids, fake_provider, grade_all
from tests.judgments.builders import evaluation_with_slots

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _quick_retries(settings):
    settings.JUDGE_RETRY_BACKOFF_MS = 5
    settings.JUDGE_MAX_CRASH_STREAK = 3


def start_without_lanes(judge, evaluation, mode, monkeypatch):
    monkeypatch.setattr(tasks, "run_lanes_dispatch", lambda run_id, count: None)
    run = runs.run_start(judge=judge, evaluation=evaluation, mode=mode, started_by=None)
    monkeypatch.undo()
    return run


def test_a_batch_that_raises_fails_its_pairs_with_the_reason_and_keeps_its_call(
        personas, monkeypatch):
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=2)
    with fake_provider(OPENAI) as provider:
        judge = judge_for(personas.team, provider, batch_size=2)
        run = start_without_lanes(judge, evaluation, JudgeRun.Mode.UNGRADED, monkeypatch)

        def broken(*args, **kwargs):  # a defect after the call: the worst place for one
            raise RuntimeError("boom")

        monkeypatch.setattr(batch_sending, "_read_verdict", broken)
        assert lanes.run_batch_process(run_id=run.pk) == 2
    run.refresh_from_db()
    assert (run.failed_count, run.crash_count, run.crash_streak, run.last_crash) == (
        2, 1, 1, "RuntimeError: boom")
    assert set(JudgeRunItem.objects.filter(run=run).values_list(
        "status", "failure", "failure_detail")) == {("failed", "crash", "RuntimeError: boom")}
    # The call was made: it is logged, with its answer.
    call = JudgeCall.objects.get(run=run)
    assert (call.status, call.pair_count, run.call_count) == ("ok", 2, 1)
    # Its slots went back to the pool.
    assert not FeedbackSlot.objects.filter(user=judge.user).exists()


def test_a_run_whose_lanes_keep_crashing_pauses_with_the_reason(personas, monkeypatch):
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=5)
    with fake_provider(OPENAI) as provider:
        judge = judge_for(personas.team, provider, batch_size=1)
        run = start_without_lanes(judge, evaluation, JudgeRun.Mode.SHADOW, monkeypatch)

        def broken(*args, **kwargs):
            raise RecursionError("maximum recursion depth exceeded")

        monkeypatch.setattr(batch_sending, "_read_verdict", broken)
        # What the lanes and the sweep would do over and over: only three batches run.
        for _ in range(6):
            tasks.lane_work(run.pk, seconds=30)
            tasks.sweep_stalled_runs()
        asked = len(provider.received)
    run.refresh_from_db()
    assert (run.status, run.crash_count, run.failed_count, run.left_count) == (
        "paused", 3, 3, 2)
    assert asked == 3 == JudgeCall.objects.filter(run=run).count() == run.call_count
    assert run.pause_reason == (
        "Paused after 3 lane crashes in a row, so that it stops calling the model; the "
        "last: RecursionError: maximum recursion depth exceeded")
    assert lanes.runs_stalled() == []


def test_a_batch_that_ends_well_resets_the_streak(personas, monkeypatch):
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=3)
    with fake_provider(OPENAI) as provider:
        judge = judge_for(personas.team, provider, batch_size=1)
        run = start_without_lanes(judge, evaluation, JudgeRun.Mode.SHADOW, monkeypatch)
        real = batch_sending._read_verdict
        calls = iter([True, True, False])

        def sometimes(*args, **kwargs):
            if next(calls):
                raise RuntimeError("boom")
            return real(*args, **kwargs)

        monkeypatch.setattr(batch_sending, "_read_verdict", sometimes)
        while lanes.run_batch_process(run_id=run.pk):
            pass
    run.refresh_from_db()
    assert (run.status, run.crash_count, run.crash_streak, run.done_count) == ("done", 2, 0, 1)


def test_a_lane_that_crashes_outside_a_batch_is_counted_and_stops(personas, monkeypatch):
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=2)
    with fake_provider(OPENAI) as provider:
        judge = judge_for(personas.team, provider)
        run = start_without_lanes(judge, evaluation, JudgeRun.Mode.SHADOW, monkeypatch)

        def broken(**kwargs):
            raise RuntimeError("the database went away")

        monkeypatch.setattr(batch_claiming, "items_claim", broken)
        assert tasks.lane_work(run.pk, seconds=30) is False
        assert provider.received == []
    run.refresh_from_db()
    assert (run.status, run.crash_count, run.last_crash) == (
        "running", 1, "RuntimeError: the database went away")


def test_lapsed_claims_count_once_and_a_run_whose_workers_keep_dying_pauses(
        personas, monkeypatch):
    evaluation = evaluation_with_slots(personas.team, keywords=3, positions=1)
    with fake_provider(OPENAI) as provider:
        judge = judge_for(personas.team, provider, batch_size=1)
        run = start_without_lanes(judge, evaluation, JudgeRun.Mode.SHADOW, monkeypatch)
    for died in range(1, 4):
        now = timezone.now()
        # A lane claims a batch and its worker is killed: the lease lapses.
        [item] = batch_claiming.items_claim(run=run, now=now,
                                            lease_until=now - timedelta(seconds=1))
        restart = lanes.lapsed_claims_count()
        assert lanes.lapsed_claims_count() == []  # counted once
        run.refresh_from_db()
        assert run.crash_count == died
        assert JudgeRunItem.objects.get(pk=item.pk).status == "pending"
        assert restart == ([run.pk] if died < 3 else [])
    assert run.status == "paused"
    assert run.pause_reason.startswith("Paused after 3 lane crashes in a row")
    assert "a lane stopped while it held 1 pair(s)" in run.pause_reason


def test_resuming_a_paused_run_starts_a_new_streak(personas, monkeypatch):
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=1)
    with fake_provider(OPENAI) as provider:
        judge = judge_for(personas.team, provider)
        run = start_without_lanes(judge, evaluation, JudgeRun.Mode.SHADOW, monkeypatch)
        JudgeRun.objects.filter(pk=run.pk).update(
            status="paused", crash_streak=3, crash_count=3, pause_reason="Paused after 3")
        runs.run_resume(run=run)
    run.refresh_from_db()
    assert (run.status, run.crash_streak, run.crash_count, run.pause_reason) == (
        "done", 0, 3, "")


# --- calls are logged as they leave ---


def test_a_call_is_logged_and_counted_before_its_answer_arrives(personas, monkeypatch):
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=2)
    seen: list = []
    with fake_provider(OPENAI) as provider:
        def answer(prompt, request):
            # What a worker killed now would leave behind.
            seen.append((list(JudgeCall.objects.values_list("status", flat=True)),
                         JudgeRun.objects.values_list("call_count", flat=True).get()))
            return ModelAnswer({"grades": [{"id": doc_id, "grade": 1, "reason": "ok"}
                                           for doc_id in document_ids(prompt)]})

        provider.default = answer
        judge = judge_for(personas.team, provider, batch_size=2)
        run = start_without_lanes(judge, evaluation, JudgeRun.Mode.SHADOW, monkeypatch)
        lanes.run_batch_process(run_id=run.pk)
    assert seen == [(["in_flight"], 1)]
    call = JudgeCall.objects.get()
    assert (call.status, call.tokens_in, call.run_id) == ("ok", 120, run.pk)
    assert JudgeRunItem.objects.filter(run=run, call=call).count() == 2


def test_every_retried_attempt_is_one_row_logged_as_it_leaves(personas, monkeypatch):
    from tests.judges.fake_providers import status

    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=1)
    with fake_provider(OPENAI) as provider:
        provider.then(status(503), status(503))
        judge = judge_for(personas.team, provider, max_retries=2)
        run = start_without_lanes(judge, evaluation, JudgeRun.Mode.SHADOW, monkeypatch)
        lanes.run_batch_process(run_id=run.pk)
    run.refresh_from_db()
    assert list(JudgeCall.objects.order_by("pk").values_list("status", "http_status")) == [
        ("http_error", 503), ("http_error", 503), ("ok", 200)]
    assert (run.call_count, run.done_count) == (3, 1)


# --- Test and the judge's shared turn ---


def test_test_waits_for_the_turn_no_longer_than_its_deadline(personas, settings):
    settings.OUTBOUND_TEST_DEADLINE_SECONDS = 1.0
    settings.OUTBOUND_LIMIT_WAIT_SECONDS = 20
    with fake_provider(OPENAI) as provider:
        provider.default = grade_all()
        judge = judge_for(personas.team, provider, max_concurrent_requests=1)
        client = APIClient()
        client.force_authenticate(personas.admin)
        # A run's call holds the judge's only turn (max_concurrent_requests=1).
        with outbound_limits.turn(f"judge:{judge.pk}", max_concurrent=1, per_minute=None,
                                  wait_seconds=1, lease_seconds=60):
            began = time.monotonic()
            response = client.post(f"/api/v1/judges/{judge.pk}/test/", {
                "keyword": "chair", "scale": "binary",
                "documents": [{"id": "a", "fields": {"title": "Office chair"}}]},
                format="json")
            waited = time.monotonic() - began
        assert provider.received == []
    assert response.status_code == 200
    assert waited < 5
    assert response.json()["error"] == (
        f"No turn to call {judge.name} came within 1 s, the time this Test may wait: its 1 "
        "concurrent request(s) are in use by its runs. Try again later, or allow it more "
        "concurrent requests.")
    assert not JudgeCall.objects.exists()
