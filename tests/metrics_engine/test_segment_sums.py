"""Running sums per segment (metrics_engine.segment_sums) against docs/METRICS.md,
"Weighted means and segments": hand-computed cases, and moves in any order ending where a
sum over the final values ends."""

from fractions import Fraction

from hypothesis import given
from hypothesis import strategies as st

import metrics_engine as core
from metrics_engine.segment_sums import EVERY, SegmentTotals, keyword_shares, segment_totals
from metrics_engine.weighted import weighted_mean


def weighted_by_hand(pairs: list[tuple[float, int]]) -> float:
    """R(Σ w·v) / Σ w with the products and sum exact (Fraction), rounded once."""
    return float(sum(Fraction(value) * weight for value, weight in pairs)) / sum(
        weight for _, weight in pairs)


ROWS = [  # weight, tags, value, lower, upper, bounds exact
    (5, ["head"], 0.3, 0.3, 0.3, True),
    (3, ["head", "lang:de"], None, 0.2, 0.7, True),
    (0, ["tail"], 0.1, 0.1, 0.1, True),
    (2, ["tail"], 0.9, 0.5, 1.0, False),
]


def test_a_keyword_counts_in_every_segment_and_its_tags_plain_and_weighted():
    assert keyword_shares(4, ["head", "lang:de"]) == [
        (("", False), 1), (("", True), 4), (("head", False), 1), (("head", True), 4),
        (("lang:de", False), 1), (("lang:de", True), 4)]


def test_segment_means_and_bounds_by_hand():
    totals = segment_totals(ROWS)
    assert set(totals) == {(EVERY, False), (EVERY, True), ("head", False), ("head", True),
                           ("lang:de", False), ("lang:de", True), ("tail", False),
                           ("tail", True)}
    every = totals[EVERY, False]
    # Plain: every keyword with a value, weight ignored (0.3, 0.1, 0.9).
    assert (every.mean, every.value_count, every.value_weight) == (
        weighted_by_hand([(0.3, 1), (0.1, 1), (0.9, 1)]), 3, 3)
    assert (every.mean, every.value_count) == core.mean_over_keywords([0.3, None, 0.1, 0.9])
    assert every.lower == weighted_by_hand([(0.3, 1), (0.2, 1), (0.1, 1), (0.5, 1)])
    assert not every.bounds_exact
    weighted = totals[EVERY, True]
    # The weight-0 keyword is left out; the ungraded one (no value) counts in the bounds.
    assert (weighted.mean, weighted.value_count, weighted.value_weight) == (
        weighted_by_hand([(0.3, 5), (0.9, 2)]), 2, 7)
    assert weighted.lower == weighted_by_hand([(0.3, 5), (0.2, 3), (0.5, 2)])
    assert weighted.upper == weighted_by_hand([(0.3, 5), (0.7, 3), (1.0, 2)])
    head = totals["head", True]
    assert (head.mean, head.value_count, head.value_weight) == (0.3, 1, 5)
    assert head.upper == weighted_by_hand([(0.3, 5), (0.7, 3)])
    assert head.bounds_exact
    german = totals["lang:de", True]
    # R(3 x 0.2) / 3 is not 0.2: the product is exact, the sum rounded once, then divided.
    assert (german.mean, german.value_count) == (None, 0)
    assert (german.lower, german.upper) == (0.20000000000000004, 0.6999999999999998)
    assert german.lower == weighted_by_hand([(0.2, 3)])
    tail_plain, tail_weighted = totals["tail", False], totals["tail", True]
    assert tail_plain.mean == weighted_by_hand([(0.1, 1), (0.9, 1)])
    assert (tail_weighted.mean, tail_weighted.value_weight) == (0.9, 2)
    assert tail_weighted.inexact_count == 1


def test_all_weight_zero_gives_no_weighted_mean_but_a_plain_one():
    totals = segment_totals([(0, [], 0.5, 0.5, 0.5, True)])
    assert totals[EVERY, True].mean is None
    assert totals[EVERY, True].empty
    assert totals[EVERY, False].mean == 0.5


values = st.one_of(st.none(), st.floats(min_value=-1e6, max_value=1e6,
                                        allow_nan=False, allow_infinity=False))


@given(st.lists(st.tuples(st.integers(0, 10**6), values, values), min_size=1, max_size=12),
       st.randoms(use_true_random=False))
def test_moves_in_any_order_end_at_the_sum_of_the_final_values(keywords, random):
    """Each keyword's value added, changed (old -> new) and the changes applied in a
    shuffled order: the sums are those built from the final values, and the mean is
    weighted_mean's (with all weights 1, mean_over_keywords') bit for bit."""
    final = [(weight, ["t"], second, second, second, True)
             for weight, _, second in keywords]
    moves = [(1, (weight, first)) for weight, first, _ in keywords]
    moves += [(-1, (weight, first)) for weight, first, _ in keywords]
    moves += [(1, (weight, second)) for weight, _, second in keywords]
    random.shuffle(moves)
    moved = {key: SegmentTotals() for key in segment_totals([]).keys() | {("t", False),
                                                                          ("t", True)}}
    for sign, (weight, value) in moves:
        for key, share in keyword_shares(weight, ["t"]):
            moved[key].move(sign, share, value, value, value, True)
    built = segment_totals(final)
    assert moved == built
    finals = [second for _, _, second in keywords]
    weights = [weight for weight, _, _ in keywords]
    assert moved["t", True].mean == weighted_mean(finals, weights)
    assert (moved[EVERY, False].mean, moved[EVERY, False].value_count) == (
        core.mean_over_keywords(finals))
    all_ones = segment_totals([(1, [], v, v, v, True) for v in finals])[EVERY, True]
    assert (all_ones.mean, all_ones.value_count) == core.mean_over_keywords(finals)
