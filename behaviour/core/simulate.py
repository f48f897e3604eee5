"""A deterministic click simulator: sessions of one query over documents of known true
relevance, clicked under a position-based model (PBM) or the cascade model.

Everything is drawn from the numpy Generator the caller passes, so one seed gives the
same sessions on every machine and numpy version that keeps the PCG64 stream.

- **Rankings.** A production ranker scores each document as its relevance plus a noise
  drawn once per query (`ranker_noise`: how wrong the ranker is) and plus a noise drawn
  per session (`session_noise`: rankings change between sessions, as after reindexing or
  personalisation). Each session shows the top `depth` documents by that score. Without
  session noise every session shows one ranking and position cannot be told apart from
  relevance (no click model can then recover the order beyond what the ranking says).
- **PBM.** A shown document is examined with the probability of its position
  (`bias[k]`) and, examined, clicked with its relevance (its attractiveness):
  P(click) = bias[k] · relevance[d], independently across positions.
- **Cascade.** The user reads from the top and clicks the first attractive document
  (probability relevance[d]), then stops; `bias` is not used: the examination is the
  cascade's own (position k is read when no result above it was clicked).
- **Dwell.** A click's dwell time is exponential with mean
  `dwell_floor_seconds + dwell_seconds · relevance[d]`: better results hold users longer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

ClickModelName = Literal["pbm", "cascade"]


@dataclass(frozen=True)
class Sessions:
    """One query's sessions: row = session, column = position (0 = the top)."""

    rankings: np.ndarray
    """int32 (sessions, depth): the index of the document shown at each position."""
    clicks: np.ndarray
    """bool (sessions, depth)."""
    dwell_seconds: np.ndarray
    """float64 (sessions, depth): a click's dwell time, NaN where there was no click."""

    @property
    def depth(self) -> int:
        return int(self.rankings.shape[1])


def position_bias(depth: int, *, power: float = 1.0) -> np.ndarray:
    """The examination probability of positions 1..depth: 1 / k**power (the power-law
    curve of Joachims et al. 2017; power 1: 1, 1/2, 1/3, ...)."""
    if depth < 1:
        raise ValueError("depth must be at least 1")
    return 1.0 / np.arange(1, depth + 1, dtype=np.float64) ** power


def simulate_query(rng: np.random.Generator, relevance: np.ndarray, *, sessions: int,
                   depth: int | None = None, bias: np.ndarray | None = None,
                   model: ClickModelName = "pbm", ranker_noise: float = 0.2,
                   session_noise: float = 0.1, dwell_seconds: float = 60.0,
                   dwell_floor_seconds: float = 5.0) -> Sessions:
    """`sessions` sessions of one query whose documents have the true `relevance`
    (attractiveness, each in [0, 1])."""
    relevance = np.asarray(relevance, dtype=np.float64)
    if relevance.ndim != 1 or relevance.size == 0:
        raise ValueError("relevance must be a non-empty 1-d array")
    if ((relevance < 0) | (relevance > 1)).any():
        raise ValueError("relevance must lie in [0, 1]")
    depth = relevance.size if depth is None else depth
    if not 1 <= depth <= relevance.size:
        raise ValueError("depth must be between 1 and the number of documents")
    if model not in ("pbm", "cascade"):
        raise ValueError(f"unknown click model {model!r}")
    bias = position_bias(depth) if bias is None else np.asarray(bias, dtype=np.float64)
    if bias.shape != (depth,):
        raise ValueError("bias must have one probability per position")

    base = relevance + ranker_noise * rng.standard_normal(relevance.size)
    scores = base[None, :] + session_noise * rng.standard_normal((sessions, relevance.size))
    rankings = np.argsort(-scores, axis=1, kind="stable")[:, :depth].astype(np.int32)
    attractive = rng.random((sessions, depth)) < relevance[rankings]
    if model == "pbm":
        clicks = attractive & (rng.random((sessions, depth)) < bias[None, :])
    else:
        clicks = np.zeros_like(attractive)
        clicked = attractive.any(axis=1)
        first = attractive.argmax(axis=1)
        clicks[np.flatnonzero(clicked), first[clicked]] = True
    mean_dwell = dwell_floor_seconds + dwell_seconds * relevance[rankings]
    dwell = rng.exponential(1.0, size=(sessions, depth)) * mean_dwell
    return Sessions(rankings=rankings, clicks=clicks,
                    dwell_seconds=np.where(clicks, dwell, np.nan))


def document_position_counts(found: Sessions, document_count: int
                             ) -> tuple[np.ndarray, np.ndarray]:
    """(impressions, clicks), each int64 (documents, depth): how often each document was
    shown, and clicked, at each position."""
    depth = found.depth
    cells = (found.rankings.astype(np.int64) * depth + np.arange(depth)[None, :]).ravel()
    size = document_count * depth
    impressions = np.bincount(cells, minlength=size).reshape(document_count, depth)
    clicks = np.bincount(cells, weights=found.clicks.ravel(), minlength=size)
    return impressions, clicks.astype(np.int64).reshape(document_count, depth)
