"""What a schedule hears of its runs' lifecycle (connected in EvaluationsConfig.ready): the
end of a run's fetch, which restarts or extends the schedule's failure streak."""

import logging

from evaluations.events import EvaluationTransitioned, Transition
from evaluations.services.schedules import schedule_run_fetch_ended

logger = logging.getLogger(__name__)


def on_evaluation_transitioned(sender: type, *, event: EvaluationTransitioned,
                               **kwargs: object) -> None:
    if event.transition not in (Transition.FETCHED, Transition.FAILED):
        return
    schedule_run_fetch_ended(evaluation_id=event.evaluation_id,
                             every_keyword_failed=event.transition == Transition.FAILED)
