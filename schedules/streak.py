"""A run's fetch ended: the schedule's failure streak.

A run whose fetch failed for every keyword is finished at once (its verdict says why it
is undecided, schedules.verdicts) and counts towards the streak that pauses the schedule
(`SCHEDULE_FAILED_RUNS_TO_PAUSE` in a row); a run that fetched restarts the streak.
"""

from django.db import transaction
from django.db.models import F

from evaluations.events import By
from evaluations.models import Evaluation
from evaluations.services.lifecycle import evaluation_finish
from schedules.models import Schedule, ScheduleRun
from schedules.services import schedule_pause_and_announce

SCHEDULE_FAILED_RUNS_TO_PAUSE = 3


def schedule_run_fetch_ended(*, evaluation_id: int, every_keyword_failed: bool) -> None:
    """A run fetched (the schedule's failure streak restarts) or failed for every keyword:
    then it is finished at once, its verdict says why it is undecided, and the
    SCHEDULE_FAILED_RUNS_TO_PAUSE-th such run in a row pauses the schedule."""
    run = ScheduleRun.objects.filter(evaluation_id=evaluation_id).first()
    if run is None:
        return
    with transaction.atomic():
        if not every_keyword_failed:
            Schedule.objects.filter(pk=run.schedule_id).update(failed_run_streak=0)
            return
        ScheduleRun.objects.filter(pk=run.pk).update(fetch_failed=True)
        Schedule.objects.filter(pk=run.schedule_id).update(
            failed_run_streak=F("failed_run_streak") + 1)
        streak = Schedule.objects.values_list("failed_run_streak", flat=True).get(
            pk=run.schedule_id)
        evaluation = Evaluation.objects.get(pk=evaluation_id)
        if evaluation.status == Evaluation.Status.ACTIVE:
            evaluation_finish(evaluation=evaluation, by=By.AUTO)
        if streak >= SCHEDULE_FAILED_RUNS_TO_PAUSE:
            schedule_pause_and_announce(run.schedule_id, (
                f"the fetch failed for every keyword in {streak} runs in a row; check the "
                "search model's endpoint, then resume"))
