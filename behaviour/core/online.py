"""Online metrics of one keyword (or a set of keywords) from what its searchers did.

The input is a keyword's behaviour summed over its searches (`KeywordBehaviour`): per
position, result impressions, clicks and first clicks; the number of searches; the dwell
time of clicks. A store keeps these sums rather than every event, and the metrics below
are exactly the per-search definitions (docs/METRICS.md, "Online metrics"):

- **CTR@k**: clicks at positions 1..k over result impressions at positions 1..k.
- **CTR by position**: clicks at k over impressions at k.
- **First-click RR**: the mean over searches of 1 / (position of the search's first
  click), 0 for a search without a click (mean reciprocal rank of the first click).
- **Abandonment**: the share of searches without a click.
- **Mean dwell**: the mean dwell time of the clicks whose dwell is known.

Each is None where it is undefined: no impressions in the top k, no searches counted (a
plain CSV of per-position counts has no searches, so neither first-click RR nor
abandonment can be had from it), no click with a dwell time.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class KeywordBehaviour:
    impressions: np.ndarray
    """float64 per position 1..depth (index 0 = position 1)."""
    clicks: np.ndarray
    first_clicks: np.ndarray
    """Searches whose first click was at each position."""
    searches: int
    """Searches counted (0: unknown, as from per-position counts alone)."""
    dwell_seconds_sum: float = 0.0
    dwell_count: int = 0

    @classmethod
    def from_sessions(cls, clicks: np.ndarray,
                      dwell_seconds: np.ndarray | None = None) -> KeywordBehaviour:
        """From a (searches, depth) click matrix, every position shown in every search,
        and the dwell of each click (NaN where unknown or no click)."""
        clicks = np.asarray(clicks, dtype=bool)
        searches, depth = clicks.shape
        clicked = clicks.any(axis=1)
        first = np.bincount(clicks.argmax(axis=1)[clicked], minlength=depth)
        dwell_sum, dwell_count = 0.0, 0
        if dwell_seconds is not None:
            known = clicks & ~np.isnan(dwell_seconds)
            dwell_sum, dwell_count = float(dwell_seconds[known].sum()), int(known.sum())
        return cls(impressions=np.full(depth, float(searches)),
                   clicks=clicks.sum(axis=0).astype(np.float64),
                   first_clicks=first.astype(np.float64), searches=searches,
                   dwell_seconds_sum=dwell_sum, dwell_count=dwell_count)

    @property
    def depth(self) -> int:
        return int(self.impressions.size)


def _padded(values: np.ndarray, depth: int) -> np.ndarray:
    out = np.zeros(depth)
    out[:values.size] = values
    return out


def behaviour_total(behaviours: Iterable[KeywordBehaviour]) -> KeywordBehaviour | None:
    """Several keywords' behaviour summed, as one keyword (None for none): the pooled
    figures weigh each keyword by its traffic."""
    found = list(behaviours)
    if not found:
        return None
    depth = max(b.depth for b in found)
    return KeywordBehaviour(
        impressions=sum((_padded(b.impressions, depth) for b in found), np.zeros(depth)),
        clicks=sum((_padded(b.clicks, depth) for b in found), np.zeros(depth)),
        first_clicks=sum((_padded(b.first_clicks, depth) for b in found), np.zeros(depth)),
        searches=sum(b.searches for b in found),
        dwell_seconds_sum=sum(b.dwell_seconds_sum for b in found),
        dwell_count=sum(b.dwell_count for b in found))


def ctr_at(behaviour: KeywordBehaviour, k: int) -> float | None:
    if k < 1:
        raise ValueError("k counts positions from 1")
    shown = float(behaviour.impressions[:k].sum())
    return float(behaviour.clicks[:k].sum()) / shown if shown > 0 else None


def ctr_by_position(behaviour: KeywordBehaviour) -> list[float | None]:
    return [float(c) / float(i) if i > 0 else None
            for c, i in zip(behaviour.clicks, behaviour.impressions, strict=True)]


def first_click_rr(behaviour: KeywordBehaviour) -> float | None:
    if behaviour.searches <= 0:
        return None
    reciprocal = 1.0 / np.arange(1, behaviour.depth + 1)
    return float((behaviour.first_clicks * reciprocal).sum()) / behaviour.searches


def abandonment(behaviour: KeywordBehaviour) -> float | None:
    if behaviour.searches <= 0:
        return None
    return (behaviour.searches - float(behaviour.first_clicks.sum())) / behaviour.searches


def mean_dwell(behaviour: KeywordBehaviour) -> float | None:
    if behaviour.dwell_count <= 0:
        return None
    return behaviour.dwell_seconds_sum / behaviour.dwell_count


@dataclass(frozen=True)
class OnlineMetrics:
    ctr_at_k: float | None
    ctr_by_position: list[float | None]
    first_click_rr: float | None
    abandonment: float | None
    mean_dwell_seconds: float | None
    searches: int


def online_metrics(behaviour: KeywordBehaviour, *, k: int = 10) -> OnlineMetrics:
    return OnlineMetrics(ctr_at_k=ctr_at(behaviour, k),
                         ctr_by_position=ctr_by_position(behaviour),
                         first_click_rr=first_click_rr(behaviour),
                         abandonment=abandonment(behaviour),
                         mean_dwell_seconds=mean_dwell(behaviour),
                         searches=behaviour.searches)


def mean_over_keywords(values: Iterable[float | None]) -> float | None:
    """A query set's figure as the offline metrics take it: each keyword counts once, a
    keyword without the figure takes no part."""
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None
