"""Schedules and their runs for the page and API tests, built through the services (the
schedule) or as rows (the runs: an evaluation per due time, without fetching)."""

from datetime import timedelta

from django.utils import timezone

from evaluations.models import Evaluation, KeywordSet, SearchModel
from evaluations.query_sets import services as query_set_services
from metrics.models import RegressionVerdict
from schedules import services as schedule_services
from schedules.models import Schedule, ScheduleRun
from tests.evaluations.factories import EvaluationFactory, SearchModelFactory


def model_and_set(team, user, *, name: str = "Shoes") -> tuple[SearchModel, KeywordSet]:
    model = SearchModelFactory(endpoint__team=team, name="BM25")
    query_set = query_set_services.query_set_create(team=team, created_by=user, name=name,
                                                    keywords=["boots", "sandals"])
    return model, query_set


def schedule_of(team, user, **fields) -> Schedule:
    model, query_set = model_and_set(team, user)
    values = {"name": "Nightly", "model": model, "query_set": query_set, "scale": "graded",
              "strategy": 1, "metrics": [{"code": "ndcg", "k": 10, "params": {}}],
              "interval_minutes": 60, "baseline": Schedule.Baseline.FIRST, **fields}
    return schedule_services.schedule_create(team=team, created_by=user, **values)


def run_of(schedule: Schedule, *, hours_ago: int, status: str = Evaluation.Status.FINISHED,
           verdicts: list[tuple[str, str]] = (), archived: bool = False) -> ScheduleRun:
    """A run due `hours_ago` with its evaluation and these (verdict, first reason) rows,
    stored in order (the last is the newest)."""
    due_at = timezone.now() - timedelta(hours=hours_ago)
    evaluation = EvaluationFactory(
        team=schedule.team, model=schedule.model, status=status,
        name=f"{schedule.name} · {hours_ago}h ago",
        archived_at=timezone.now() if archived else None)
    run = ScheduleRun.objects.create(schedule=schedule, evaluation=evaluation, due_at=due_at,
                                     deadline_at=due_at + timedelta(hours=24))
    for offset, (verdict, reason) in enumerate(verdicts):
        RegressionVerdict.objects.create(
            evaluation=evaluation, verdict=verdict, reasons=[reason, "ndcg@10: details"],
            baseline_name="First run", source=RegressionVerdict.Source.FINISHED,
            created_at=timezone.now() + timedelta(seconds=offset))
    return run
