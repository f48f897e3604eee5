"""What a batch costs the database: a fixed number of statements, whatever its size; and a
lane holding several calls at once gives back what it claimed ahead when the run pauses."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from judges import batch_storing, calls, lanes, runs, tasks
from judges.models import JudgeRun, JudgeRunItem
from judgments.models import FeedbackSlot
from tests.judges.builders import judge_for, lane_paused_by_first_answer
from tests.judges.fake_providers import OPENAI, ModelAnswer, document_ids, fake_provider
from tests.judgments.builders import evaluation_with_slots

pytestmark = pytest.mark.django_db(transaction=True)


def grade_of(doc_id: str) -> int:
    return {"d1": 3, "d2": 0, "d3": 2, "d4": 1, "d5": 3}[doc_id.rsplit("-", 1)[1]]


def one_batch_statements(personas, monkeypatch, *, batch_size: int, mode: str) -> list[str]:
    """The statements of the first batch of a run (one keyword of 5 results)."""
    evaluation = evaluation_with_slots(personas.team, keywords=2, positions=5)
    monkeypatch.setattr(tasks, "run_lanes_dispatch", lambda run_id, count: None)
    with fake_provider(OPENAI) as provider:
        # Every result its own reason, as a model writes them.
        provider.default = lambda prompt, request: ModelAnswer({"grades": [
            {"id": doc_id, "grade": grade_of(doc_id), "reason": f"about {doc_id}"}
            for doc_id in document_ids(prompt)]})
        judge = judge_for(personas.team, provider, batch_size=batch_size,
                          name=f"judge {batch_size} {mode}")
        run = runs.run_start(judge=judge, evaluation=evaluation, mode=mode, started_by=None)
        with CaptureQueriesContext(connection) as captured:
            assert lanes.run_batch_process(run_id=run.pk) == batch_size
    assert JudgeRunItem.objects.filter(run=run, status="done").count() == batch_size
    if mode == JudgeRun.Mode.UNGRADED:
        assert FeedbackSlot.objects.filter(user=judge.user, grade__isnull=False).count() \
            == batch_size
    return [query["sql"] for query in captured.captured_queries]


@pytest.mark.parametrize("mode", [JudgeRun.Mode.UNGRADED, JudgeRun.Mode.SHADOW])
def test_a_batchs_statements_do_not_grow_with_its_size(personas, monkeypatch, mode):
    one = one_batch_statements(personas, monkeypatch, batch_size=1, mode=mode)
    five = one_batch_statements(personas, monkeypatch, batch_size=5, mode=mode)
    print(f"{mode}: {len(one)} statements a batch of 1, {len(five)} a batch of 5")
    assert len(five) == len(one), "\n".join(five)


def test_a_lane_sends_nothing_it_claimed_ahead_once_the_run_is_paused(personas, monkeypatch):
    """A lane claims a round ahead of its calls; a pause while the first call is out lets
    that answer be stored, and gives the batch claimed ahead back, unasked."""
    evaluation = evaluation_with_slots(personas.team, keywords=4, positions=1)
    monkeypatch.setattr(tasks, "run_lanes_dispatch", lambda run_id, count: None)
    with fake_provider(OPENAI) as provider:
        judge = judge_for(personas.team, provider, batch_size=1, max_concurrent_requests=4)
        run = runs.run_start(judge=judge, evaluation=evaluation, mode=JudgeRun.Mode.UNGRADED,
                             started_by=None)
        # Four calls at once, as on PostgreSQL (SQLite's lanes send one at a time).
        asked = lane_paused_by_first_answer(
            run=run, judge=judge, provider=provider,
            answer=lambda prompt, request: ModelAnswer({"grades": [
                {"id": doc_id, "grade": 2, "reason": "ok"} for doc_id in document_ids(prompt)]}))
    run.refresh_from_db()
    assert (run.status, run.done_count, run.call_count, asked) == ("paused", 1, 1, 1)
    statuses = sorted(JudgeRunItem.objects.filter(run=run).values_list("status", flat=True))
    assert statuses == ["done", "pending", "pending", "pending"]
    # The slot claimed with the batch that waited went back to the pool.
    assert FeedbackSlot.objects.filter(user=judge.user).count() == 1


def keyword_number(prompt: str) -> int:
    return int(document_ids(prompt)[0].split("-")[0].split()[-1])


def test_a_lane_of_several_calls_claims_and_stores_batches_in_groups(personas, monkeypatch):
    """A claim or a store costs the same statements for one batch as for several: a lane
    of 8 calls claims half a round at a time and stores answers as they gather, not one
    batch at a time as each call returns."""
    evaluation = evaluation_with_slots(personas.team, keywords=48, positions=1)
    monkeypatch.setattr(tasks, "run_lanes_dispatch", lambda run_id, count: None)
    claims, stores = [], []
    group_start, group_store = lanes._group_start, batch_storing.group_store

    def counted_start(**kwargs):
        claimed, started = group_start(**kwargs)
        claims.append(len(started))
        return claimed, started

    def counted_store(**kwargs):
        stores.append(len(kwargs["batches"]))
        group_store(**kwargs)

    monkeypatch.setattr(lanes, "_group_start", counted_start)
    monkeypatch.setattr(batch_storing, "group_store", counted_store)
    # Answers are held until half a round is in, or STORE_HOLD_SECONDS (0.1 s) at most: on
    # a loaded machine the calls outlived the hold, and stores of one to three were cut by
    # the clock, not the rule this test is for. Without the clock, the rule alone groups.
    monkeypatch.setattr(lanes, "STORE_HOLD_SECONDS", 3600.0)
    with fake_provider(OPENAI) as provider:
        # Answers return one at a time (each keyword its own latency), as a model's do.
        provider.default = lambda prompt, request: ModelAnswer({"grades": [
            {"id": doc_id, "grade": 1, "reason": "ok"} for doc_id in document_ids(prompt)]},
            delay=0.02 + 0.015 * (keyword_number(prompt) % 8))
        judge = judge_for(personas.team, provider, batch_size=1, max_concurrent_requests=8)
        run = runs.run_start(judge=judge, evaluation=evaluation, mode=JudgeRun.Mode.UNGRADED,
                             started_by=None)
        with calls.new_client(judge) as client:
            assert lanes.lane_run(run=lanes.run_for_batches(run.pk), client=client,
                                    seconds=60, width=8) is False
    run.refresh_from_db()
    assert (run.status, run.done_count, run.call_count) == ("done", 48, 48)
    assert sum(claims) == 48 and sum(stores) == 48
    print(f"claims {claims}\nstores {stores}")
    # Ramping up (1, 2, 4, then 8 calls out) takes four small claims; after it, each claim
    # takes 4 batches or more (but the last, of what is left). A store waits for half a
    # round of answers: while 1 and then 2 calls are out that is one, then two, and from
    # then on four (but the last store, of what is left when no call is out). One store a
    # return, with one call out at a time, gave [1, 1, 1, 2, 4, 1, 4, 2, 3, 3, 1, 3, ...].
    taken = [count for count in claims if count]
    assert min(taken[4:-1]) >= 4, claims
    assert stores[0] == 1 and min(stores[2:-1]) >= 4, stores
