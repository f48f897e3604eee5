"""Every path by which an evaluation's progress can reach 100 % asks the lifecycle's one
finish rule (evaluations.services.evaluation_finish_if_complete): a fetch whose slots were
filled from earlier grades or the pool, an import of judgments, a judge run, a recompute.

The key case is a schedule's run of an unchanged model: every result is filled from the
previous run's grades when it is fetched, so nothing else will ever ask."""

from datetime import UTC, datetime, timedelta

import pytest
import time_machine

from evaluations import services
from evaluations.management.commands.seed_demo import DEMO_KEYWORDS, MODEL_NAME
from evaluations.models import Evaluation, Schedule, ScheduleRun, SearchModel
from judgments.models import FeedbackSlot
from metrics.models import RegressionVerdict
from metrics.services import evaluation_metrics_recompute
from searchtweak.models import Team, User
from searchtweak.notification_models import Event, Notification
from tests.demo_seed import seeded_demo
from tests.metrics.demo_grading import grade_ungraded_by_demo_relevance

START = datetime(2026, 11, 26, 9, 0, tzinfo=UTC)
METRICS = [{"code": "ndcg", "k": 10, "params": {}}, {"code": "precision", "k": 10, "params": {}}]
KEYWORDS = DEMO_KEYWORDS[:12]


def tick(at: datetime) -> Evaluation:
    """The tick at `at`, as beat calls it: the run is made and, each commit running its
    callbacks as in production, fetched from the live demo engine (eager Celery), its
    keywords marked and recomputed group by group while it is still fetching."""
    with time_machine.travel(at, tick=False):
        assert services.schedules_tick().fired == 1
    return ScheduleRun.objects.get(due_at=at).evaluation


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow_reason("seeds the demo and fetches two schedule runs over HTTP")
def test_a_schedule_run_of_an_unchanged_model_finishes_at_its_fetch_with_its_verdict(
        live_server, settings):
    settings.FETCH_RETRIES = 0
    seeded_demo(demo_url=live_server.url)
    team = Team.objects.get(name="Demo")
    lead = User.objects.get(username="lead")
    model = SearchModel.objects.get(team=team, name=MODEL_NAME)
    query_set = services.query_set_create(team=team, created_by=lead, name="Top queries",
                                          keywords=KEYWORDS)
    with time_machine.travel(START, tick=False):
        services.schedule_create(
            team=team, created_by=lead, name="Hourly", model=model, query_set=query_set,
            scale="graded", strategy=1, metrics=METRICS, interval_minutes=60,
            baseline=Schedule.Baseline.PREVIOUS)
    first = tick(START)
    assert first.status == Evaluation.Status.ACTIVE  # nothing graded yet
    grade_ungraded_by_demo_relevance(first, at=START)
    evaluation_metrics_recompute(evaluation_id=first.pk)
    first.refresh_from_db()
    assert first.status == Evaluation.Status.FINISHED
    finished_before = Notification.objects.filter(user=lead,
                                                  event=Event.EVALUATION_FINISHED).count()

    # The same model an hour later: every result is one the first run graded.
    second = tick(START + timedelta(hours=1))
    second.refresh_from_db()
    slots = FeedbackSlot.objects.filter(evaluation=second)
    assert slots.count() == 12 * 10 and not slots.filter(grade__isnull=True).exists()
    # No grade, no recompute asked for, no Finish: the fetch's end finished it.
    assert second.status == Evaluation.Status.FINISHED
    assert second.finished_at == START + timedelta(hours=1)
    verdict = RegressionVerdict.objects.get(evaluation=second)
    assert (verdict.verdict, verdict.baseline) == ("no_change", first)
    assert "The rankings are identical (RBO 1) on every shared keyword." in verdict.reasons
    assert Notification.objects.filter(
        user=lead, event=Event.EVALUATION_FINISHED).count() == finished_before + 1
