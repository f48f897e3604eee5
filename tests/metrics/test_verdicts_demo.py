"""A regression scenario on the demo: the demo engine's deliberately worse ranking
(ranking=cheap-first) is *regressed* against a BM25 baseline with p < 0.05, the same model
again is *no change*, and a run with half its keywords graded is *regressed* by its bounds
although its coverage is below the rule's.

The demo's own notion of relevance (evaluations.demo.relevance) grades every result, so
the values are the engine's truth, not a grader's habits; the verdicts come from the
listener on `finished`, as in production."""

import pytest
from django.core.management import call_command

from evaluations import demo
from evaluations.events import By
from evaluations.management.commands.seed_demo import DEMO_KEYWORDS, MODEL_NAME, fetch_now
from evaluations.models import DemoProduct, Evaluation, SearchModel
from evaluations.services import configuration, lifecycle
from judgments.models import FeedbackSlot
from metrics.management.commands.seed_demo_history import Command as DemoHistory
from metrics.models import RegressionVerdict
from metrics.services import evaluation_metrics_recompute, team_baseline_set
from searchtweak.models import Team, User

pytestmark = pytest.mark.django_db

KEYWORD_COUNT = len(DEMO_KEYWORDS)
METRICS = [{"code": "ndcg", "k": 10, "params": {}}, {"code": "precision", "k": 10, "params": {}}]


def graded_run(team, lead, model, name, capture, *,
               graded_keywords=KEYWORD_COUNT) -> RegressionVerdict | None:
    """An evaluation of the demo keywords against `model`, fetched in-process, its first
    `graded_keywords` keywords graded by the demo's relevance rule, values computed, then
    finished: by the auto-finish rule when every slot is graded, by the lead otherwise.
    Its verdict, if one was stored."""
    evaluation = configuration.evaluation_create(
        team=team, created_by=lead, model=model, name=name, scale="graded", strategy=1,
        keywords=DEMO_KEYWORDS, metrics=METRICS)
    fetch_now(evaluation)
    slots = list(FeedbackSlot.objects.filter(
        evaluation=evaluation, keyword__position__lte=graded_keywords,
    ).values_list("pk", "keyword__text", "snapshot__doc_id"))
    products = DemoProduct.objects.in_bulk([doc for *_, doc in slots], field_name="sku")
    by_grade: dict[int, list[int]] = {}
    for pk, text, doc in slots:
        by_grade.setdefault(demo.relevance(text, products[doc]), []).append(pk)
    grader = User.objects.get(username="grader1")
    for grade, pks in by_grade.items():
        FeedbackSlot.objects.filter(pk__in=pks).update(grade=grade, user=grader)
    # The recompute finishes a fully graded evaluation (auto finish); the event's listener
    # runs after commit.
    with capture(execute=True):
        evaluation_metrics_recompute(evaluation_id=evaluation.pk)
    with capture(execute=True):
        lifecycle.evaluation_finish(evaluation=evaluation, by=By.USER, user=lead)
    evaluation.refresh_from_db()
    assert evaluation.status == Evaluation.Status.FINISHED
    return RegressionVerdict.objects.filter(evaluation=evaluation).first()


@pytest.mark.timeout(600)
@pytest.mark.slow_reason("seeds the demo and fetches and grades three evaluations")
def test_the_worse_demo_model_regresses_the_same_model_does_not(
        django_capture_on_commit_callbacks):
    call_command("seed_demo", verbosity=0)
    team = Team.objects.get(name="Demo")
    lead = User.objects.get(username="lead")
    bm25 = SearchModel.objects.get(team=team, name=MODEL_NAME)
    cheap = DemoHistory()._cheap_model(team, bm25)

    capture = django_capture_on_commit_callbacks
    assert graded_run(team, lead, bm25, "Baseline", capture) is None  # no baseline yet
    team_baseline_set(team=team, evaluation=Evaluation.objects.get(name="Baseline"), user=lead)

    worse = graded_run(team, lead, cheap, "Cheap-first", capture)
    assert worse.verdict == RegressionVerdict.Verdict.REGRESSED
    ndcg = worse.metrics[0]
    assert ndcg["label"] == "nDCG@10" and ndcg["verdict"] == "regressed"
    assert ndcg["p_adjusted"] < 0.05 and ndcg["mean_delta"] < 0
    assert ndcg["ci_high"] < 0
    assert ndcg["shared_count"] == ndcg["run_keyword_count"] == len(DEMO_KEYWORDS)
    assert worse.reasons[1].startswith("nDCG@10 fell ")
    assert f"over {len(DEMO_KEYWORDS)} of {len(DEMO_KEYWORDS)} keywords; worst: '" in (
        worse.reasons[1])

    same = graded_run(team, lead, bm25, "BM25 again", capture)
    assert same.verdict == RegressionVerdict.Verdict.NO_CHANGE
    assert "The rankings are identical (RBO 1) on every shared keyword." in same.reasons

    half = graded_run(team, lead, cheap, "Half graded", capture,
                      graded_keywords=len(DEMO_KEYWORDS) // 2)
    # 50 % coverage is below the rule's 90 %, but the bounds prove it worse: regressed.
    assert half.verdict == RegressionVerdict.Verdict.REGRESSED, half.reasons
    assert half.metrics[0]["coverage"] == 0.5
    assert half.metrics[0]["decided_by"] == "bounds", half.reasons
    assert "worse whatever the ungraded results turn out to be, decided by the bounds" in (
        half.reasons[1])
