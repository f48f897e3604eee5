"""Judge runs end to end against real local model servers: a run claims batches, asks,
validates every pair, writes through the one grade-write service, and never reports done
with a pair silently missing."""

import json
import time

import pytest
from django.core.exceptions import ValidationError
from django.db import connection

from evaluations.models import Evaluation, EvaluationMetric
from judges import batch_claiming, batch_storing, lanes, runs
from judges.models import JudgeAnswer, JudgeCall, JudgeRun, JudgeRunItem
from judgments.models import FeedbackSlot
from metrics.models import KeywordMetricValue
from tests.judges.builders import judge_for
from tests.judges.fake_providers import (
    ANTHROPIC,
    OLLAMA,
    OPENAI,
    ModelAnswer,
    answer,
    document_ids,
    fake_provider,
    grade_all,
    rate_limited,
    slow,
)
from tests.judgments.builders import evaluation_with_slots
from tests.recompute_state import mean_of

pytestmark = pytest.mark.django_db(transaction=True)

GRADES = {"d1": 3, "d2": 0, "d3": 2}


def grade_of(doc_id: str) -> int:
    return GRADES[doc_id.rsplit("-", 1)[1]]


@pytest.fixture(autouse=True)
def _quick_retries(settings):
    settings.JUDGE_RETRY_BACKOFF_MS = 10


def start(judge, evaluation, mode, **options):
    return runs.run_start(judge=judge, evaluation=evaluation, mode=mode, started_by=None,
                          **options)


def items_of(run):
    return {item.snapshot.doc_id: item for item in
            JudgeRunItem.objects.filter(run=run).select_related("snapshot")}


@pytest.mark.parametrize("protocol", [OPENAI, ANTHROPIC, OLLAMA])
def test_a_shadow_run_grades_every_pair_and_fills_no_slot(personas, protocol):
    evaluation = evaluation_with_slots(personas.team, keywords=2, positions=3)
    with fake_provider(protocol) as provider:
        provider.default = grade_all(grade_of, reason="fits")
        judge = judge_for(personas.team, provider, counts=False, batch_size=2)
        run = start(judge, evaluation, JudgeRun.Mode.SHADOW)

    run.refresh_from_db()
    assert (run.status, run.pair_count, run.done_count, run.failed_count) == ("done", 6, 6, 0)
    # Batch 2 over keywords of 3 results: 2 + 1 per keyword, never two keywords in one call.
    assert run.call_count == 4
    prompts = [document_ids(provider._user_prompt(body)) for body in provider.bodies()]
    assert sorted(len(ids) for ids in prompts) == [1, 1, 2, 2]
    assert all(len({doc_id.split("-")[0] for doc_id in ids}) == 1 for ids in prompts)
    assert {doc: (item.grade, item.reason) for doc, item in items_of(run).items()} == {
        doc: (grade_of(doc), "fits") for doc in items_of(run)}
    assert (run.tokens_in, run.tokens_out) == (4 * 120, 4 * 40)
    assert not FeedbackSlot.objects.filter(user=judge.user).exists()
    # The key went to the provider and into no log.
    logged = json.dumps(list(JudgeCall.objects.values("request", "answer", "error")))
    assert provider.api_key not in logged
    assert JudgeCall.objects.filter(run=run, status="ok").count() == 4


def test_an_ungraded_run_fills_slots_as_a_person_would_and_metrics_follow(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=2, positions=3)
    EvaluationMetric.objects.create(evaluation=evaluation, code="precision", k=3)
    with fake_provider(OPENAI) as provider:
        provider.default = grade_all(grade_of, reason="on topic")
        judge = judge_for(personas.team, provider)
        run = start(judge, evaluation, JudgeRun.Mode.UNGRADED)

    run.refresh_from_db()
    assert (run.status, run.done_count) == ("done", 6)
    slots = FeedbackSlot.objects.filter(evaluation=evaluation, user=judge.user)
    assert sorted((s.snapshot.doc_id, s.grade, s.reason) for s in slots) == sorted(
        (doc, grade_of(doc), "on topic") for doc in items_of(run))
    assert all(slot.lease_expires_at is None and slot.graded_at for slot in slots)
    # Grades d1=3, d2=0, d3=2 on the graded scale; P@3 counts grades >= 1 as relevant
    # (docs/METRICS.md): 2/3 for each keyword, and so for the evaluation's mean.
    metric = EvaluationMetric.objects.get(evaluation=evaluation, code="precision")
    assert [round(value, 9) for value in KeywordMetricValue.objects.filter(
        metric=metric).values_list("value", flat=True)] == [round(2 / 3, 9)] * 2
    assert round(mean_of(metric).value, 9) == round(2 / 3, 9)


