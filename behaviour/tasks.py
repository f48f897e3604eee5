"""Behaviour's Celery tasks: a clicks run's grading, after the commit that started it."""

from celery import shared_task

from behaviour.learning import click_run_grade


@shared_task(name="behaviour.click_run_grade", time_limit=1800, soft_time_limit=1700)
def click_run_grade_task(run_id: int) -> int:
    """Learn a clicks run's grades (behaviour.learning); idempotent: only pending items of
    a running run are graded."""
    return click_run_grade(run_id=run_id)


def click_run_dispatch(run_id: int) -> None:
    click_run_grade_task.delay(run_id)
