"""Every path by which an evaluation's progress can reach 100 % asks the lifecycle's one
finish rule (evaluations.services.evaluation_finish_if_complete): a fetch whose slots were
filled from earlier grades or the pool, an import of judgments, a judge run, a recompute.

The key case is a schedule's run of an unchanged model: every result is filled from the
previous run's grades when it is fetched, so nothing else will ever ask."""

from datetime import UTC, datetime, timedelta

import pytest
import time_machine

from evaluations.management.commands.seed_demo import DEMO_KEYWORDS, MODEL_NAME
from evaluations.models import Evaluation, Keyword, SearchModel
from evaluations.query_sets import services as query_set_services
from evaluations.services import completion, configuration, lifecycle
from judges import runs
from judges.models import JudgeRun
from judgments.imports import ParsedJudgment
from judgments.models import FeedbackSlot
from judgments.pool import pool_judgments_import
from metrics.models import RegressionVerdict
from metrics.services import evaluation_metrics_recompute
from notifications.models import Event, Notification
from schedules import services as schedule_services
from schedules.models import Schedule
from searchtweak.models import Team, User
from tests.demo_seed import seeded_demo
from tests.evaluations.factories import EvaluationMetricFactory, fetchable_evaluation
from tests.evaluations.servers import Reply, hits, running_server
from tests.judges.builders import judge_for
from tests.judges.fake_providers import OPENAI, fake_provider, grade_all
from tests.judgments.builders import evaluation_with_slots
from tests.metrics.demo_grading import grade_ungraded_by_demo_relevance
from tests.schedules.ticks import tick

START = datetime(2026, 11, 26, 9, 0, tzinfo=UTC)
METRICS = [{"code": "ndcg", "k": 10, "params": {}}, {"code": "precision", "k": 10, "params": {}}]
KEYWORDS = DEMO_KEYWORDS[:12]



@pytest.mark.django_db(transaction=True)
@pytest.mark.slow_reason("seeds the demo and fetches two schedule runs over HTTP")
def test_a_schedule_run_of_an_unchanged_model_finishes_at_its_fetch_with_its_verdict(
        live_server, settings):
    settings.FETCH_RETRIES = 0
    seeded_demo(demo_url=live_server.url)
    team = Team.objects.get(name="Demo")
    lead = User.objects.get(username="lead")
    model = SearchModel.objects.get(team=team, name=MODEL_NAME)
    query_set = query_set_services.query_set_create(team=team, created_by=lead, name="Top queries",
                                                    keywords=KEYWORDS)
    with time_machine.travel(START, tick=False):
        schedule_services.schedule_create(
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


# --- each other path, on small evaluations --------------------------------------------------


def finished_by_auto(evaluation: Evaluation) -> bool:
    evaluation.refresh_from_db()
    return evaluation.status == Evaluation.Status.FINISHED and evaluation.finished_at is not None


@pytest.mark.django_db(transaction=True)
def test_a_fetch_whose_results_the_pool_grades_finishes_the_evaluation(settings):
    """Judgments imported into the team's pool grade every result a new evaluation
    fetches: its fetch fills each slot as it is stored, and the fetch's end finishes it."""
    settings.FETCH_RETRIES = 0
    texts = ["red shoes", "blue hat"]
    with running_server() as server:
        server.handler = lambda request: Reply(body=hits(request.query["q"][0]))
        evaluation = fetchable_evaluation(url=server.url, keywords=texts, k=3)
        Evaluation.objects.filter(pk=evaluation.pk).update(
            reuse_grades=Evaluation.Reuse.DOCUMENT)
        pool_judgments_import(
            team=evaluation.team, scale="graded", source="qrels.csv", user=None,
            judgments=[ParsedJudgment(line=n, text=text, doc_id=f"{text}-{n % 3 + 1}",
                                      grade=n % 4)
                       for n, text in enumerate(texts * 3)])
        lifecycle.evaluation_start(evaluation=evaluation)
    assert FeedbackSlot.objects.filter(evaluation=evaluation,
                                       reused_from_pool__isnull=False).count() == 6
    assert finished_by_auto(evaluation)


@pytest.mark.django_db(transaction=True)
def test_a_judge_run_that_grades_the_last_slots_finishes_the_evaluation(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=2, positions=3)
    EvaluationMetricFactory(evaluation=evaluation, code="precision", k=3)
    with fake_provider(OPENAI) as provider:
        provider.default = grade_all(lambda doc_id: 1, reason="on topic")
        judge = judge_for(personas.team, provider)
        run = runs.run_start(judge=judge, evaluation=evaluation, mode=JudgeRun.Mode.UNGRADED,
                             started_by=None)
    run.refresh_from_db()
    assert (run.status, run.done_count) == ("done", 6)
    assert finished_by_auto(evaluation)


def complete_but_active(personas, **fields) -> Evaluation:
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=2, **fields)
    FeedbackSlot.objects.filter(evaluation=evaluation).update(grade=2, user=personas.lead)
    return evaluation


@pytest.mark.django_db
def test_turning_auto_finish_on_over_a_complete_evaluation_finishes_it(personas):
    evaluation = complete_but_active(personas, auto_finish=False)
    configuration.evaluation_update(evaluation=evaluation, name="Graded by hand")
    assert not finished_by_auto(evaluation)
    configuration.evaluation_update(evaluation=evaluation, auto_finish=True)
    assert finished_by_auto(evaluation)


@pytest.mark.django_db
def test_starting_a_complete_evaluation_with_nothing_to_fetch_finishes_it(personas):
    evaluation = complete_but_active(personas, status=Evaluation.Status.PENDING,
                                     auto_finish=True)
    Keyword.objects.filter(evaluation=evaluation).update(
        fetch_status=Keyword.FetchStatus.FETCHED)
    EvaluationMetricFactory(evaluation=evaluation, code="precision", k=2)
    evaluation_metrics_recompute(evaluation_id=evaluation.pk)  # its values, while paused
    assert not finished_by_auto(evaluation)
    lifecycle.evaluation_start(evaluation=evaluation)
    assert finished_by_auto(evaluation)


@pytest.mark.django_db
def test_a_recompute_from_scratch_that_brings_the_values_finishes_a_complete_evaluation(
        personas):
    """Graded to the last slot (rows written as an import of old data would), but its
    values were never computed: the rule waits for them, and the recompute finishes it."""
    evaluation = complete_but_active(personas, auto_finish=True)
    EvaluationMetricFactory(evaluation=evaluation, code="precision", k=2)
    assert completion.evaluation_finish_if_complete(evaluation_id=evaluation.pk) is False
    evaluation_metrics_recompute(evaluation_id=evaluation.pk)
    assert finished_by_auto(evaluation)
