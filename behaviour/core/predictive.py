"""Do offline metrics predict behaviour? Per keyword an offline metric's value and an
online figure (CTR, first-click RR), their rank correlation with a bootstrap interval, and
the keywords whose ranks disagree most.

- **Spearman's rho and Kendall's τ-b** of the keywords where both values exist, as
  metrics_engine.agreement computes them (ties share average ranks).
- **The interval** is the percentile bootstrap: `resamples` samples of the keywords drawn
  with replacement from numpy's PCG64 seeded with `seed` (one seed, one interval, on every
  machine), each sample's rho and τ computed the same way; the interval holds the middle
  `confidence` of them. A sample whose values are all tied has no correlation and is left
  out (`used` says how many counted). Fewer than 3 keywords: no interval.
- **Disagreement** of a keyword: |its offline rank - its online rank| with the ranks
  scaled to [0, 1] ((rank - 1) / (n - 1), ties averaged), so 1 means "best by one, worst
  by the other".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from metrics_engine.agreement import _average_ranks, kendall_tau, spearman

DEFAULT_RESAMPLES = 1000
DEFAULT_CONFIDENCE = 0.95


@dataclass(frozen=True)
class Interval:
    low: float
    high: float


@dataclass(frozen=True)
class RankCorrelation:
    keyword_count: int
    spearman: float | None
    kendall: float | None
    spearman_interval: Interval | None
    kendall_interval: Interval | None
    resamples: int
    used: int
    """Resamples that had a correlation (not all tied)."""
    confidence: float
    seed: int

    @property
    def mostly_tied(self) -> bool:
        """More than one resample in twenty had no correlation (one side all tied): the
        interval then speaks of the resamples that kept the few untied keywords, and can
        leave the figure itself outside it."""
        return self.resamples > 0 and self.used < MOSTLY_TIED_SHARE * self.resamples


# The share of resamples with a correlation below which the page warns of ties.
MOSTLY_TIED_SHARE = 0.95


def _paired(offline, online) -> tuple[np.ndarray, np.ndarray]:
    a = np.asarray(offline, dtype=np.float64)
    b = np.asarray(online, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError("offline and online are 1-d and of one length")
    kept = ~(np.isnan(a) | np.isnan(b))
    return a[kept], b[kept]


def _groups(values: np.ndarray) -> tuple[np.ndarray, int]:
    """Each value's group of equal values (groups in ascending order), and their number."""
    unique, inverse = np.unique(values, return_inverse=True)
    return inverse.ravel(), unique.size


def _group_weights(weights: np.ndarray, inverse: np.ndarray, groups: int) -> np.ndarray:
    return np.vstack([np.bincount(inverse, weights=row, minlength=groups) for row in weights])


