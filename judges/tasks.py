"""Celery tasks of judges: lanes that work through a run's batches, and the sweep that
restarts runs whose lanes died."""

import logging
from functools import partial

from celery import shared_task
from django.conf import settings

from judges import batch_storing, calls, lanes
from judges.batch_claiming import ONE_LANE, Lane
from judges.local_graders import local_dispatcher
from judges.models import JudgeRun
from searchtweak.background import BackgroundThreads, background_run

logger = logging.getLogger(__name__)


@shared_task(
    name="judges.run_lane",
    # Acknowledged once done and put back when its process dies; the claims' leases, not
    # the message, decide what is asked again, so a redelivered lane is harmless.
    acks_late=True, reject_on_worker_lost=True, ignore_result=True,
    soft_time_limit=settings.JUDGE_LANE_TIME_LIMIT - 30,
    time_limit=settings.JUDGE_LANE_TIME_LIMIT,
)
def run_lane(run_id: int, lane_number: int = 0, lane_count: int = 1) -> None:
    """Process the run's batches for about JUDGE_LANE_SECONDS, then hand over to a fresh
    message, so a long run never holds a worker past the broker's patience."""
    if lane_work(run_id, seconds=settings.JUDGE_LANE_SECONDS,
                 lane=Lane(lane_number, lane_count)):
        run_lane.delay(run_id, lane_number, lane_count)


def lane_work(run_id: int, *, seconds: float, lane: Lane = ONE_LANE) -> bool:
    """Batches until nothing is claimable or `seconds` pass, up to the lane's width of
    calls in flight (lanes.lane_run); whether work may remain."""
    run = lanes.run_for_batches(run_id)
    if run is None:
        return False
    try:
        with calls.new_client(run.judge) as client:
            return lanes.lane_run(run=run, client=client, lane=lane, seconds=seconds)
    except Exception as error:
        # A batch answers for its own pairs; this is the lane itself failing (claiming,
        # the database). Counted on the run, and this lane ends: the sweep starts another,
        # until crashes in a row pause the run with the reason.
        logger.exception("a lane of judge run %s crashed", run_id)
        batch_storing.run_crash_record(run_id=run_id, detail=batch_storing.crash_text(error))
        return False


@shared_task(name="judges.sweep_stalled_runs", time_limit=60, soft_time_limit=50)
def sweep_stalled_runs() -> int:
    """Start a lane for each running run that has work no lane is doing (its lanes died
    with their worker); how many. Celery beat runs it every JUDGE_SWEEP_EVERY_SECONDS."""
    stalled = sorted(set(lanes.lapsed_claims_count()) | set(lanes.runs_stalled()))
    providers = dict(JudgeRun.objects.filter(pk__in=stalled).values_list(
        "pk", "judge__provider"))
    for run_id in stalled:
        local = local_dispatcher(providers.get(run_id, ""))
        if local is not None:
            local(run_id)  # an in-process grader has no lanes to start
        else:
            run_lanes_dispatch(run_id, 1)
    return len(stalled)


# In the embedded mode (searchtweak.background) the lanes run on threads of the web
# process, so the page that started a run answers at once and shows its progress.
_background = BackgroundThreads("embedded-judge", workers=4)


def run_lanes_dispatch(run_id: int, count: int) -> None:
    for number in range(count):
        _background.send(run_lane, run_id, number, count, background=partial(
            _lane_in_background, run_id, Lane(number, count)))


def _lane_in_background(run_id: int, lane: Lane) -> None:
    def lane_to_the_end() -> None:
        while lane_work(run_id, seconds=settings.JUDGE_LANE_SECONDS, lane=lane):
            pass

    background_run(lane_to_the_end, what=f"a judge lane of run {run_id}")
