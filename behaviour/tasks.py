"""Behaviour's Celery tasks: a clicks run's grading, after the commit that started it; a
source's rows of the last 7 and 30 days, after a batch brought a new last day, and the
sweep that queues those a lost task left behind."""

import logging

from celery import shared_task

from behaviour.learning import click_run_grade
from behaviour.rollup import last_days_behind, last_days_catch_up

logger = logging.getLogger(__name__)


@shared_task(name="behaviour.click_run_grade", time_limit=1800, soft_time_limit=1700)
def click_run_grade_task(run_id: int) -> int:
    """Learn a clicks run's grades (behaviour.learning); idempotent: only pending items of
    a running run are graded."""
    return click_run_grade(run_id=run_id)


def click_run_dispatch(run_id: int) -> None:
    click_run_grade_task.delay(run_id)


@shared_task(name="behaviour.last_days_catch_up", time_limit=600, soft_time_limit=570)
def last_days_catch_up_task(source_id: int) -> bool:
    """Make a source's last-days rows end on its window's last day (behaviour.rollup);
    idempotent: nothing to do when they already do."""
    return last_days_catch_up(source_id=source_id)


@shared_task(name="behaviour.last_days_sweep", time_limit=60, soft_time_limit=50)
def last_days_sweep() -> int:
    """Queue the catch-up of every source whose last-days rows are behind (a collector
    gone quiet after its task was lost keeps its presets on the day rows until then);
    how many. Celery beat runs it every few minutes (settings.CELERY_BEAT_SCHEDULE)."""
    behind = last_days_behind()
    for source_id in behind:
        last_days_dispatch(source_id)
    return len(behind)


def last_days_dispatch(source_id: int) -> None:
    # A broker that is down must not fail the batch that has committed: the rows stay
    # behind (the presets read the day rows meanwhile) and the next batch queues again.
    try:
        last_days_catch_up_task.delay(source_id)
    except Exception:
        logger.exception("could not enqueue the last days of behaviour source %s; the "
                         "next batch will", source_id)
