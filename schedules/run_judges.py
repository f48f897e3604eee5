"""Judges that grade a schedule's runs (Schedule.judge_ids): which judges a schedule may
name, and the runs they start once a run's results are fetched (schedules.receivers)."""

import logging

from django.core.exceptions import ValidationError

from evaluations.models import Evaluation
from judges.models import Judge, JudgeRun
from judges.runs import run_start
from schedules.models import ScheduleRun
from searchtweak.models import Team

logger = logging.getLogger(__name__)


def counting_judges(team: Team) -> list[tuple[int, str]]:
    """(id, name) of the team's active judges whose grades count: the ones a schedule may
    send its runs' new pairs to."""
    return list(Judge.objects.filter(team=team, is_active=True, counts=True)
                .order_by("name", "pk").values_list("pk", "name"))


def schedule_run_judges_start(*, evaluation_id: int) -> list[JudgeRun]:
    """Start each of the schedule's judges on the run's pairs nobody has graded (the ones
    reuse did not fill: the new pairs). A judge that no longer counts, or cannot run, is
    logged and skipped; the run is then graded by people."""
    run = ScheduleRun.objects.select_related("schedule").filter(
        evaluation_id=evaluation_id).first()
    if run is None or not run.schedule.judge_ids:
        return []
    evaluation = Evaluation.objects.get(pk=evaluation_id)
    started = []
    for judge in Judge.objects.filter(pk__in=run.schedule.judge_ids, team_id=evaluation.team_id):
        try:
            started.append(run_start(judge=judge, evaluation=evaluation,
                                     mode=JudgeRun.Mode.UNGRADED, started_by=None))
        except ValidationError as error:
            logger.warning("schedule %s: judge %s not started on run %s: %s",
                           run.schedule_id, judge.pk, evaluation_id, "; ".join(error.messages))
    return started
