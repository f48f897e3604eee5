"""How many lanes a run starts: counted for the worker that runs them, not for the
transaction that starts the run."""

from types import SimpleNamespace

from judges import lanes, runs
from judges.models import Judge, JudgeRun


def _run(*, concurrency: int, pairs: int = 10_000) -> JudgeRun:
    return JudgeRun(judge=Judge(batch_size=5, max_concurrent_requests=concurrency),
                    pair_count=pairs)


def test_a_start_in_a_transaction_counts_the_workers_lanes(monkeypatch, settings):
    # run_start is atomic: a lane there would hold one call, but its lanes run on a worker,
    # 8 calls each. Counting one call a lane started 16 lanes of 8 threads (144 database
    # connections) for a judge of 16.
    settings.JUDGE_LANE_CALLS = 8
    monkeypatch.setattr(lanes, "connection",
                        SimpleNamespace(vendor="postgresql", in_atomic_block=True))
    run = _run(concurrency=16)
    assert lanes.lane_width(run.judge) == 1
    assert lanes.lane_calls(run.judge) == 8
    assert runs.lane_count(run) == 2


def test_lanes_cover_the_concurrency_and_no_more_than_the_batches(monkeypatch, settings):
    settings.JUDGE_LANE_CALLS = 4
    monkeypatch.setattr(lanes, "connection",
                        SimpleNamespace(vendor="postgresql", in_atomic_block=False))
    assert runs.lane_count(_run(concurrency=16)) == 4
    assert runs.lane_count(_run(concurrency=6)) == 2
    assert runs.lane_count(_run(concurrency=16, pairs=10)) == 1  # 2 batches, 4 calls a lane


def test_on_sqlite_a_lane_holds_one_call(monkeypatch, settings):
    settings.JUDGE_LANE_CALLS = 8
    monkeypatch.setattr(lanes, "connection",
                        SimpleNamespace(vendor="sqlite", in_atomic_block=False))
    assert runs.lane_count(_run(concurrency=16)) == 16
