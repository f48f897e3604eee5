"""Means over keywords: one exact rule on every path.

The stored mean after grading must be the float `recompute_metrics` stores, bit for bit,
whatever order the database hands the keyword values over in.
"""

import math

import pytest
from django.core.management import call_command

import metrics_engine as core
from evaluations.models import Evaluation, EvaluationMetric, Keyword
from metrics.models import KeywordMetricValue, MetricMean
from metrics.reports import leaderboards
from metrics_engine import statistics
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


# --- the running sums (MetricSums) the means come from ---


def sums_of(evaluation: Evaluation) -> dict[str, tuple]:
    from metrics.models import MetricSums

    return {sums.metric.code: (sums.value_count, sums.value_total)
            for sums in MetricSums.objects.filter(metric__evaluation=evaluation)
            .select_related("metric")}


def test_incremental_grades_keep_the_running_sums_and_means_those_of_a_recompute(grade):
    from tests.metrics.oracles import (
        assert_running_sums_equal_stored_values,
        assert_stored_values_equal_a_full_recompute,
    )

    texts = [f"q{number}" for number in range(6)]
    evaluation = build_evaluation(
        keywords={text: [f"{text}-{rank}" for rank in range(10)] for text in texts},
        metrics=[("precision", 10, {}), ("ndcg", 10, {}), ("rr", 5, {})],
    )
    # Values appear (None -> value), change (value -> value, in another order than they
    # appeared) and go (value -> None: every grade of the keyword taken back).
    plan = [("q0", [2, 0, 1]), ("q3", [0, 0, 3]), ("q1", [1, 1, 1]), ("q0", [0, 0, 0]),
            ("q5", [3, 2, 1]), ("q3", [None, None, None]), ("q2", [2, 2, 0]),
            ("q1", [0, 3, 0]), ("q4", [1, 0, 2])]
    for step, (text, grades) in enumerate(plan):
        grade([(slot(evaluation, text, rank), value)
               for rank, value in enumerate(grades, start=1)])
        assert_running_sums_equal_stored_values(evaluation.pk)
        if step == 0:
            first_sums = sums_of(evaluation)
    # The sums were written by the first refresh and moved by each run after it.
    assert set(first_sums) == {"precision", "ndcg", "rr"}
    assert sums_of(evaluation)["precision"][0] == 5  # q3 went back to null
    assert stored_means(evaluation)["precision"] == core.mean_over_keywords(
        keyword_values(evaluation, "precision"))
    assert_stored_values_equal_a_full_recompute(evaluation.pk)


def test_a_run_moves_the_sums_by_old_to_new_instead_of_reading_every_value(grade):
    """Sums set wrong on purpose stay wrong by exactly as much after a run: it only moved
    them (and the means follow the sums)."""
    from metrics.models import MetricSums
    from metrics_engine.exact_sum import exact_units, total_decode, total_encode

    evaluation = build_evaluation(
        keywords={text: [f"{text}-{rank}" for rank in range(10)] for text in RELEVANT},
        metrics=[("precision", 10, {})],
    )
    grade([(slot(evaluation, text, rank), 2 if rank <= RELEVANT[text] else 0)
           for text in ("k1",) for rank in range(1, 11)])
    sums = MetricSums.objects.get(metric__evaluation=evaluation)
    assert (total_decode(sums.value_total), sums.value_count) == (exact_units(0.3), 1)
    offset = exact_units(0.5)
    MetricSums.objects.filter(pk=sums.pk).update(
        value_total=total_encode(total_decode(sums.value_total) + offset))
    grade([(slot(evaluation, text, rank), 2 if rank <= RELEVANT[text] else 0)
           for text in ("k2",) for rank in range(1, 11)])
    sums.refresh_from_db()
    assert total_decode(sums.value_total) == exact_units(0.3) + exact_units(0.2) + offset
    assert stored_means(evaluation)["precision"] == (math.fsum([0.3, 0.2, 0.5]) / 2, 2)
    # recompute_metrics rebuilds them from the stored values.
    call_command("recompute_metrics", "--evaluation", str(evaluation.pk), "--quiet")
    assert stored_means(evaluation)["precision"] == (math.fsum([0.3, 0.2]) / 2, 2)


def test_deleting_keywords_drops_the_sums_and_the_next_refresh_rebuilds_them(grade):
    from metrics.models import MetricSums
    from metrics.recompute.means import evaluation_means_refresh

    evaluation = build_evaluation(
        keywords={text: [f"{text}-{rank}" for rank in range(10)] for text in RELEVANT},
        metrics=[("precision", 10, {}), ("ndcg", 10, {})],
    )
    for text in RELEVANT:
        grade([(slot(evaluation, text, rank), 2 if rank <= RELEVANT[text] else 0)
               for rank in range(1, 11)])
    assert MetricSums.objects.filter(metric__evaluation=evaluation).count() == 2
    Keyword.objects.filter(evaluation=evaluation, normalized_text="k1").delete()
    assert not MetricSums.objects.filter(metric__evaluation=evaluation).exists()
    evaluation_means_refresh(evaluation_id=evaluation.pk)
    assert stored_means(evaluation)["precision"] == (math.fsum([0.2, 0.1]) / 2, 2)
    assert MetricSums.objects.filter(metric__evaluation=evaluation).count() == 2


def test_a_metric_added_later_gets_its_sums_from_its_values(grade):
    from tests.metrics.oracles import assert_stored_values_equal_a_full_recompute

    evaluation = build_evaluation(
        keywords={text: [f"{text}-{rank}" for rank in range(10)] for text in RELEVANT},
        metrics=[("precision", 10, {})],
    )
    for text in RELEVANT:
        grade([(slot(evaluation, text, rank), 2 if rank <= RELEVANT[text] else 0)
               for rank in range(1, 11)])
    with_ndcg = EvaluationMetric.objects.create(evaluation=evaluation, code="ndcg", k=10,
                                                params={}, position=1)
    grade([(slot(evaluation, "k1", 10), 1)])
    assert sums_of(evaluation)["ndcg"][0] == 3
    assert stored_means(evaluation)["ndcg"] == core.mean_over_keywords(
        keyword_values(evaluation, "ndcg"))
    with_ndcg.delete()
    assert_stored_values_equal_a_full_recompute(evaluation.pk)
