"""Grades learned from clicks: a click model's score of each query-document pair turned
into a probability, then into a grade of the evaluation's scale, by one stated rule
(docs/decisions/0024).

**Learned relevance** is the pair's estimated click-through were it shown at position 1:
- PBM: alpha · θ_1. The fit knows alpha and θ only up to a common factor (alpha·c and θ/c
  click alike); their product at position 1 does not depend on it, and it is the model's
  P(click | shown first).
- COEC: coec · ctr_1, ctr_1 being every pair's clicks over impressions at position 1. A
  pair clicked c times as often as the average result where it was shown is taken to be
  clicked c times as often as the average first result, had it been first.
Both are clipped to [0, 1] (a COEC far above 1 can exceed it). NaN where the model gives
no score (fewer than the minimum impressions) or nothing was ever shown at position 1.

**The grade** on a scale lo..hi of n grades is lo plus how many cut points the relevance
reaches: cuts c_1 < … < c_{n-1} inside (0, 1), by default evenly spaced (c_i = i / n).
On the graded scale 0..3 that is [0, .25) → 0, [.25, .5) → 1, [.5, .75) → 2,
[.75, 1] → 3. A team whose users rarely click even a perfect first result gives lower
cuts per grader.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from typing import Literal

import numpy as np

from behaviour.core.click_models import DEFAULT_MIN_IMPRESSIONS, ClickCounts, coec, pbm_fit

LearningModel = Literal["coec", "pbm"]
LEARNING_MODELS: tuple[str, ...] = ("coec", "pbm")


def learned_relevance(counts: ClickCounts, *, model: LearningModel,
                      min_impressions: float = DEFAULT_MIN_IMPRESSIONS) -> np.ndarray:
    """Each pair's estimated click-through at position 1, in [0, 1]; NaN for no grade."""
    if model == "pbm":
        fit = pbm_fit(counts, min_impressions=min_impressions)
        first = fit.examination[0] if fit.examination.size else np.nan
        relevance = fit.attractiveness * first
    elif model == "coec":
        ctr = counts.position_ctr()
        first = ctr[0] if ctr.size else np.nan
        relevance = coec(counts, min_impressions=min_impressions) * first
    else:
        raise ValueError(f"unknown learning model {model!r}")
    return np.clip(relevance, 0.0, 1.0)


def default_cuts(grade_count: int) -> list[float]:
    """Evenly spaced cut points for a scale of `grade_count` grades."""
    return [index / grade_count for index in range(1, grade_count)]


def cuts_problem(cuts: Sequence[float], grade_count: int) -> str:
    """Why `cuts` cannot map onto a scale of `grade_count` grades; "" when they can."""
    if len(cuts) != grade_count - 1:
        return (f"A scale of {grade_count} grades needs {grade_count - 1} cut points; "
                f"{len(cuts)} given.")
    if not all(isinstance(cut, int | float) and not isinstance(cut, bool) for cut in cuts):
        return "Cut points are numbers."
    if not all(0 < cut < 1 for cut in cuts):
        return "Cut points lie strictly between 0 and 1."
    if any(later <= earlier for earlier, later in pairwise(cuts)):
        return "Cut points rise strictly."
    return ""


def grades_from_relevance(relevance: np.ndarray, *, lo: int, hi: int,
                          cuts: Sequence[float] | None = None) -> list[int | None]:
    """Each relevance's grade on lo..hi (None where it is NaN), by the module's rule."""
    grade_count = hi - lo + 1
    cuts = list(default_cuts(grade_count) if cuts is None else cuts)
    problem = cuts_problem(cuts, grade_count)
    if problem:
        raise ValueError(problem)
    relevance = np.asarray(relevance, dtype=np.float64)
    # side="right": a relevance equal to a cut reaches it (0.25 is grade 1 of 0..3).
    steps = np.searchsorted(np.asarray(cuts, dtype=np.float64), relevance, side="right")
    return [None if np.isnan(value) else lo + int(step)
            for value, step in zip(relevance, steps, strict=True)]
