"""A judge's calibration against the people, every figure computed by hand below.

The graded example (tests/judges/calibration_data.graded_example) gives six judge x person
pairs (person, judge):

    alpha 1: (3, 3) and (2, 3)   alpha 2: (1, 1)   alpha 3: (0, 1)
    beta 1:  (2, 2)              beta 2:  (0, 0)   (beta 3: judge only, no pair)

Exact matches: (3,3) (1,1) (2,2) (0,0) = 4 of 6 = 2/3.
Confusion (rows: person 0..3, columns: judge 0..3):
    0: [1, 1, 0, 0]   1: [0, 1, 0, 0]   2: [0, 0, 1, 1]   3: [0, 0, 0, 1]
Row sums r = [2, 1, 2, 1], column sums c = [1, 2, 1, 2], n = 6.
Unweighted κ: p_o = 4/6; p_e = Σ r_i c_i / n² = (2 + 2 + 2 + 2) / 36 = 8/36;
    κ = (24/36 - 8/36) / (28/36) = 16/28 = 4/7.
Quadratic κ: w_ij = ((i - j) / 3)². Observed: the two misses are one step off,
    Σ w o = 2 x (1/9) / 6 = 12/324. Chance: Σ (i - j)² r_i c_j = 48 + 10 + 16 + 18 = 92,
    Σ w e = 92 / (9 x 36) = 92/324. κ_w = 1 - 12/92 = 20/23.

Metrics (docs/METRICS.md), people's slots aggregated per result by the mean (graded) or a
majority after graded->binary (0->0, 1..3->1):
    CG@3  alpha: people 2.5 + 1 + 0 = 3.5, judge 3 + 1 + 1 = 5   (Δ 1.5)
          beta:  people 2 + 0 (+ null) = 2, judge 2 + 0 + 2 = 4  (Δ 2)
          means 2.75 and 4.5, mean Δ 1.75; both rank alpha above beta: Spearman = Kendall = 1.
    P@3   alpha: people [1, 1, 0] = 2/3, judge [1, 1, 1] = 1   (Δ 1/3)
          beta:  people [1, 0, null] = 1/2, judge [1, 0, 1] = 2/3 (Δ 1/6)
          means 7/12 and 5/6, mean Δ 1/4; Spearman = Kendall = 1.
"""

import pytest

import metrics_engine as core
from judges.calibration import calibration_evaluations, grade_pairs, judge_calibration
from judges.models import JudgeRun
from tests.judges.calibration_data import (
    give,
    graded_example,
    half_kappa_example,
    make_judge,
    run_with_answers,
)
from tests.metrics.builders import build_evaluation

pytestmark = pytest.mark.django_db


@pytest.fixture
def example(personas):
    return graded_example(personas.team, personas.lead, personas.grader)


def test_it_pairs_the_judge_with_each_person_and_counts_by_hand(example):
    result = judge_calibration(judge=example.judge, evaluation=example.evaluation)
    assert result.judge_snapshot_count == 6
    assert result.snapshot_count == 5
    assert result.pair_count == 6
    assert result.exact_match_rate == pytest.approx(2 / 3)
    assert result.confusion == [[1, 1, 0, 0], [0, 1, 0, 0], [0, 0, 1, 1], [0, 0, 0, 1]]
    assert result.grades == [0, 1, 2, 3]


def test_graded_scale_gets_quadratic_kappa_and_the_unweighted_one_beside(example):
    result = judge_calibration(judge=example.judge, evaluation=example.evaluation)
    assert result.kappa_weighting == "quadratic"
    assert result.kappa == pytest.approx(20 / 23)
    assert result.unweighted_kappa == pytest.approx(4 / 7)