def _rho_weighted(weights: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Spearman's rho of each resample, given as how many times it drew each keyword
    (rows of `weights`): the copies of one keyword, like equal values, share the average
    of the ranks they span, so a resample's ranks come from its per-group weight sums
    without materialising it."""
    total = weights.sum(axis=1, keepdims=True)
    middle = (total + 1) / 2
    centred = []
    for values in (a, b):
        inverse, groups = _groups(values)
        group_weight = _group_weights(weights, inverse, groups)
        before = np.cumsum(group_weight, axis=1) - group_weight
        centred.append((before + (group_weight + 1) / 2)[:, inverse] - middle)
    covariance = (weights * centred[0] * centred[1]).sum(axis=1)
    spread = np.sqrt((weights * centred[0] ** 2).sum(axis=1)
                     * (weights * centred[1] ** 2).sum(axis=1))
    out = np.full(weights.shape[0], np.nan)
    np.divide(covariance, spread, out=out, where=spread > 1e-9)
    return out


def _tau_b_weighted(weights: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Kendall's tau-b of each resample (rows of `weights`, as in _rho_weighted): its score
    is the sum over pairs of keywords of w_i w_j sign(a_i - a_j) sign(b_i - b_j), w'Sw / 2
    (copies of one keyword tie on both sides and add nothing); its tied pairs on a side
    are C(W_g, 2) summed over the groups of equal values. S is built a block of rows at a
    time, so memory stays at _CHUNK_CELLS whatever the keywords."""
    n = a.size
    score = np.zeros(weights.shape[0])
    step = max(1, _CHUNK_CELLS // n)
    for start in range(0, n, step):
        rows = slice(start, start + step)
        signs = np.sign(a[rows, None] - a[None, :]) * np.sign(b[rows, None] - b[None, :])
        score += ((weights[:, rows] @ signs) * weights).sum(axis=1)
    score /= 2
    total = weights.sum(axis=1)
    pairs = total * (total - 1) / 2
    tied = []
    for values in (a, b):
        inverse, groups = _groups(values)
        group_weight = _group_weights(weights, inverse, groups)
        tied.append((group_weight * (group_weight - 1) / 2).sum(axis=1))
    denominator = np.sqrt((pairs - tied[0]) * (pairs - tied[1]))
    out = np.full(weights.shape[0], np.nan)
    np.divide(score, denominator, out=out, where=denominator > 0)
    return out


def _interval(values: np.ndarray, confidence: float) -> Interval | None:
    values = values[~np.isnan(values)]
    if values.size == 0:
        return None
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(values, [tail, 100 - tail])
    return Interval(float(low), float(high))


# Kendall's bootstrap costs resamples x n x n multiply-adds; for many keywords the
# resamples are cut so the page answers in seconds (the count is shown).
BOOTSTRAP_CELLS = 10_000_000_000
MIN_RESAMPLES = 200


def resamples_for(keyword_count: int, wanted: int) -> int:
    """`wanted` resamples, fewer for many keywords (never below MIN_RESAMPLES)."""
    if keyword_count < 2:
        return wanted
    return max(MIN_RESAMPLES, min(wanted, BOOTSTRAP_CELLS // (keyword_count ** 2)))



# Cells of Kendall's sign matrix held at once (a block of its n x n).
_CHUNK_CELLS = 4_000_000


def rank_correlation(offline, online, *, resamples: int = DEFAULT_RESAMPLES,
                     confidence: float = DEFAULT_CONFIDENCE, seed: int = 0
                     ) -> RankCorrelation:
    """rho and τ-b of the keywords where both values exist (NaN = missing), with their
    bootstrap intervals (see the module's docstring)."""
    if not 0 < confidence < 1:
        raise ValueError("confidence lies between 0 and 1")
    if resamples < 0:
        raise ValueError("resamples cannot be negative")
    a, b = _paired(offline, online)
    n = a.size
    rho, tau = spearman(a, b), kendall_tau(a, b)
    if n < 3 or resamples == 0:
        return RankCorrelation(n, rho, tau, None, None, resamples, 0, confidence, seed)
    picks = np.random.default_rng(seed).integers(0, n, size=(resamples, n))
    weights = np.vstack([np.bincount(row, minlength=n) for row in picks]).astype(np.float64)
    rhos, taus = _rho_weighted(weights, a, b), _tau_b_weighted(weights, a, b)
    used = int((~np.isnan(rhos)).sum())
    return RankCorrelation(n, rho, tau, _interval(rhos, confidence),
                           _interval(taus, confidence), resamples, used, confidence, seed)


def disagreement(offline, online) -> np.ndarray:
    """Each keyword's |offline rank - online rank|, ranks scaled to [0, 1]; NaN where a
    value is missing (the ranks are of the keywords with both)."""
    a = np.asarray(offline, dtype=np.float64)
    b = np.asarray(online, dtype=np.float64)
    kept = ~(np.isnan(a) | np.isnan(b))
    out = np.full(a.shape, np.nan)
    n = int(kept.sum())
    if n < 2:
        return out
    scaled_a = (_average_ranks(a[kept]) - 1) / (n - 1)
    scaled_b = (_average_ranks(b[kept]) - 1) / (n - 1)
    out[kept] = np.abs(scaled_a - scaled_b)
    return out


def most_disagreeing(offline, online, *, count: int = 10) -> list[int]:
    """The indexes of the `count` keywords of greatest disagreement, greatest first (ties
    in index order)."""
    scores = disagreement(offline, online)
    order = [index for index in np.argsort(-np.nan_to_num(scores, nan=-1.0), kind="stable")
             if not np.isnan(scores[index])]
    return [int(index) for index in order[:count]]