def test_bad_pairs_fail_alone_their_slots_return_and_retry_finishes_them(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=3,
                                       texts=["shoes"])
    partial = answer({"grades": [
        {"id": "shoes-d1", "grade": 3, "reason": "good"},
        {"id": "shoes-d2", "grade": 9, "reason": "off the scale"},
        {"id": "shoes-d2", "grade": 1, "reason": "duplicate"},
    ]})
    with fake_provider(OPENAI) as provider:
        provider.then(partial)
        judge = judge_for(personas.team, provider)
        run = start(judge, evaluation, JudgeRun.Mode.UNGRADED)
        run.refresh_from_db()
        items = items_of(run)
        assert (run.status, run.done_count, run.failed_count, run.left_count) == (
            "done", 1, 2, 0)
        assert (items["shoes-d1"].status, items["shoes-d1"].grade) == ("done", 3)
        assert (items["shoes-d2"].status, items["shoes-d2"].failure) == ("failed", "duplicate")
        assert (items["shoes-d3"].status, items["shoes-d3"].failure) == ("failed", "missing")
        assert items["shoes-d3"].call_id is not None
        # The failed pairs' slots went back to the pool; the judge holds only its grade.
        assert list(FeedbackSlot.objects.filter(user=judge.user).values_list(
            "snapshot__doc_id", "grade")) == [("shoes-d1", 3)]

        provider.default = grade_all(grade_of)
        assert runs.run_retry_failed(run=run) == 2
    run.refresh_from_db()
    assert (run.status, run.done_count, run.failed_count) == ("done", 3, 0)
    assert sorted(FeedbackSlot.objects.filter(user=judge.user).values_list(
        "snapshot__doc_id", "grade")) == [("shoes-d1", 3), ("shoes-d2", 0), ("shoes-d3", 2)]


def test_unreadable_json_fails_the_batch_visibly(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=2)
    with fake_provider(OPENAI) as provider:
        provider.default = answer('{"grades": [{"id": ')
        judge = judge_for(personas.team, provider, counts=False)
        run = start(judge, evaluation, JudgeRun.Mode.SHADOW)
    run.refresh_from_db()
    assert (run.status, run.failed_count, run.done_count) == ("done", 2, 0)
    assert set(JudgeRunItem.objects.filter(run=run).values_list("failure", flat=True)) == {
        "malformed"}
    assert list(JudgeCall.objects.filter(run=run).values_list("status", flat=True)) == [
        "malformed"]


def test_429_retry_after_is_honoured_and_logged(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=2)
    with fake_provider(OPENAI) as provider:
        provider.then(rate_limited("0.5"))
        judge = judge_for(personas.team, provider, counts=False)
        began = time.monotonic()
        run = start(judge, evaluation, JudgeRun.Mode.SHADOW)
        took = time.monotonic() - began
    run.refresh_from_db()
    assert (run.status, run.done_count, run.call_count) == ("done", 2, 2)
    # The backoff is 10 ms here: only the Retry-After explains half a second.
    assert took >= 0.5
    assert list(JudgeCall.objects.filter(run=run).order_by("started_at", "id")
                .values_list("status", "http_status")) == [("rate_limited", 429), ("ok", 200)]


def test_a_timeout_fails_the_pairs_and_returns_their_slots(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=2)
    with fake_provider(OPENAI) as provider:
        provider.default = slow(3.0)
        judge = judge_for(personas.team, provider, timeout_seconds=0.5, max_retries=0)
        run = start(judge, evaluation, JudgeRun.Mode.UNGRADED)
    run.refresh_from_db()
    assert (run.status, run.failed_count) == ("done", 2)
    assert set(JudgeRunItem.objects.filter(run=run).values_list("failure", flat=True)) == {
        "timeout"}
    assert not FeedbackSlot.objects.filter(user=judge.user).exists()


