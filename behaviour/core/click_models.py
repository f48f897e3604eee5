"""Judgments learned from clicks: raw CTR, COEC and the position-based model fitted by EM.

Every model reads the same counts: rows of (query-document pair, position, impressions,
clicks), where a pair is an index the caller gives each (keyword, document) it keeps and
positions count from 1. Each returns one score per pair, NaN for a pair with fewer than
`min_impressions` impressions in all (no grade is better than a grade from a handful of
views) or none at all.

- **Raw CTR**: clicks / impressions of the pair, wherever it was shown. It rewards being
  ranked high as much as being relevant.
- **COEC** (clicks over expected clicks, Zhang & Jones 2007; the click model of the
  OpenSearch Search Relevance Workbench): the expected CTR of position k is every pair's
  clicks at k over their impressions at k; a pair's score is its clicks over the clicks
  it would have got at that expected rate, Σ_k impressions_k · ctr_k. 1 means "clicked as
  much as the average result where it was shown". The Workbench credits a pair shown at
  several positions with all its impressions at its best one; this sums each position's
  expectation instead, which is the same when a pair has one position.
- **PBM** (Craswell et al. 2008; EM as in Chuklin, Markov & de Rijke, "Click Models for
  Web Search", 2015): P(click) = θ_k · alpha_pair, with θ_k the examination probability of
  position k and alpha_pair the attractiveness. EM from alpha = θ = ½: a click means examined and
  attractive; a non-click splits into P(attractive | no click) = alpha(1-θ)/(1-alphaθ) and
  P(examined | no click) = θ(1-alpha)/(1-alphaθ); each parameter becomes its expected count over
  its impressions. It stops when no parameter moved by more than `tolerance` in an
  iteration, or after `max_iterations` (the fit says which). alpha and θ are known only up to
  a common scale (alpha·c, θ/c click alike): compare alpha between pairs, do not read it as a
  probability on its own.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DEFAULT_MIN_IMPRESSIONS = 10
PBM_TOLERANCE = 1e-6
PBM_MAX_ITERATIONS = 2000


@dataclass(frozen=True)
class ClickCounts:
    """Aggregated clicks: one row per (pair, position) seen."""

    pair: np.ndarray
    """int64: the pair's index, 0 .. pair_count - 1."""
    position: np.ndarray
    """int64: the position, from 1."""
    impressions: np.ndarray
    """int64 or float64."""
    clicks: np.ndarray
    pair_count: int

    @classmethod
    def from_rows(cls, pair, position, impressions, clicks, *,
                  pair_count: int | None = None) -> ClickCounts:
        pair = np.asarray(pair, dtype=np.int64)
        position = np.asarray(position, dtype=np.int64)
        impressions = np.asarray(impressions, dtype=np.float64)
        clicks = np.asarray(clicks, dtype=np.float64)
        if not pair.shape == position.shape == impressions.shape == clicks.shape:
            raise ValueError("pair, position, impressions and clicks must have one length")
        if pair.ndim != 1:
            raise ValueError("the counts are 1-d arrays")
        if (position < 1).any():
            raise ValueError("positions count from 1")
        if (impressions < 0).any() or (clicks < 0).any():
            raise ValueError("counts cannot be negative")
        if (pair < 0).any():
            raise ValueError("pair indexes cannot be negative")
        found = int(pair.max()) + 1 if pair.size else 0
        pair_count = found if pair_count is None else pair_count
        if found > pair_count:
            raise ValueError("a pair index is not below pair_count")
        return cls(pair=pair, position=position, impressions=impressions, clicks=clicks,
                   pair_count=pair_count)

    @classmethod
    def from_matrices(cls, impressions: np.ndarray, clicks: np.ndarray) -> ClickCounts:
        """From (pairs, positions) matrices, column k = position k + 1; empty cells left
        out."""
        impressions = np.asarray(impressions)
        rows, columns = np.nonzero(impressions)
        return cls.from_rows(rows, columns + 1, impressions[rows, columns],
                             np.asarray(clicks)[rows, columns],
                             pair_count=impressions.shape[0])

    @property
    def position_count(self) -> int:
        return int(self.position.max()) if self.position.size else 0

    def pair_impressions(self) -> np.ndarray:
        return np.bincount(self.pair, weights=self.impressions, minlength=self.pair_count)

    def pair_clicks(self) -> np.ndarray:
        return np.bincount(self.pair, weights=self.clicks, minlength=self.pair_count)

    def position_ctr(self) -> np.ndarray:
        """Clicks over impressions at each position 1..position_count (NaN where none)."""
        size = self.position_count
        shown = np.bincount(self.position - 1, weights=self.impressions, minlength=size)
        clicked = np.bincount(self.position - 1, weights=self.clicks, minlength=size)
        return _ratio(clicked, shown)


