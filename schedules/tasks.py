"""Celery tasks of schedules: the tick that fires due schedules, and a finished run's
verdict."""

import logging

from celery import shared_task

from schedules import firing
from schedules.verdicts import schedule_run_verdict_on_finish

logger = logging.getLogger(__name__)


def schedules_tick_body() -> str:
    """The tick's summary for the log, empty when it did nothing."""
    report = firing.schedules_tick()
    if not (report.fired or report.skipped or report.finished_overdue):
        return ""
    return (f"{report.fired} fired, {report.skipped} skipped, "
            f"{report.finished_overdue} overdue finished")


@shared_task(name="evaluations.schedules_tick", time_limit=300, soft_time_limit=240)
def schedules_tick() -> str:
    """Fire the due schedules and finish overdue runs (schedules.firing.schedules_tick).
    Celery beat sends it every SCHEDULE_TICK_SECONDS; two beats at once fire each due time
    once."""
    return schedules_tick_body()


@shared_task(name="schedules.run_verdict", time_limit=300, soft_time_limit=280,
             ignore_result=True)
def schedule_run_verdict(evaluation_id: int) -> int | None:
    """Store the finished run's verdict by its schedule's rule
    (schedules.verdicts.schedule_run_verdict_on_finish); the verdict's id, or None. A crash
    is logged, not raised: the run finished whatever happens here."""
    try:
        verdict = schedule_run_verdict_on_finish(evaluation_id=evaluation_id)
    except Exception:
        logger.exception("the verdict of run %s failed", evaluation_id)
        return None
    return verdict.pk if verdict else None
