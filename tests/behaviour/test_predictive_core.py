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


def test_each_resample_s_figures_equal_those_of_the_resample_written_out():
    # A resample is kept as how often it drew each keyword; its rho and tau-b must be
    # metrics_engine's on the keywords written out with their repeats (ties included).
    from behaviour.core.predictive import _rho_weighted, _tau_b_weighted
    from metrics_engine.agreement import kendall_tau, spearman
    a = np.array([1.0, 2.0, 2.0, 3.0, 5.0, 4.0])
    b = np.array([3.0, 1.0, 1.0, 4.0, 2.0, 2.0])
    picks = np.random.default_rng(2).integers(0, 6, size=(25, 6))
    weights = np.vstack([np.bincount(row, minlength=6) for row in picks]).astype(float)
    rhos, taus = _rho_weighted(weights, a, b), _tau_b_weighted(weights, a, b)
    for row, rho, tau in zip(picks, rhos, taus, strict=True):
        expected_rho, expected_tau = spearman(a[row], b[row]), kendall_tau(a[row], b[row])
        assert (np.nan if expected_rho is None else expected_rho) == pytest.approx(
            rho, nan_ok=True)
        assert (np.nan if expected_tau is None else expected_tau) == pytest.approx(
            tau, nan_ok=True)


def test_the_keywords_that_disagree_most():
    # Offline ranks 1 2 3 4, online 4 2 3 1 → scaled |diff| 1, 0, 0, 1.
    offline, online = [0.1, 0.2, 0.3, 0.4], [0.9, 0.5, 0.6, 0.1]
    assert list(disagreement(offline, online)) == [1.0, 0.0, 0.0, 1.0]
    assert most_disagreeing(offline, online, count=3) == [0, 3, 1]
    assert most_disagreeing([0.1, np.nan], [0.2, 0.3]) == []


def test_a_metric_tied_on_all_but_one_keyword_is_flagged_as_mostly_tied():
    # 49 keywords at 1.0 and one at 0.9: a resample has a correlation only if it drew the
    # one (and another), which 1 - (49/50)^50 = 0.636 of resamples do.
    tied = rank_correlation([1.0] * 49 + [0.9], np.arange(50.0), resamples=1000, seed=0)
    assert 580 < tied.used < 690
    assert tied.mostly_tied
    apart = rank_correlation(np.arange(50.0), np.arange(50.0) % 7, resamples=1000, seed=0)
    assert apart.used == 1000 and not apart.mostly_tied


def test_mostly_tied_starts_below_95_in_100_resamples():
    from behaviour.core.predictive import RankCorrelation

    def with_used(used):
        return RankCorrelation(50, 0.1, 0.1, None, None, 1000, used, 0.95, 0)

    assert not with_used(950).mostly_tied
    assert with_used(949).mostly_tied
    assert not RankCorrelation(2, None, None, None, None, 0, 0, 0.95, 0).mostly_tied
