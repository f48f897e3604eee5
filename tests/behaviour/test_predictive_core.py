"""behaviour.core.predictive: rank correlation of an offline metric and an online figure
per keyword, its seeded bootstrap interval, and where they disagree; hand-computed."""

import numpy as np
import pytest

from behaviour.core.predictive import disagreement, most_disagreeing, rank_correlation


def test_spearman_and_kendall_of_one_swapped_pair():
    # Ranks differ by 1 at two keywords: rho = 1 - 6·2 / (4·15) = 0.8; one of 6 pairs
    # discordant: τ = (5 - 1) / 6.
    found = rank_correlation([1, 2, 3, 4], [0.1, 0.3, 0.2, 0.4], resamples=0)
    assert found.keyword_count == 4
    assert found.spearman == pytest.approx(0.8)
    assert found.kendall == pytest.approx(4 / 6)
    assert found.spearman_interval is None


def test_missing_values_take_no_part():
    found = rank_correlation([1, np.nan, 2, 3], [0.1, 0.9, np.nan, 0.3], resamples=0)
    assert found.keyword_count == 2
    assert found.spearman == pytest.approx(1.0)


def test_a_perfect_order_has_the_interval_one_to_one():
    # Every resample of a strictly increasing pair of series is increasing (duplicates tie
    # on both sides); a resample of one repeated keyword has no correlation and is dropped.
    found = rank_correlation([1, 2, 3, 4, 5], [2, 4, 6, 8, 10], resamples=200, seed=3)
    assert (found.spearman_interval.low, found.spearman_interval.high) == (1.0, 1.0)
    assert (found.kendall_interval.low, found.kendall_interval.high) == (1.0, 1.0)
    assert 190 <= found.used <= 200


def test_the_bootstrap_is_deterministic_and_contains_the_estimate():
    rng = np.random.default_rng(0)
    offline = rng.random(40)
    online = offline + rng.normal(0, 0.3, 40)
    first = rank_correlation(offline, online, resamples=300, seed=5)
    again = rank_correlation(offline, online, resamples=300, seed=5)
    other = rank_correlation(offline, online, resamples=300, seed=6)
    assert first == again
    assert first.spearman_interval != other.spearman_interval
    assert first.spearman_interval.low < first.spearman < first.spearman_interval.high
    assert first.kendall_interval.low < first.kendall < first.kendall_interval.high


def test_the_bootstrap_kendall_matches_the_plain_one_on_each_sample():
    # The vectorised τ-b of the resamples equals metrics_engine's on the same sample.
    from behaviour.core.predictive import _tau_b_many
    from metrics_engine.agreement import kendall_tau
    a = np.array([[1.0, 2.0, 2.0, 3.0, 5.0]])
    b = np.array([[3.0, 1.0, 1.0, 4.0, 2.0]])
    assert _tau_b_many(a, b)[0] == pytest.approx(kendall_tau(a[0], b[0]))


def test_the_keywords_that_disagree_most():
    # Offline ranks 1 2 3 4, online 4 2 3 1 → scaled |diff| 1, 0, 0, 1.
    offline, online = [0.1, 0.2, 0.3, 0.4], [0.9, 0.5, 0.6, 0.1]
    assert list(disagreement(offline, online)) == [1.0, 0.0, 0.0, 1.0]
    assert most_disagreeing(offline, online, count=3) == [0, 3, 1]
    assert most_disagreeing([0.1, np.nan], [0.2, 0.3]) == []
