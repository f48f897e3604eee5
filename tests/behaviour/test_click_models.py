"""Raw CTR, COEC and PBM by EM against hand-computed values (arithmetic in the comments),
and COEC against a row-by-row oracle."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from behaviour.core.click_models import ClickCounts, coec, pbm_fit, raw_ctr
from tests.property_depth import examples

# Two pairs, A = 0 and B = 1, each seen at positions 1 and 2:
#   A@1: 10 shown, 4 clicked   A@2: 10 shown, 3 clicked
#   B@1: 10 shown, 2 clicked   B@2: 20 shown, 2 clicked
TWO_PAIRS = ClickCounts.from_rows([0, 0, 1, 1], [1, 2, 1, 2], [10, 10, 10, 20], [4, 3, 2, 2])


def test_position_ctr_pools_every_pair_shown_there():
    # position 1: (4 + 2) / (10 + 10) = 0.3; position 2: (3 + 2) / (10 + 20) = 1/6.
    assert TWO_PAIRS.position_ctr() == pytest.approx([0.3, 1 / 6])


def test_raw_ctr_is_clicks_over_impressions_wherever_shown():
    # A: 7 / 20 = 0.35; B: 4 / 30.
    assert raw_ctr(TWO_PAIRS) == pytest.approx([0.35, 4 / 30])


def test_coec_divides_clicks_by_the_clicks_the_positions_would_give():
    # A expects 10·0.3 + 10·(1/6) = 14/3 clicks, got 7: 7 / (14/3) = 1.5.
    # B expects 10·0.3 + 20·(1/6) = 19/3, got 4: 12/19. (14/3 + 19/3 = 11 = every click.)
    assert coec(TWO_PAIRS) == pytest.approx([1.5, 12 / 19])


def test_no_score_below_the_minimum_impressions_and_one_at_it():
    # A has 20 impressions, B 30.
    for model in (raw_ctr, coec, lambda c, **kw: pbm_fit(c, **kw).attractiveness):
        at_a = model(TWO_PAIRS, min_impressions=20)
        assert not np.isnan(at_a).any()
        above_a = model(TWO_PAIRS, min_impressions=21)
        assert np.isnan(above_a[0]) and not np.isnan(above_a[1])
        assert np.isnan(model(TWO_PAIRS, min_impressions=31)).all()


def test_a_pair_never_shown_gets_no_score_even_without_a_minimum():
    counts = ClickCounts.from_rows([0], [1], [5], [1], pair_count=2)
    assert np.isnan(coec(counts, min_impressions=0)[1])
    assert np.isnan(pbm_fit(counts, min_impressions=0).attractiveness[1])


def test_pbm_first_em_step_by_hand():
    # One pair at one position, 10 shown, 4 clicked; alpha = θ = ½ at the start.
    # A non-click: P(attractive | no click) = ½·½ / (1 - ¼) = 1/3, likewise examined.
    # alpha = (4 + 6·1/3) / 10 = 0.6, θ = 0.6.
    fit = pbm_fit(ClickCounts.from_rows([0], [1], [10], [4]), max_iterations=1,
                  min_impressions=0)
    assert fit.attractiveness == pytest.approx([0.6])
    assert fit.examination == pytest.approx([0.6])
    assert fit.iterations == 1 and not fit.converged


def test_pbm_recovers_a_model_that_made_the_counts():
    # θ = (1, ½), alpha = (0.8, 0.4), each pair shown 100 times at each position:
    # expected clicks A@1 80, A@2 40, B@1 40, B@2 20. The fit may scale alpha by c and θ by
    # 1/c, so its ratios and its products are what it must recover.
    counts = ClickCounts.from_rows([0, 0, 1, 1], [1, 2, 1, 2], [100] * 4, [80, 40, 40, 20])
    fit = pbm_fit(counts, tolerance=1e-12, max_iterations=100_000)
    alpha, theta = fit.attractiveness, fit.examination
    assert fit.converged
    assert alpha[0] / alpha[1] == pytest.approx(2.0, rel=1e-6)
    assert theta[1] / theta[0] == pytest.approx(0.5, rel=1e-6)
    assert alpha[0] * theta[0] == pytest.approx(0.8, rel=1e-6)


def test_pbm_refuses_more_clicks_than_impressions():
    with pytest.raises(ValueError, match="one click per impression"):
        pbm_fit(ClickCounts.from_rows([0], [1], [3], [4]))


def test_counts_refuse_positions_from_zero_and_mismatched_lengths():
    with pytest.raises(ValueError, match="from 1"):
        ClickCounts.from_rows([0], [0], [1], [0])
    with pytest.raises(ValueError, match="one length"):
        ClickCounts.from_rows([0, 1], [1], [1], [0])


def _coec_oracle(rows):
    """COEC row by row, in plain Python: the definition, not the vectorised code."""
    shown, clicked = {}, {}
    for _pair, position, impressions, clicks in rows:
        shown[position] = shown.get(position, 0) + impressions
        clicked[position] = clicked.get(position, 0) + clicks
    expected, got = {}, {}
    for pair, position, impressions, clicks in rows:
        rate = clicked[position] / shown[position] if shown[position] else 0.0
        expected[pair] = expected.get(pair, 0.0) + impressions * rate
        got[pair] = got.get(pair, 0) + clicks
    return {pair: got[pair] / expected[pair] if expected[pair] else math.nan
            for pair in expected}


ROWS = st.lists(st.tuples(st.integers(0, 5), st.integers(1, 4), st.integers(1, 50),
                          st.integers(0, 50)), min_size=1, max_size=30).map(
    lambda rows: [(p, k, n, min(c, n)) for p, k, n, c in rows])


@settings(max_examples=examples(200), deadline=None)
@given(ROWS)
def test_coec_matches_its_definition_row_by_row_and_sums_to_every_click(rows):
    pairs, positions, impressions, clicks = (list(column) for column in zip(*rows, strict=True))
    counts = ClickCounts.from_rows(pairs, positions, impressions, clicks, pair_count=6)
    scores = coec(counts, min_impressions=0)
    oracle = _coec_oracle(rows)
    for pair in range(6):
        if pair in oracle and not math.isnan(oracle[pair]):
            assert scores[pair] == pytest.approx(oracle[pair])
        else:
            assert math.isnan(scores[pair])


@settings(max_examples=examples(100), deadline=None)
@given(ROWS, st.integers(0, 120))
def test_no_model_scores_a_pair_below_the_minimum(rows, minimum):
    pairs, positions, impressions, clicks = (list(column) for column in zip(*rows, strict=True))
    counts = ClickCounts.from_rows(pairs, positions, impressions, clicks, pair_count=6)
    too_few = counts.pair_impressions() < max(minimum, 1)
    for scores in (raw_ctr(counts, min_impressions=minimum),
                   coec(counts, min_impressions=minimum),
                   pbm_fit(counts, min_impressions=minimum, max_iterations=50).attractiveness):
        assert np.isnan(scores[too_few]).all()
