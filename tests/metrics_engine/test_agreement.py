"""Two graders' agreement against hand-computed values (arithmetic in the comments)."""

import pytest

from metrics_engine import statistics
from metrics_engine.agreement import (
    cohen_kappa,
    confusion_matrix,
    correlation_warning,
    exact_match_rate,
    grade_agreement,
    kendall_tau,
    metric_agreement,
    spearman,
    weighted_kappa,
)
from tests.conftest import import_or_skip

# Six items on the graded-like scale 0..2:
#   first  0 0 1 1 2 2
#   second 0 1 1 1 2 0
FIRST = [0, 0, 1, 1, 2, 2]
SECOND = [0, 1, 1, 1, 2, 0]
GRADES = [0, 1, 2]


def test_confusion_matrix_rows_first_columns_second():
    assert confusion_matrix(FIRST, SECOND, grades=GRADES) == [
        [1, 1, 0],
        [0, 2, 0],
        [1, 0, 1],
    ]


def test_unweighted_kappa_by_hand():
    # p_o = 4/6 (items 1, 3, 4, 5 agree). Marginals: first 2/6 each; second 0: 2/6,
    # 1: 3/6, 2: 1/6. p_e = 1/3 · (2/6 + 3/6 + 1/6) = 1/3. κ = (2/3 - 1/3) / (2/3) = 0.5.
    assert weighted_kappa(FIRST, SECOND, grades=GRADES) == pytest.approx(0.5)
    assert cohen_kappa(FIRST, SECOND) == pytest.approx(0.5)


def test_linear_weighted_kappa_by_hand():
    # k = 3, w_ij = |i - j| / 2. Observed disagreement: (0,1) w 1/2 and (2,0) w 1 over 6
    # items = 1.5/6 = 1/4. Chance: p1 = (1/3, 1/3, 1/3), p2 = (1/3, 1/2, 1/6); the column
    # sums of w are 1.5, 1, 1.5, so Σ w p1 p2 = 1/3 (1/3·1.5 + 1/2·1 + 1/6·1.5) = 5/12.
    # κ_w = 1 - (1/4) / (5/12) = 1 - 3/5 = 0.4.
    assert weighted_kappa(FIRST, SECOND, grades=GRADES, weighting="linear") == pytest.approx(0.4)


def test_quadratic_weighted_kappa_by_hand():
    # w_ij = ((i - j) / 2)². Observed: (1/4 + 1) / 6 = 5/24. Column sums of w: 1.25, 0.5,
    # 1.25, so chance = 1/3 (1/3·1.25 + 1/2·0.5 + 1/6·1.25) = 1/3 · 21/24 = 7/24.
    # κ_q = 1 - (5/24) / (7/24) = 2/7.
    assert weighted_kappa(FIRST, SECOND, grades=GRADES, weighting="quadratic") == (
        pytest.approx(2 / 7))


def test_unused_grades_of_the_scale_change_the_weights_not_the_unweighted_kappa():
    # On 0..3 the distances are /3 instead of /2, so weighted κ moves; unweighted does not.
    wider = [0, 1, 2, 3]
    assert weighted_kappa(FIRST, SECOND, grades=wider) == pytest.approx(0.5)
    # Linear on 0..3: observed (1/3 + 2/3) / 6 = 1/6; column sums of w over the used rows
    # 0..2 (each 1/3): col 0: 0 + 1/3 + 2/3 = 1, col 1: 1/3 + 0 + 1/3 = 2/3, col 2: 1;
    # chance = 1/3 (1/3·1 + 1/2·2/3 + 1/6·1) = 1/3 · 5/6 = 5/18. κ = 1 - (1/6)/(5/18) = 0.4.
    assert weighted_kappa(FIRST, SECOND, grades=wider, weighting="linear") == pytest.approx(0.4)


def test_perfect_agreement_is_one_and_the_opposite_of_a_binary_grader_is_minus_one():
    assert weighted_kappa([0, 1, 2], [0, 1, 2], grades=GRADES, weighting="quadratic") == 1.0
    # p_o = 0, p_e = 1/2 · 1/2 · 2 = 1/2: κ = (0 - 1/2) / (1/2) = -1.
    assert weighted_kappa([0, 1], [1, 0], grades=[0, 1]) == pytest.approx(-1.0)


@pytest.mark.parametrize("weighting", [None, "linear", "quadratic"])
def test_one_category_only_is_undefined_not_nan(weighting):
    assert weighted_kappa([1, 1, 1], [1, 1, 1], grades=GRADES, weighting=weighting) is None
    assert weighted_kappa([], [], grades=GRADES, weighting=weighting) is None
    assert weighted_kappa([1, None], [None, 2], grades=GRADES, weighting=weighting) is None


def test_one_grader_constant_the_other_not_gives_zero_not_an_error():
    # p_o = 1/2, p_e = 1 · 1/2 = 1/2: κ = 0.
    assert weighted_kappa([1, 1], [1, 0], grades=[0, 1]) == pytest.approx(0.0)


def test_a_grade_outside_the_scale_is_an_error_and_lengths_must_match():
    with pytest.raises(ValueError, match="grade 3 is not one of"):
        weighted_kappa([0, 3], [0, 1], grades=GRADES)
    with pytest.raises(ValueError, match="same items"):
        exact_match_rate([0], [0, 1])
    with pytest.raises(ValueError, match="unknown weighting"):
        weighted_kappa(FIRST, SECOND, grades=GRADES, weighting="cubic")


