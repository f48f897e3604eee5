"""A schedule's reactions to its runs' lifecycle (connected in SchedulesConfig.ready to
evaluations.events.evaluation_transitioned), in this order:

- the end of a run's fetch (`fetched` or `failed`) restarts or extends the schedule's
  failure streak (schedules.streak);
- a fetched run starts the schedule's judges on its new pairs (schedules.run_judges);
- a finished run has its verdict computed by the schedule's rule (schedules.verdicts, on a
  worker: schedules.tasks.schedule_run_verdict).

Each step runs after the transition committed; its error is logged and the next step
still runs, as the sender does between listeners."""

import logging
from collections.abc import Callable

from evaluations.events import EvaluationTransitioned, Transition
from schedules.models import ScheduleRun
from schedules.run_judges import schedule_run_judges_start
from schedules.streak import schedule_run_fetch_ended
from schedules.tasks import schedule_run_verdict

logger = logging.getLogger(__name__)


def on_evaluation_transitioned(sender: type, *, event: EvaluationTransitioned,
                               **kwargs: object) -> None:
    if event.transition in (Transition.FETCHED, Transition.FAILED):
        _step(event, lambda: schedule_run_fetch_ended(
            evaluation_id=event.evaluation_id,
            every_keyword_failed=event.transition == Transition.FAILED))
    if event.transition == Transition.FETCHED:
        _step(event, lambda: schedule_run_judges_start(evaluation_id=event.evaluation_id))
    if event.transition == Transition.FINISHED:
        _step(event, lambda: _verdict_request(evaluation_id=event.evaluation_id))


def _step(event: EvaluationTransitioned, step: Callable[[], object]) -> None:
    try:
        step()
    except Exception:
        logger.exception("a schedule's reaction to %s failed", event)


def _verdict_request(*, evaluation_id: int) -> None:
    """Enqueue the run's verdict; an evaluation that is no schedule's run sends nothing. A
    failure to enqueue is logged, never raised: the finish stands."""
    if not ScheduleRun.objects.filter(evaluation_id=evaluation_id).exists():
        return
    try:
        schedule_run_verdict.apply_async((evaluation_id,))
    except Exception:
        logger.exception("could not enqueue the verdict of run %s", evaluation_id)