def test_the_same_question_is_not_asked_twice_unless_told_to_refresh(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=3)
    with fake_provider(OPENAI) as provider:
        provider.default = grade_all(grade_of)
        judge = judge_for(personas.team, provider, counts=False)
        start(judge, evaluation, JudgeRun.Mode.SHADOW)
        assert len(provider.received) == 1
        again = start(judge, evaluation, JudgeRun.Mode.SHADOW)
        assert len(provider.received) == 1
        again.refresh_from_db()
        assert (again.done_count, again.cached_count, again.call_count) == (3, 3, 0)
        assert {item.grade for item in items_of(again).values()} == {3, 0, 2}
        fresh = start(judge, evaluation, JudgeRun.Mode.SHADOW, refresh_cache=True)
        assert len(provider.received) == 2
    fresh.refresh_from_db()
    assert (fresh.done_count, fresh.cached_count) == (3, 0)
    assert JudgeAnswer.objects.count() == 3


def test_a_lapsed_claim_is_taken_over_and_its_late_answer_writes_nothing(personas):
    """A worker that claimed a batch and died: the lease lapses, another lane asks again,
    and if the dead claim's answer arrived after all, it finds its stamp gone."""
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=2)
    with fake_provider(OPENAI) as provider:
        provider.default = grade_all(grade_of)
        judge = judge_for(personas.team, provider)
        with_no_lanes = runs._lanes_start_on_commit
        runs._lanes_start_on_commit = lambda run: None
        try:
            run = start(judge, evaluation, JudgeRun.Mode.UNGRADED)
        finally:
            runs._lanes_start_on_commit = with_no_lanes
        from django.utils import timezone
        now = timezone.now()
        dead_claim = batch_claiming.items_claim(run=run, now=now, lease_until=now)
        assert [item.status for item in dead_claim] == ["claimed", "claimed"]
        assert lanes.runs_stalled(now=now + timezone.timedelta(seconds=1)) == [run.pk]
        assert lanes.run_batch_process(run_id=run.pk) == 2
        outcomes = {item.pk: batch_claiming.Outcome(grade=1, reason="late") for item in dead_claim}
        batch_storing._store(run=run, items=dead_claim, outcomes=outcomes, result=None)
        # The lane's next turn finds nothing to claim and closes the run.
        assert lanes.run_batch_process(run_id=run.pk) == 0
    run.refresh_from_db()
    assert (run.status, run.done_count) == ("done", 2)
    assert sorted(FeedbackSlot.objects.filter(user=judge.user).values_list(
        "snapshot__doc_id", "grade", "reason")) == [
        (f"{evaluation.keywords.get().text}-d1", 3, "matches the keyword"),
        (f"{evaluation.keywords.get().text}-d2", 0, "matches the keyword")]
    assert FeedbackSlot.objects.filter(user=judge.user).count() == 2


def test_a_lapsed_claims_late_answer_during_the_takeovers_call_writes_nothing(personas):
    """The dead claim's answer arrives while the lane that took over is still waiting for
    the model: it finds its stamp gone and writes nothing; the takeover's answer stands."""
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=2)
    text = evaluation.keywords.get().text
    late: list = []
    with fake_provider(OPENAI) as provider:
        judge = judge_for(personas.team, provider)
        with_no_lanes = runs._lanes_start_on_commit
        runs._lanes_start_on_commit = lambda run: None
        try:
            run = start(judge, evaluation, JudgeRun.Mode.UNGRADED)
        finally:
            runs._lanes_start_on_commit = with_no_lanes
        from django.utils import timezone
        now = timezone.now()
        dead_claim = batch_claiming.items_claim(run=run, now=now, lease_until=now)

        def takeover_in_flight(prompt, request):
            # The takeover's call is out: now the dead claim's answer comes back.
            outcomes = {item.pk: batch_claiming.Outcome(grade=1, reason="late") for item in
                        dead_claim}
            batch_storing._store(run=run, items=dead_claim, outcomes=outcomes, result=None)
            late.append(sorted(FeedbackSlot.objects.filter(user=judge.user).values_list(
                "grade", "reason")))
            connection.close()
            return grade_all(grade_of)(prompt, request)

        provider.default = takeover_in_flight
        assert lanes.run_batch_process(run_id=run.pk) == 2
        assert lanes.run_batch_process(run_id=run.pk) == 0
    # The late answer found the takeover's claim on the slots and wrote nothing.
    assert late == [[(None, ""), (None, "")]]
    run.refresh_from_db()
    assert (run.status, run.done_count, run.failed_count) == ("done", 2, 0)
    assert sorted(FeedbackSlot.objects.filter(user=judge.user).values_list(
        "snapshot__doc_id", "grade", "reason")) == [
        (f"{text}-d1", 3, "matches the keyword"), (f"{text}-d2", 0, "matches the keyword")]
    assert set(JudgeRunItem.objects.filter(run=run).values_list("grade", "reason")) == {
        (3, "matches the keyword"), (0, "matches the keyword")}


