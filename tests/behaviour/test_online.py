"""Online metrics against hand-computed values (arithmetic in the comments) and the
per-search definitions."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from behaviour.core.online import (
    KeywordBehaviour,
    abandonment,
    behaviour_total,
    ctr_at,
    ctr_by_position,
    first_click_rr,
    mean_dwell,
    mean_over_keywords,
    online_metrics,
)
from tests.property_depth import examples

NAN = np.nan
# Four searches of one keyword, three results each:
#   s1 clicks positions 2 (10 s) and 3 (30 s); s2 clicks 1 (20 s); s3 clicks nothing;
#   s4 clicks 3 (dwell not known).
CLICKS = np.array([[0, 1, 1], [1, 0, 0], [0, 0, 0], [0, 0, 1]], dtype=bool)
DWELL = np.array([[NAN, 10, 30], [20, NAN, NAN], [NAN] * 3, [NAN] * 3])
FOUR = KeywordBehaviour.from_sessions(CLICKS, DWELL)


def test_ctr_at_k_and_by_position_by_hand():
    # clicks per position 1, 1, 2; each position shown 4 times.
    assert ctr_at(FOUR, 2) == pytest.approx(2 / 8)
    assert ctr_at(FOUR, 3) == pytest.approx(4 / 12)
    assert ctr_at(FOUR, 10) == pytest.approx(4 / 12)
    assert ctr_by_position(FOUR) == pytest.approx([0.25, 0.25, 0.5])


def test_first_click_rr_counts_a_search_without_a_click_as_zero():
    # first clicks at 2, 1, -, 3: (1/2 + 1 + 0 + 1/3) / 4 = 11/24.
    assert first_click_rr(FOUR) == pytest.approx(11 / 24)


def test_abandonment_and_mean_dwell_by_hand():
    assert abandonment(FOUR) == pytest.approx(1 / 4)
    # (10 + 30 + 20) / 3: s4's click has no dwell and takes no part.
    assert mean_dwell(FOUR) == pytest.approx(20.0)


def test_counts_without_searches_give_no_rr_and_no_abandonment():
    from_csv = KeywordBehaviour(impressions=np.array([10.0, 10.0]), clicks=np.array([3.0, 1.0]),
                                first_clicks=np.zeros(2), searches=0)
    found = online_metrics(from_csv, k=2)
    assert found.ctr_at_k == pytest.approx(0.2)
    assert found.first_click_rr is None and found.abandonment is None
    assert found.mean_dwell_seconds is None


def test_keywords_pooled_weigh_each_by_its_traffic():
    # FOUR plus two searches of two results, no click: impressions 6, 6, 4; clicks 1, 1, 2.
    quiet = KeywordBehaviour.from_sessions(np.zeros((2, 2), dtype=bool))
    total = behaviour_total([FOUR, quiet])
    assert ctr_at(total, 2) == pytest.approx(2 / 12)
    assert abandonment(total) == pytest.approx(3 / 6)
    assert first_click_rr(total) == pytest.approx((11 / 6) / 6)
    assert behaviour_total([]) is None


def test_a_query_set_mean_counts_each_keyword_once():
    assert mean_over_keywords([0.5, None, 0.25]) == pytest.approx(0.375)
    assert mean_over_keywords([None]) is None


@settings(max_examples=examples(200), deadline=None)
@given(arrays(bool, st.tuples(st.integers(1, 12), st.integers(1, 6))))
def test_the_sums_give_the_per_search_definitions(clicks):
    found = KeywordBehaviour.from_sessions(clicks)
    per_search_rr = [1 / (row.argmax() + 1) if row.any() else 0.0 for row in clicks]
    assert first_click_rr(found) == pytest.approx(sum(per_search_rr) / len(clicks))
    assert abandonment(found) == pytest.approx(sum(not row.any() for row in clicks)
                                               / len(clicks))
    assert ctr_at(found, clicks.shape[1]) == pytest.approx(clicks.mean())
