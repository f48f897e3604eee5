"""Where a finished evaluation turns into a regression verdict (connected in apps.ready).

The listener only enqueues: the event comes after the finish committed, and a failure to
enqueue or to compute is logged, never raised, so finishing is never undone by it.
"""

import logging

from evaluations.events import EvaluationTransitioned, Transition

logger = logging.getLogger(__name__)


def on_evaluation_transitioned(sender, *, event: EvaluationTransitioned, **kwargs) -> None:
    if event.transition != Transition.FINISHED:
        return
    from metrics.tasks import regression_verdict_on_finish

    try:
        regression_verdict_on_finish.apply_async((event.evaluation_id,))
    except Exception:
        logger.exception("could not enqueue the verdict of evaluation %s", event.evaluation_id)
