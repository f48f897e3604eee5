"""Exact running sums (metrics_engine.exact_sum): a sum moved value by value, in any order,
gives the mean core.mean_over_keywords gives over the values left, bit for bit."""

import math

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given, settings

from metrics_engine.batch import mean_over_keywords
from metrics_engine.exact_sum import (
    exact_total,
    exact_units,
    mean_from_total,
    sum_to_float,
    total_decode,
    total_encode,
)
from tests.property_depth import examples

# Metric-like values and the extremes: subnormals, huge magnitudes, both signs.
values = st.one_of(
    st.floats(min_value=0.0, max_value=1.0),
    st.floats(allow_nan=False, allow_infinity=False, min_value=-1e300, max_value=1e300),
    st.sampled_from([5e-324, -5e-324, 2.2250738585072014e-308, 1e-310, 0.1, 0.2, 0.3]),
)
# A keyword's stored value moving: None -> value, value -> value, value -> None.
updates = st.lists(st.tuples(st.integers(0, 30), st.one_of(st.none(), values)), max_size=120)


@settings(max_examples=examples(500), deadline=None)
@given(updates)
def test_a_running_sum_gives_the_mean_over_keywords_of_the_values_stored(changes):
    stored: dict[int, float | None] = {}
    total, count = 0, 0
    for keyword, new in changes:
        old = stored.get(keyword)
        if old is not None:
            total, count = total - exact_units(old), count - 1
        if new is not None:
            total, count = total + exact_units(new), count + 1
        stored[keyword] = new
        present = [value for value in stored.values() if value is not None]
        assert (mean_from_total(total, count), count) == mean_over_keywords(list(stored.values()))
        assert total == exact_total(present) == exact_total(np.array(present))
        assert sum_to_float(total) == math.fsum(present)
        assert total_decode(total_encode(total)) == total


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(values, max_size=200))
def test_the_vector_total_is_the_sum_of_each_values_units(numbers):
    assert exact_total(np.array(numbers, dtype=np.float64)) == sum(map(exact_units, numbers))


def test_the_order_of_the_additions_does_not_move_the_last_bit():
    # A float running sum of these differs by order (0.6 vs 0.6000000000000001).
    numbers = [0.1, 0.2, 0.3]
    assert sum(numbers) != sum(reversed(numbers))
    forward = exact_total(numbers)
    backward = 0
    for number in reversed(numbers):
        backward += exact_units(number)
    assert forward == backward
    assert mean_from_total(forward, 3) == math.fsum(numbers) / 3
    assert mean_from_total(0, 0) is None


@pytest.mark.parametrize("bad", [math.inf, -math.inf, math.nan])
def test_a_non_finite_value_has_no_exact_sum(bad):
    with pytest.raises((OverflowError, ValueError)):
        exact_units(bad)
    with pytest.raises(ValueError):
        exact_total([0.5, bad])