def test_metric_deltas_and_rank_correlations_match_the_hand_computation(example):
    cg, precision = judge_calibration(judge=example.judge, evaluation=example.evaluation).metrics
    assert (cg.label, cg.keyword_count) == ("CG@3", 2)
    assert (cg.human_mean, cg.judge_mean) == (pytest.approx(2.75), pytest.approx(4.5))
    assert cg.mean_delta == pytest.approx(1.75)
    assert (cg.spearman, cg.kendall) == (pytest.approx(1.0), pytest.approx(1.0))
    assert precision.label == "P@3"
    assert precision.human_mean == pytest.approx(7 / 12)
    assert precision.judge_mean == pytest.approx(5 / 6)
    assert precision.mean_delta == pytest.approx(1 / 4)
    assert precision.error == ""


def test_binary_scale_gets_unweighted_kappa(personas):
    # κ = 1/2 by hand: tests.judges.calibration_data.half_kappa_example.
    judge, evaluation = half_kappa_example(personas.team, personas.grader)
    result = judge_calibration(judge=judge, evaluation=evaluation)
    assert (result.kappa_weighting, result.kappa) == ("none", pytest.approx(0.5))
    assert result.exact_match_rate == pytest.approx(0.75)
    assert result.confusion == [[2, 0], [1, 1]]
    assert result.metrics == []


def test_nothing_to_measure_gives_none_not_an_error(personas):
    evaluation = build_evaluation(team=personas.team, keywords={"q": ["a"]},
                                  metrics=[("ndcg", 3, {})])
    result = judge_calibration(judge=make_judge(personas.team), evaluation=evaluation)
    assert (result.pair_count, result.kappa, result.exact_match_rate) == (0, None, None)
    assert result.metrics[0].keyword_count == 0 and result.metrics[0].mean_delta is None


def test_grades_outside_the_scale_take_no_part():
    scale = core.SCALES["binary"]
    assert grade_pairs({1: 1, 2: 5, 3: 0}, {1: [1, 7], 2: [1], 3: [0]}, scale=scale) == (
        [1, 0], [1, 0])


def test_the_chooser_lists_evaluations_with_a_finished_run_newest_first(example, personas):
    later = build_evaluation(team=personas.team, keywords={"q": ["a"]}, metrics=[])
    running = build_evaluation(team=personas.team, keywords={"q": ["a"]}, metrics=[])
    run_with_answers(example.judge, later, {("q", 1): 1})
    run_with_answers(example.judge, running, {("q", 1): 1}, status=JudgeRun.Status.RUNNING)
    assert list(calibration_evaluations(judge=example.judge)) == [later, example.evaluation]


def test_calibration_reads_a_fixed_number_of_queries_whatever_the_keywords(
        example, personas, django_assert_num_queries):
    # The judge's slots, its runs' answers, the people's slots, the metric configs, the
    # snapshots and the team's transformers: none per keyword (no pool metric here).
    with django_assert_num_queries(6):
        judge_calibration(judge=example.judge, evaluation=example.evaluation)


def test_a_pool_metric_shares_the_teams_pool_between_both_sides(personas):
    # Recall@3 (binary). Results of "q": a, b. People: a=1, b=0; the judge: a=1, b=1.
    # Another evaluation of the team judged c=1 for "q": in both sides' pool.
    # People: 1 relevant found of a, c relevant in the pool = 1/2.
    # Judge: 2 found (a, b) of a, b, c = 2/3. Δ = 2/3 - 1/2 = 1/6.
    evaluation = build_evaluation(team=personas.team, scale="binary",
                                  keywords={"q": ["a", "b"]}, metrics=[("recall", 3, {})])
    earlier = build_evaluation(team=personas.team, scale="binary", keywords={"Q": ["c"]},
                               metrics=[])
    give(earlier, "q", 1, 0, personas.lead, 1)
    give(evaluation, "q", 1, 0, personas.grader, 1)
    give(evaluation, "q", 2, 0, personas.grader, 0)
    judge = make_judge(personas.team)
    run_with_answers(judge, evaluation, {("q", 1): 1, ("q", 2): 1})
    (recall,) = judge_calibration(judge=judge, evaluation=evaluation).metrics
    assert (recall.human_mean, recall.judge_mean) == (pytest.approx(1 / 2), pytest.approx(2 / 3))
    assert recall.mean_delta == pytest.approx(1 / 6) and recall.keyword_count == 1
