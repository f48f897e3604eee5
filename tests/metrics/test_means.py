"""Means over keywords: one exact rule on every path (issue 17, defect 9).

The stored mean after grading must be the float `recompute_metrics` stores, bit for bit,
whatever order the database hands the keyword values over in.
"""

import math

import pytest
from django.core.management import call_command

from evaluations.models import Evaluation, EvaluationMetric, Keyword
from metrics import core, leaderboards
from metrics.core import statistics
from metrics.models import KeywordMetricValue, MetricMean
from tests.metrics.builders import build_evaluation, set_grades, slot
from tests.searchtweak.factories import UserFactory

pytestmark = pytest.mark.django_db

# P@10 of keywords "k1", "k2", "k3" once graded: 3, 2 and 1 relevant documents of 10.
RELEVANT = {"k1": 3, "k2": 2, "k3": 1}


@pytest.fixture
def grade(django_capture_on_commit_callbacks):
    graders = [UserFactory(username="g0")]

    def grade(changes):
        with django_capture_on_commit_callbacks(execute=True):
            set_grades(graders, changes)

    return grade


def stored_means(evaluation: Evaluation) -> dict[str, tuple[float | None, int]]:
    return {c.code: (c.value, c.keyword_count)
            for c in EvaluationMetric.objects.with_stored_mean().filter(evaluation=evaluation)}


def keyword_values(evaluation: Evaluation, code: str) -> list[float | None]:
    """The stored keyword values of one metric, in keyword-id order."""
    return list(KeywordMetricValue.objects.filter(
        metric__evaluation=evaluation, metric__code=code).order_by("keyword_id")
        .values_list("value", flat=True))


def test_stored_means_equal_a_full_recompute_bit_for_bit(grade):
    evaluation = build_evaluation(
        keywords={text: [f"{text}-{rank}" for rank in range(10)] for text in RELEVANT},
        metrics=[("precision", 10, {}), ("ndcg", 10, {})],
    )
    # Graded last keyword first: the incremental path writes the values in the order
    # k3, k2, k1, a recompute from scratch in keyword order k1, k2, k3.
    for text in reversed(RELEVANT):
        grade([(slot(evaluation, text, rank), 2 if rank <= RELEVANT[text] else 0)
               for rank in range(1, 11)])
    precision = keyword_values(evaluation, "precision")
    assert precision == [0.3, 0.2, 0.1]
    # The values make a running sum's last bit depend on the order: SQL's AVG (the old
    # rule) summed the rows as stored, and stored 0.20000000000000004 after grading and
    # 0.19999999999999998 after a recompute from scratch.
    in_grading_order, in_keyword_order = precision[::-1], precision
    assert sum(in_grading_order) / 3 != sum(in_keyword_order) / 3
    incremental = stored_means(evaluation)
    assert incremental["precision"] == (math.fsum(precision) / 3, 3)
    assert incremental["ndcg"] == core.mean_over_keywords(keyword_values(evaluation, "ndcg"))

    KeywordMetricValue.objects.filter(metric__evaluation=evaluation).delete()
    MetricMean.objects.filter(metric__evaluation=evaluation).update(value=None, keyword_count=0)
    call_command("recompute_metrics", "--evaluation", str(evaluation.pk), "--quiet")
    assert keyword_values(evaluation, "precision") == precision
    assert stored_means(evaluation) == incremental  # ==, not approx


def test_comparisons_and_leaderboards_average_with_the_same_rule(grade, personas):
    evaluation = build_evaluation(
        team=personas.team,
        keywords={text: [f"{text}-{rank}" for rank in range(10)] for text in RELEVANT},
        metrics=[("precision", 10, {})],
    )
    for text in reversed(RELEVANT):
        grade([(slot(evaluation, text, rank), 2 if rank <= RELEVANT[text] else 0)
               for rank in range(1, 11)])
    Evaluation.objects.filter(pk=evaluation.pk).update(status=Evaluation.Status.FINISHED)
    stored = EvaluationMetric.objects.with_stored_mean().get(evaluation=evaluation).value
    by_text = dict(KeywordMetricValue.objects.filter(metric__evaluation=evaluation)
                   .values_list("keyword__normalized_text", "value"))
    # In one of these orders a running sum comes out differently from the other.
    for order in (["k1", "k2", "k3"], ["k3", "k2", "k1"]):
        values = {text: by_text[text] for text in order}
        assert statistics.paired_comparison(values, values, resamples=10).mean_a == stored
    board = leaderboards.model_leaderboard(team=personas.team)
    assert [standing.value for standing in board.standings] == [stored]
    assert Keyword.objects.filter(evaluation=evaluation).count() == 3