def test_pause_cancel_and_the_rules_of_starting(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=2, tags=["de"])
    with fake_provider(OPENAI) as provider:
        judge = judge_for(personas.team, provider, counts=False, tags=["DE", "fr"])
        with pytest.raises(ValidationError) as refused:
            start(judge, evaluation, JudgeRun.Mode.UNGRADED)
        assert "does not count yet" in str(refused.value.message_dict["mode"])
        untagged = judge_for(personas.team, provider, name="Plain", counts=True)
        with pytest.raises(ValidationError) as refused:
            start(untagged, evaluation, JudgeRun.Mode.FILL)
        assert "routes its work to the tags de" in refused.value.message_dict["judge"][0]
        other = judge_for(personas.other_team, provider, name="Stranger")
        with pytest.raises(ValidationError) as refused:
            start(other, evaluation, JudgeRun.Mode.SHADOW)
        assert "another team" in refused.value.message_dict["judge"][0]

        with_no_lanes = runs._lanes_start_on_commit
        runs._lanes_start_on_commit = lambda run: None
        try:
            run = start(judge, evaluation, JudgeRun.Mode.SHADOW)
            with pytest.raises(ValidationError):
                start(judge, evaluation, JudgeRun.Mode.SHADOW)
            assert runs.run_pause(run=run).status == "paused"
            assert lanes.run_batch_process(run_id=run.pk) == 0
        finally:
            runs._lanes_start_on_commit = with_no_lanes
        assert runs.run_resume(run=run).status == "running"
        run.refresh_from_db()
        assert (run.status, run.done_count) == ("done", 2)
        with pytest.raises(ValidationError):
            runs.run_cancel(run=run)


def test_a_run_pauses_when_its_evaluation_stops_taking_grades(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=2)
    with fake_provider(OPENAI) as provider:
        def close_then_grade(prompt, request):
            # A lead pauses the evaluation while the model thinks (on the server's thread,
            # whose connection is closed so the test database can be dropped).
            Evaluation.objects.filter(pk=evaluation.pk).update(status=Evaluation.Status.PENDING)
            connection.close()
            return ModelAnswer({"grades": [{"id": doc_id, "grade": 1, "reason": "r"}
                                           for doc_id in document_ids(prompt)]})
        provider.default = close_then_grade
        judge = judge_for(personas.team, provider)
        run = start(judge, evaluation, JudgeRun.Mode.UNGRADED)
    run.refresh_from_db()
    assert (run.status, run.done_count, run.left_count) == ("paused", 0, 2)
    assert set(JudgeRunItem.objects.filter(run=run).values_list("status", flat=True)) == {
        "pending"}
    assert not FeedbackSlot.objects.filter(user=judge.user).exists()
    progress = runs.run_progress(run=run)
    assert (progress["left"], progress["percent_done"], progress["cost"]) == (2, 0, None)


def test_a_key_saved_under_another_secret_key_fails_the_pairs_visibly(personas):
    """The lane does not crash on every batch (and come back forever through the sweep):
    each pair fails with the reason, to retry once an admin enters the key again."""
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=2)
    with fake_provider(OPENAI) as provider:
        judge = judge_for(personas.team, provider, counts=False,
                          api_key_encrypted="gAAAAAB-not-a-token-of-this-secret-key")
        run = start(judge, evaluation, JudgeRun.Mode.SHADOW)
        assert provider.received == []
    run.refresh_from_db()
    assert (run.status, run.failed_count, run.call_count) == ("done", 2, 0)
    failures = set(JudgeRunItem.objects.filter(run=run).values_list("failure", "failure_detail"))
    assert len(failures) == 1
    failure, detail = failures.pop()
    assert failure == "api_key" and "enter it again" in detail
