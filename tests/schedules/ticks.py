"""A schedule's tick at a chosen time, as beat calls it, for the tests that walk runs."""

from datetime import datetime

import time_machine

from evaluations.models import Evaluation
from schedules import firing
from schedules.models import ScheduleRun


def tick(at: datetime) -> Evaluation:
    """The tick at `at`: exactly one run made and, each commit running its callbacks as in
    production, fetched from the live demo engine (eager Celery), its keywords marked and
    recomputed group by group while it is still fetching. The run's evaluation."""
    with time_machine.travel(at, tick=False):
        assert firing.schedules_tick().fired == 1
    return ScheduleRun.objects.get(due_at=at).evaluation