def _ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    out = np.full(np.shape(numerator), np.nan)
    np.divide(numerator, denominator, out=out, where=denominator > 0)
    return out


def _enough(counts: ClickCounts, scores: np.ndarray, min_impressions: float) -> np.ndarray:
    if min_impressions < 0:
        raise ValueError("min_impressions cannot be negative")
    impressions = counts.pair_impressions()
    return np.where((impressions >= min_impressions) & (impressions > 0), scores, np.nan)


def raw_ctr(counts: ClickCounts, *,
            min_impressions: float = DEFAULT_MIN_IMPRESSIONS) -> np.ndarray:
    """Each pair's clicks over its impressions."""
    scores = _ratio(counts.pair_clicks(), counts.pair_impressions())
    return _enough(counts, scores, min_impressions)


def coec(counts: ClickCounts, *,
         min_impressions: float = DEFAULT_MIN_IMPRESSIONS) -> np.ndarray:
    """Each pair's clicks over its expected clicks (see the module's docstring)."""
    ctr = np.nan_to_num(counts.position_ctr())
    expected = np.bincount(counts.pair, weights=counts.impressions * ctr[counts.position - 1],
                           minlength=counts.pair_count)
    return _enough(counts, _ratio(counts.pair_clicks(), expected), min_impressions)


@dataclass(frozen=True)
class PbmFit:
    attractiveness: np.ndarray
    """alpha per pair; NaN below the minimum impressions."""
    examination: np.ndarray
    """θ per position 1..position_count (½, the start, for a position never shown)."""
    iterations: int
    converged: bool


def pbm_fit(counts: ClickCounts, *, min_impressions: float = DEFAULT_MIN_IMPRESSIONS,
            tolerance: float = PBM_TOLERANCE,
            max_iterations: int = PBM_MAX_ITERATIONS) -> PbmFit:
    """The position-based model fitted by EM (see the module's docstring). Every row takes
    part in the fit, pairs below the minimum too (they still say something about θ); only
    their alpha is withheld."""
    if (counts.clicks > counts.impressions).any():
        raise ValueError("PBM needs at most one click per impression")
    positions = counts.position - 1
    pair_impressions = counts.pair_impressions()
    position_impressions = np.bincount(positions, weights=counts.impressions,
                                       minlength=counts.position_count)
    not_clicked = counts.impressions - counts.clicks
    alpha = np.full(counts.pair_count, 0.5)
    theta = np.full(counts.position_count, 0.5)
    iterations, converged = 0, counts.pair.size == 0
    while not converged and iterations < max_iterations:
        iterations += 1
        a, t = alpha[counts.pair], theta[positions]
        neither = 1.0 - a * t
        safe = np.where(neither > 0, neither, 1.0)
        attractive = np.where(neither > 0, a * (1.0 - t) / safe, 0.0)
        examined = np.where(neither > 0, t * (1.0 - a) / safe, 0.0)
        new_alpha = _ratio(np.bincount(counts.pair, weights=counts.clicks
                                       + not_clicked * attractive,
                                       minlength=counts.pair_count), pair_impressions)
        new_theta = _ratio(np.bincount(positions, weights=counts.clicks
                                       + not_clicked * examined,
                                       minlength=counts.position_count),
                           position_impressions)
        new_alpha = np.where(np.isnan(new_alpha), alpha, new_alpha)
        new_theta = np.where(np.isnan(new_theta), theta, new_theta)
        moved = max(float(np.abs(new_alpha - alpha).max(initial=0.0)),
                    float(np.abs(new_theta - theta).max(initial=0.0)))
        alpha, theta = new_alpha, new_theta
        converged = moved < tolerance
    return PbmFit(attractiveness=_enough(counts, alpha, min_impressions), examination=theta,
                  iterations=iterations, converged=converged)