def test_exact_match_rate_over_items_both_graded():
    assert exact_match_rate(FIRST, SECOND) == pytest.approx(4 / 6)
    assert exact_match_rate([1, None, 0], [1, 2, 1]) == 0.5
    assert exact_match_rate([None], [1]) is None


def test_statistics_still_exposes_the_same_cohen_kappa():
    assert statistics.cohen_kappa is cohen_kappa


def test_grade_agreement_bundles_the_figures_skipping_empty_slots():
    figures = grade_agreement([*FIRST, None], [*SECOND, 2], grades=GRADES)
    assert figures.pair_count == 6
    assert figures.exact_match_rate == pytest.approx(4 / 6)
    assert (figures.kappa, figures.linear_kappa, figures.quadratic_kappa) == (
        pytest.approx(0.5), pytest.approx(0.4), pytest.approx(2 / 7))
    assert figures.confusion == [[1, 1, 0], [0, 2, 0], [1, 0, 1]]


def test_spearman_and_kendall_without_ties_by_hand():
    a, b = [1, 2, 3, 4, 5], [2, 1, 4, 3, 5]
    # d = (-1, 1, -1, 1, 0), Σd² = 4: rho = 1 - 6·4 / (5·24) = 0.8.
    assert spearman(a, b) == pytest.approx(0.8)
    # 10 pairs, discordant (1,2) and (3,4): τ = (8 - 2) / 10 = 0.6.
    assert kendall_tau(a, b) == pytest.approx(0.6)


def test_spearman_and_kendall_with_ties_by_hand():
    a, b = [1, 2, 2, 3], [1, 3, 2, 3]
    # Ranks a (1, 2.5, 2.5, 4), b (1, 3.5, 2, 3.5); deviations (-1.5, 0, 0, 1.5) and
    # (-1.5, 1, -0.5, 1): Σ = 2.25 + 1.5 = 3.75, Σa² = Σb² = 4.5, rho = 3.75 / 4.5 = 5/6.
    assert spearman(a, b) == pytest.approx(5 / 6)
    # n0 = 6 pairs: concordant (0,1) (0,2) (0,3) (2,3); (1,2) tied in a; (1,3) tied in b.
    # τ_b = 4 / √((6 - 1)(6 - 1)) = 0.8.
    assert kendall_tau(a, b) == pytest.approx(0.8)


def test_rank_correlations_agree_with_scipy():
    scipy_stats = import_or_skip("scipy.stats", reason="scipy comes with ranx in the dev extra")
    a = [0.1, 0.5, 0.5, 0.9, 0.3, 0.3, 0.7, 1.0]
    b = [0.2, 0.4, 0.6, 0.8, 0.3, 0.1, 0.7, 0.7]
    assert spearman(a, b) == pytest.approx(scipy_stats.spearmanr(a, b).statistic)
    assert kendall_tau(a, b) == pytest.approx(scipy_stats.kendalltau(a, b).statistic)


@pytest.mark.parametrize("a, b", [([], []), ([0.5], [0.7]), ([0.5, 0.5], [0.1, 0.9])])
def test_rank_correlation_of_too_few_or_constant_values_is_none(a, b):
    assert spearman(a, b) is None
    assert kendall_tau(a, b) is None


def test_metric_agreement_over_common_present_keywords():
    humans = {"q1": 0.5, "q2": 1.0, "q3": 0.0, "q4": None, "q5": 0.25}
    judge = {"q1": 0.75, "q2": 0.5, "q3": 0.0, "q4": 1.0, "q6": 1.0, "q5": float("nan")}
    result = metric_agreement(humans, judge)
    # Common present: q1, q2, q3. Deltas 0.25, -0.5, 0: mean -0.25 / 3.
    assert result.keyword_count == 3
    assert result.mean_delta == pytest.approx(-0.25 / 3)
    # humans rank q3 < q1 < q2, judge q3 < q2 < q1: ranks (2, 3, 1) vs (3, 2, 1),
    # d = (-1, 1, 0): rho = 1 - 6·2 / (3·8) = 0.5; pairs: (q1,q2) discordant, the others
    # concordant: τ = (2 - 1) / 3.
    assert result.spearman == pytest.approx(0.5)
    assert result.kendall == pytest.approx(1 / 3)


def test_metric_agreement_without_common_keywords_is_all_none():
    result = metric_agreement({"q1": 0.5}, {"q2": 0.5})
    assert (result.keyword_count, result.mean_delta, result.spearman, result.kendall) == (
        0, None, None, None)


def test_rank_correlations_over_fewer_than_five_keywords_carry_a_warning():
    # 4 keywords: the warning, naming the count; 5: none (the threshold); 0: none, the
    # correlations are null already.
    four = metric_agreement({f"q{i}": i for i in range(4)}, {f"q{i}": i for i in range(4)})
    five = metric_agreement({f"q{i}": i for i in range(5)}, {f"q{i}": i for i in range(5)})
    assert (four.keyword_count, four.spearman, four.kendall) == (4, 1.0, 1.0)
    assert four.correlation_warning.startswith("Over only 4 keywords (fewer than 5)")
    assert (five.keyword_count, five.correlation_warning) == (5, "")
    assert correlation_warning(1).startswith("Over only 1 keyword (")
    assert correlation_warning(0) == ""
