"""The N-way compare's statistics on cases small enough to work out by hand."""

import itertools
import math

import numpy as np
import pytest

from metrics_engine.multi_compare import (
    entered_left,
    jaccard,
    metric_summary,
    reference_tests,
    tukey_randomized,
)
from metrics_engine.statistics import bootstrap_ci, holm_adjust, randomization_test

NAN = math.nan


def test_summary_mean_coverage_and_interval_by_hand():
    summary = metric_summary([0.5, None, 1.0, 0.0, NAN], resamples=500, seed=0)
    # (0.5 + 1 + 0) / 3 over the three present values; 3 of 5 keywords have one.
    assert summary.mean == pytest.approx(0.5)
    assert (summary.present_count, summary.keyword_count) == (3, 5)
    assert summary.coverage == pytest.approx(0.6)
    assert summary.ci == bootstrap_ci([0.5, 1.0, 0.0], resamples=500, seed=0)
    low, high = summary.ci
    assert 0.0 <= low <= 0.5 <= high <= 1.0


def test_summary_of_equal_values_has_a_point_interval():
    summary = metric_summary([0.25, 0.25, 0.25], resamples=200)
    assert summary.mean == pytest.approx(0.25)
    assert summary.ci == pytest.approx((0.25, 0.25))
    assert summary.coverage == 1.0


def test_summary_without_values():
    summary = metric_summary([None, None])
    assert (summary.mean, summary.ci, summary.coverage) == (None, None, 0.0)
    assert metric_summary([]).coverage is None


def test_reference_tests_are_paired_randomization_p_holm_adjusted():
    # Columns: reference, +0.5 on every keyword, unchanged, mixed (one keyword missing).
    matrix = np.array([
        [0.0, 0.5, 0.0, 0.2],
        [0.5, 1.0, 0.5, NAN],
        [1.0, 1.5, 1.0, 0.8],
        [0.2, 0.7, 0.2, 0.3],
    ])
    tests = reference_tests(matrix, reference=0, resamples=400, seed=3)
    assert [t.index for t in tests] == [1, 2, 3]
    assert [t.keyword_count for t in tests] == [4, 4, 3]
    assert tests[0].mean_delta == pytest.approx(0.5)
    assert tests[1].mean_delta == pytest.approx(0.0)
    # (0.2 - 0) + (0.8 - 1) + (0.3 - 0.2) over 3 keywords.
    assert tests[2].mean_delta == pytest.approx(0.1 / 3)
    raw = [
        randomization_test(np.array([0.5, 0.5, 0.5, 0.5]), resamples=400, seed=3),
        randomization_test(np.zeros(4), resamples=400, seed=3),
        randomization_test(np.array([0.2, -0.2, 0.1]), resamples=400, seed=3),
    ]
    assert [t.p for t in tests] == raw
    # Every zero delta is as extreme as the observed zero: p = 1 exactly.
    assert raw[1] == 1.0
    assert [t.p_adjusted for t in tests] == holm_adjust(raw)
    # Holm by hand: the smallest p times 3, the next times 2 (not below the first), then 1.
    smallest, middle, _largest = sorted(raw)
    assert min(t.p_adjusted for t in tests) == pytest.approx(min(1.0, 3 * smallest))
    assert sorted(t.p_adjusted for t in tests)[1] == pytest.approx(
        max(min(1.0, 3 * smallest), min(1.0, 2 * middle)))


def test_reference_tests_without_shared_values():
    matrix = np.array([[0.1, NAN], [NAN, 0.4]])
    (test,) = reference_tests(matrix, reference=0)
    assert (test.keyword_count, test.mean_delta, test.p, test.p_adjusted) == (0, None, None,
                                                                              None)


def test_tukey_two_keywords_two_systems():
    # Observed |mean diff| = 1. Swapping the labels of each keyword: both kept or both
    # swapped (probability 1/2) leaves a range of 1; one swapped gives means 0.5 and 0.5,
    # range 0. So p -> 1/2.
    count, (pair,) = tukey_randomized(np.array([[0.0, 1.0], [0.0, 1.0]]), resamples=4000,
                                      seed=1)
    assert count == 2
    assert (pair.i, pair.j, pair.mean_delta) == (0, 1, 1.0)
    assert pair.p == pytest.approx(0.5, abs=0.03)


def test_tukey_three_keywords_uses_the_range_over_all_pairs():
    # Three equal keywords [0, 1, 0.5] (columns A, B, C). Observed: A-B 1, A-C 0.5, B-C 0.5.
    # A range of 1 needs one column to get 1 and another 0 on every keyword: the three
    # keywords share one label order, 6 of the 6^3 = 216 arrangements, so p(A-B) -> 1/36.
    rows = np.array([[0.0, 1.0, 0.5]] * 3)
    _, pairs = tukey_randomized(rows, resamples=20_000, seed=2)
    by_pair = {(p.i, p.j): p for p in pairs}
    # The exact distribution of the range, enumerated over the 216 arrangements.

    orders = list(itertools.permutations(range(3)))
    ranges = []
    for combo in itertools.product(orders, repeat=3):
        means = np.mean([[rows[k][order[c]] for c in range(3)] for k, order in enumerate(combo)],
                        axis=0)
        ranges.append(means.max() - means.min())
    ranges = np.array(ranges)
    exact_ab = float((ranges >= 1.0 - 1e-12).mean())
    exact_half = float((ranges >= 0.5 - 1e-12).mean())
    assert exact_ab == pytest.approx(6 / 216)
    assert by_pair[(0, 1)].p == pytest.approx(exact_ab, abs=0.01)
    assert by_pair[(0, 2)].p == pytest.approx(exact_half, abs=0.02)
    assert by_pair[(1, 2)].mean_delta == pytest.approx(-0.5)


def test_tukey_leaves_out_incomplete_keywords_and_is_seeded():
    matrix = np.array([[0.0, 1.0, 0.5], [0.2, NAN, 0.1], [0.3, 0.6, 0.9]])
    count, pairs = tukey_randomized(matrix, resamples=300, seed=5)
    assert count == 2
    assert len(pairs) == 3
    assert pairs == tukey_randomized(matrix, resamples=300, seed=5)[1]
    assert tukey_randomized(np.array([[0.1, 0.2]]), resamples=10)[1][0].p == 1.0
    assert tukey_randomized(np.array([[NAN, 0.2]]), resamples=10) == (0, [])


def test_jaccard_of_top_k():
    assert jaccard(["a", "b", "c"], ["b", "c", "d"], k=3) == pytest.approx(2 / 4)
    assert jaccard(["a", "b", "c"], ["b", "c", "d"], k=2) == pytest.approx(1 / 3)
    assert jaccard([], [], k=5) == 1.0
    assert jaccard(["a"], [], k=5) == 0.0


def test_entered_and_left():
    assert entered_left(["a", "b", "c"], ["b", "d", "a"], k=3) == (["d"], ["c"])
    # Only the top k counts: "c" at position 3 of the other list is outside k = 2.
    assert entered_left(["a", "b"], ["a", "x", "b"], k=2) == (["x"], ["b"])
