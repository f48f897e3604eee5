"""Dashboard statistics against hand-computed values and scipy."""

import math

import numpy as np
import pytest

from metrics_engine.errors import MetricInputError
from metrics_engine.statistics import (
    binary_tie_rate,
    bootstrap_ci,
    cohen_kappa,
    coverage,
    fleiss_kappa,
    holm_adjust,
    paired_comparison,
    paired_t_test,
    randomization_test,
    weighted_bootstrap_ci,
    weighted_randomization_test,
)
from tests.conftest import import_or_skip


@pytest.fixture(scope="module")
def scipy_stats():
    # Imported by the two tests that use it, not when the module is collected (~2 s of
    # CPU in every test process).
    return import_or_skip("scipy.stats", reason="scipy comes with ranx in the dev extra")


def test_coverage_counts_graded_slots_over_all_slots():
    assert coverage([[1, None, 0], [None, None, None]]) == 2 / 6
    assert coverage([]) is None


def test_tie_rate_counts_graded_snapshots_with_an_even_vote():
    assert binary_tie_rate([[1, 0, None], [1, 1, 0], [None, None, None], [0, 1]]) == 2 / 3
    assert binary_tie_rate([[None]]) is None


def test_fleiss_kappa_of_the_wikipedia_worked_example():
    # Fleiss' kappa article, 10 subjects x 14 raters x 5 categories: κ ≈ 0.210.
    table = [
        [0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
        [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7],
    ]
    snapshots = [[cat for cat, n in enumerate(row) for _ in range(n)] for row in table]
    assert fleiss_kappa(snapshots) == pytest.approx(0.20993, abs=1e-5)


def test_fleiss_kappa_uses_only_fully_graded_snapshots():
    assert fleiss_kappa([[1, 1, 1], [0, 0, 0], [1, None, 0]]) == 1.0
    assert fleiss_kappa([[1, 1], [1, 1]]) is None


def test_cohen_kappa_by_hand():
    # 50 items: agree yes 20, agree no 15, a-yes/b-no 5, a-no/b-yes 10.
    first = [1] * 20 + [0] * 15 + [1] * 5 + [0] * 10
    second = [1] * 20 + [0] * 15 + [0] * 5 + [1] * 10
    observed, expected = 35 / 50, (25 / 50) * (30 / 50) + (25 / 50) * (20 / 50)
    assert cohen_kappa(first, second) == pytest.approx((observed - expected) / (1 - expected))
    assert cohen_kappa([1, None], [None, 0]) is None


def test_paired_comparison_counts_and_tests(scipy_stats):
    a = {"q1": 0.5, "q2": 0.25, "q3": 1.0, "q4": None, "q5": 0.0, "q6": 0.75}
    b = {"q1": 0.75, "q2": 0.25, "q3": 0.5, "q4": 1.0, "q5": 0.5, "q7": 1.0, "q6": 1.0}
    result = paired_comparison(a, b, resamples=2000, seed=3)
    deltas = np.array([0.25, 0.0, -0.5, 0.5, 0.25])
    assert (result.keyword_count, result.wins, result.losses, result.ties) == (5, 3, 1, 1)
    assert result.mean_delta == pytest.approx(deltas.mean())
    assert result.t_test_p == pytest.approx(scipy_stats.ttest_rel([0.75, 0.25, 0.5, 0.5, 1.0],
                                                                  [0.5, 0.25, 1.0, 0.0, 0.75])
                                            .pvalue, abs=1e-12)
    assert 0 < result.randomization_p <= 1
    assert result == paired_comparison(a, b, resamples=2000, seed=3)


def test_t_test_matches_scipy_on_random_samples(scipy_stats):
    rng = np.random.default_rng(5)
    for size in (2, 3, 10, 200):
        deltas = rng.normal(0.2, 1.0, size)
        assert paired_t_test(deltas) == pytest.approx(
            scipy_stats.ttest_1samp(deltas, 0.0).pvalue, rel=1e-9
        )


def test_randomization_test_equals_the_exact_test_on_a_small_sample():
    deltas = np.array([0.3, 0.1, 0.4, -0.1, 0.2])
    # All 32 sign patterns: those whose |mean| reaches the observed one.
    signs = np.array([[1 if bit & (1 << i) else -1 for i in range(5)] for bit in range(32)])
    exact = np.mean(np.abs(signs @ deltas) >= abs(deltas.sum()) - 1e-12)
    estimate = randomization_test(deltas, resamples=40_000, seed=1)
    assert estimate == pytest.approx(exact, abs=0.01)


@pytest.mark.parametrize("sign", [1, -1])
def test_deltas_all_of_one_sign_give_exactly_one_over_resamples_plus_one(sign):
    # Forty deltas of one sign: only the all-plus and all-minus flips (2 of 2^40) reach the
    # observed |mean|, and R draws meet one with chance R · 2^-39 (about 2e-8 for 10,000).
    # None is drawn, so p counts the observed arrangement alone: 1 / (R + 1), never 0.
    deltas = sign * np.linspace(0.01, 0.4, 40)
    assert randomization_test(deltas, resamples=10_000, seed=0) == 1 / 10_001
    assert randomization_test(deltas, resamples=999, seed=7) == 1 / 1000


def test_bootstrap_ci_brackets_the_mean_and_is_reproducible():
    values = [0.1, 0.4, None, 0.35, 0.8, 0.2, math.nan, 0.6]
    low, high = bootstrap_ci(values, resamples=5000, seed=11)
    assert low < np.mean([0.1, 0.4, 0.35, 0.8, 0.2, 0.6]) < high
    assert low >= 0.1 and high <= 0.8
    assert bootstrap_ci(values, resamples=5000, seed=11) == (low, high)
    assert bootstrap_ci([None]) is None
    assert bootstrap_ci([0.5, 0.5]) == (0.5, 0.5)


def test_holm_adjust_by_hand():
    # Sorted: 0.01 * 3 = 0.03, 0.02 * 2 = 0.04, 0.04 * 1 = 0.04; back in the given order.
    assert holm_adjust([0.04, 0.01, 0.02]) == pytest.approx([0.04, 0.03, 0.04])


def test_holm_adjust_keeps_the_order_and_caps_at_one():
    # 0.01 * 3 = 0.03, 0.035 * 2 = 0.07, then 0.04 * 1 = 0.04 is raised to 0.07 (monotone).
    assert holm_adjust([0.01, 0.04, 0.035]) == pytest.approx([0.03, 0.07, 0.07])
    assert holm_adjust([0.6, 0.7]) == pytest.approx([1.0, 1.0])


def test_holm_adjust_leaves_missing_tests_out():
    assert holm_adjust([None, 0.02, None, 0.04]) == pytest.approx([None, 0.04, None, 0.04])
    assert holm_adjust([]) == []


# --- weighted by traffic -----------------------------------------------------------------


@pytest.mark.parametrize("size", [1, 2, 5, 13, 40, 300])
@pytest.mark.parametrize("seed", [0, 1, 7])
def test_every_weight_one_draws_and_answers_as_the_unweighted_tests_to_the_bit(size, seed):
    deltas = np.random.default_rng(size).normal(-0.02, 0.2, size)
    ones = [1] * size
    assert weighted_randomization_test(deltas, ones, resamples=2000, seed=seed) == (
        randomization_test(deltas, resamples=2000, seed=seed))
    assert weighted_bootstrap_ci(list(deltas), ones, resamples=2000, seed=seed) == (
        bootstrap_ci(list(deltas), resamples=2000, seed=seed))


def test_the_weighted_randomization_test_against_every_sign_flip_by_hand():
    # d = (0.4, -0.1, 0.2, -0.3), w = (1, 3, 2, 1): w·d = (0.4, -0.3, 0.4, -0.3), observed
    # |Σ w·d| = 0.2 (the weighted mean 0.2 / 7). Of the 16 flips, the two 0.4s give ±0.8 or
    # 0 (twice), the two 0.3s ±0.6 or 0 (twice): with ±0.8 all 4 sums reach 0.2 (1.4, 0.8,
    # 0.8, 0.2), with 0 only ±0.6 does (2 of 4): (4 + 4 + 2 · 2) / 16 = 12/16 = 0.75.
    # Unweighted, |Σ d| = 0.2 is reached by 14 of 16 flips (all but ±(0.4 + 0.1 - 0.2 - 0.3)):
    # 0.875, so the weights must be used.
    deltas, weights = np.array([0.4, -0.1, 0.2, -0.3]), [1, 3, 2, 1]
    estimate = weighted_randomization_test(deltas, weights, resamples=40_000, seed=1)
    # 40,000 draws estimate 0.75 with a standard error of 0.0022.
    assert estimate == pytest.approx(12 / 16, abs=0.01)
    assert randomization_test(deltas, resamples=40_000, seed=1) == pytest.approx(14 / 16,
                                                                                abs=0.01)


def test_a_weight_of_zero_leaves_its_keyword_out_of_the_flips():
    # (0.4, -0.1, 0.2, -0.3) with the last weight 0: the flips of the first three alone,
    # the same draws as three keywords of weights (1, 3, 2).
    deltas = np.array([0.4, -0.1, 0.2, -0.3])
    assert weighted_randomization_test(deltas, [1, 3, 2, 0], resamples=5000, seed=4) == (
        weighted_randomization_test(deltas[:3], [1, 3, 2], resamples=5000, seed=4))
    assert weighted_randomization_test(deltas, [0, 0, 0, 0]) is None
    assert weighted_bootstrap_ci([0.5, None], [0, 3]) is None


@pytest.mark.parametrize("sign", [1, -1])
def test_weighted_deltas_all_of_one_sign_give_exactly_one_over_resamples_plus_one(sign):
    # As unweighted: only the all-plus and all-minus flips of 2^40 reach the observed
    # weighted mean, and none is drawn; the observed arrangement alone counts.
    deltas = sign * np.linspace(0.01, 0.4, 40)
    weights = [1 + n % 7 for n in range(40)]
    assert weighted_randomization_test(deltas, weights, resamples=10_000, seed=0) == 1 / 10_001
    assert weighted_randomization_test(deltas, weights, resamples=999, seed=7) == 1 / 1000


def test_the_weighted_bootstrap_resamples_keywords_with_their_weights():
    # Values (0, 1) with weights (1, 3): two draws are (0, 0) → 0 with chance 1/4, (1, 1) → 1
    # with 1/4, one of each → (0·1 + 1·3) / (1 + 3) = 3/4 with 1/2. The 30 % and 70 % points
    # both lie on the atom 3/4 (the unweighted mean of one of each would be 1/2); the 2.5 %
    # and 97.5 % points on 0 and 1. The null and the weight-0 keyword take no part.
    values, weights = [0.0, 1.0, None, 5.0], [1, 3, 2, 0]
    assert weighted_bootstrap_ci(values, weights, confidence=0.4, seed=3) == (0.75, 0.75)
    assert weighted_bootstrap_ci(values, weights, seed=3) == (0.0, 1.0)
    assert bootstrap_ci([0.0, 1.0], confidence=0.4, seed=3) == (0.5, 0.5)


def test_weights_that_are_not_non_negative_integers_name_weights():
    with pytest.raises(MetricInputError, match="weights"):
        weighted_randomization_test(np.array([0.1, 0.2]), [1, -1])
    with pytest.raises(MetricInputError, match="weights"):
        weighted_bootstrap_ci([0.1, 0.2], [1])
