"""Reads for the schedule pages and API, and the schedule's access function.

Who may do what: every member of the team reads a schedule and its runs (the runs are
evaluations every member sees anyway); leads and above create, change, pause, resume and
delete them, as they create evaluations (searchtweak.access decides, WRITE_ROLE says).

A run's regression verdicts belong to the metrics app: they are prefetched by relation
name (`regression_verdicts`) and the newest of the schedule's rule picked here.
"""

from django.db.models import Count, QuerySet

from evaluations.models import Evaluation
from metrics.models import RegressionVerdict
from metrics.selectors import team_baseline
from schedules.models import Schedule, ScheduleRun
from searchtweak import access
from searchtweak.models import Role, Team, User

WRITE_ROLE = Role.LEAD


def schedule_get_for_user(*, user: User, schedule_id: int,
                          minimum_role: str = Role.GRADER) -> Schedule:
    return access.row_get_for_user(
        Schedule.objects.select_related("team", "model", "query_set", "created_by"),
        user=user, pk=schedule_id, minimum_role=minimum_role, what="schedule")


def schedules_with_details(schedules: QuerySet[Schedule]) -> QuerySet[Schedule]:
    """Loaded with what a list row shows: model, query set, creator and `run_count`."""
    return schedules.select_related("model", "query_set", "created_by").annotate(
        run_count=Count("runs"))


def schedules_of_team(*, team_id: int) -> QuerySet[Schedule]:
    return schedules_with_details(Schedule.objects.filter(team_id=team_id)).order_by(
        "name", "id")


def schedule_runs(*, schedule_id: int) -> QuerySet[ScheduleRun]:
    """Newest due time first, each with its evaluation and the evaluation's verdicts
    (one query for the runs, one for every verdict of the page's runs)."""
    return (ScheduleRun.objects.filter(schedule_id=schedule_id)
            .select_related("evaluation")
            .prefetch_related("evaluation__regression_verdicts")
            .order_by("-due_at", "-id"))


def latest_verdict(run: ScheduleRun) -> RegressionVerdict | None:
    """The newest verdict of the schedule's rule for the run's evaluation
    (RegressionVerdict.STANDING_SOURCES), or None: an ad-hoc gate call never replaces it.
    Reads the prefetched rows, so a page of runs costs no query per run."""
    verdicts = [verdict for verdict in run.evaluation.regression_verdicts.all()
                if verdict.source in RegressionVerdict.STANDING_SOURCES]
    return max(verdicts, key=lambda verdict: (verdict.created_at, verdict.pk), default=None)


def with_latest_verdicts(runs: list[ScheduleRun]) -> list[ScheduleRun]:
    """Each run with `verdict` set (see latest_verdict)."""
    for run in runs:
        run.verdict = latest_verdict(run)
    return runs


def team_has_baseline(team: Team) -> bool:
    return team_baseline(team_id=team.pk) is not None


COMPARE_MAX_RUNS = 10  # the N-way compare's limit


def runs_to_compare(*, schedule_id: int) -> list[int]:
    """The newest finished runs with results (at most COMPARE_MAX_RUNS), oldest first: the
    evaluations the schedule page offers to compare side by side. Fewer than two: none."""
    ids = list(ScheduleRun.objects.filter(schedule_id=schedule_id, fetch_failed=False,
                                          evaluation__status=Evaluation.Status.FINISHED)
               .order_by("-due_at").values_list("evaluation_id", flat=True)[:COMPARE_MAX_RUNS])
    return ids[::-1] if len(ids) >= 2 else []
