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


def _paired(offline, online) -> tuple[np.ndarray, np.ndarray]:
    a = np.asarray(offline, dtype=np.float64)
    b = np.asarray(online, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError("offline and online are 1-d and of one length")
    kept = ~(np.isnan(a) | np.isnan(b))
    return a[kept], b[kept]


def _tau_b_many(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Kendall's τ-b of each row pair of (samples, n) matrices; NaN where undefined."""
    sign_a = np.sign(a[:, :, None] - a[:, None, :])
    sign_b = np.sign(b[:, :, None] - b[:, None, :])
    n = a.shape[1]
    pairs = n * (n - 1) / 2
    score = (sign_a * sign_b).sum(axis=(1, 2)) / 2
    tied_a = ((sign_a == 0).sum(axis=(1, 2)) - n) / 2
    tied_b = ((sign_b == 0).sum(axis=(1, 2)) - n) / 2
    denominator = np.sqrt((pairs - tied_a) * (pairs - tied_b))
    out = np.full(a.shape[0], np.nan)
    np.divide(score, denominator, out=out, where=denominator > 0)
    return out


def _rho_many(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    ranks_a = np.vstack([_average_ranks(row) for row in a])
    ranks_b = np.vstack([_average_ranks(row) for row in b])
    ranks_a -= ranks_a.mean(axis=1, keepdims=True)
    ranks_b -= ranks_b.mean(axis=1, keepdims=True)
    spread = np.sqrt((ranks_a ** 2).sum(axis=1) * (ranks_b ** 2).sum(axis=1))
    out = np.full(a.shape[0], np.nan)
    np.divide((ranks_a * ranks_b).sum(axis=1), spread, out=out, where=spread > 0)
    return out


def _interval(values: np.ndarray, confidence: float) -> Interval | None:
    values = values[~np.isnan(values)]
    if values.size == 0:
        return None
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(values, [tail, 100 - tail])
    return Interval(float(low), float(high))


# Resamples held in memory at once: Kendall's sign matrices are samples x n x n.
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
    rhos, taus = np.empty(resamples), np.empty(resamples)
    step = max(1, _CHUNK_CELLS // (n * n))
    for start in range(0, resamples, step):
        rows = picks[start:start + step]
        rhos[start:start + step] = _rho_many(a[rows], b[rows])
        taus[start:start + step] = _tau_b_many(a[rows], b[rows])
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
