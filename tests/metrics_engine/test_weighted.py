"""Weighted means and traffic segments (docs/METRICS.md, "Weighted means and segments"),
against values worked by hand."""

import math
import re

import pytest

from metrics_engine import MetricInputError, mean_over_keywords
from metrics_engine.weighted import (
    traffic_segments,
    validate_cuts,
    validate_weights,
    weighted_mean,
)


def test_reciprocal_rank_weighted_by_traffic():
    # RR 1/3, 1/2, 1 asked 7, 3 and 1 times: (7/3 + 3/2 + 1) / 11 = (29/6) / 11 = 29/66.
    assert weighted_mean([1 / 3, 1 / 2, 1.0], [7, 3, 1]) == pytest.approx(29 / 66, abs=1e-15)


def test_every_weight_one_is_the_plain_mean_bit_for_bit():
    values = [0.1, 0.2, 0.3, 1e-17, 0.7, None, 2 / 3]
    assert weighted_mean(values, [1] * len(values)) == mean_over_keywords(values)[0]


def test_each_product_is_exact_and_the_sum_rounded_once():
    # 0.1 taken 3 times rounds once: fsum([0.1] * 3) / 3, not (0.1 * 3) / 3.
    assert weighted_mean([0.1], [3]) == math.fsum([0.1, 0.1, 0.1]) / 3


def test_an_integral_float_weight_is_that_integer_as_k_and_grades_read_it():
    assert validate_weights([3.0, 1], 2) == [3, 1]


def test_a_zero_weight_or_a_null_value_leaves_the_keyword_out():
    assert weighted_mean([1.0, 0.0, None], [0, 4, 1000]) == 0.0
    assert weighted_mean([1.0, None], [0, 5]) is None
    assert weighted_mean([float("nan")], [1]) is None


@pytest.mark.parametrize(("weights", "problem"), [
    ([1, -1], "item 1: -1 is not a non-negative integer"),
    ([1.5, 1], "item 0: 1.5 is not a non-negative integer"),
    ([1, "3"], "item 1: '3' is not a non-negative integer"),
    ([True, 1], "item 0: True is not a non-negative integer"),
    ([1], "has 1 weights for 2 keywords"),
    ("11", "must be a list of non-negative integers"),
])
def test_a_weight_that_is_not_a_non_negative_integer_names_weights(weights, problem):
    with pytest.raises(MetricInputError, match=f"^weights: {re.escape(problem)}$"):
        validate_weights(weights, 2)


def test_segments_at_the_cut_point_fall_to_the_next_segment():
    # T = 10. Sorted: 5 (C 0), 3 (C 5), 2 (C 8). At a = 50: 100*5 = 50*10, not below: torso.
    # At b = 80: 100*8 = 80*10, not below: tail.
    assert traffic_segments([5, 3, 2]) == ["head", "torso", "tail"]
    # One unit less before the cut keeps it in the earlier segment (a = 51: 500 < 510).
    assert traffic_segments([5, 3, 2], (51, 81)) == ["head", "head", "torso"]


def test_ties_keep_their_order_and_no_traffic_is_all_tail():
    assert traffic_segments([10, 10, 10, 10], (25, 75)) == ["head", "torso", "torso", "tail"]
    assert traffic_segments([0, 0]) == ["tail", "tail"]


@pytest.mark.parametrize("cuts", [
    [80, 50], [50, 50], [-1, 50], [50, 101], [50.5, 80], [True, 80], [50]])
def test_cuts_must_be_integers_a_below_b_within_0_and_100(cuts):
    with pytest.raises(MetricInputError, match=r"^cuts: "):
        validate_cuts(cuts)
    assert validate_cuts([0, 100]) == (0, 100)
