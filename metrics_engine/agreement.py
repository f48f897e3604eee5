"""Agreement of two graders (a judge against the people, one grader against another):
Cohen's κ, weighted κ for ordinal scales, exact-match rate, confusion matrix, and how
the metric values per keyword the two produce agree (rank correlation, mean delta).

Pure Python + numpy like the rest of the core. Items either grader left empty (None) take
no part. Every function returns None where its statistic is undefined (no pair, one
category only, a constant series) rather than NaN or a ZeroDivisionError.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

Weighting = Literal["linear", "quadratic"] | None


def _pairs(first: Sequence[int | None], second: Sequence[int | None]) -> list[tuple[int, int]]:
    if len(first) != len(second):
        raise ValueError("first and second must grade the same items")
    return [(a, b) for a, b in zip(first, second, strict=True) if a is not None and b is not None]


def confusion_matrix(first: Sequence[int | None], second: Sequence[int | None], *,
                     grades: Sequence[int]) -> list[list[int]]:
    """counts[i][j] = items graded grades[i] by ``first`` and grades[j] by ``second``."""
    index = {grade: position for position, grade in enumerate(grades)}
    counts = [[0] * len(grades) for _ in grades]
    for a, b in _pairs(first, second):
        if a not in index or b not in index:
            raise ValueError(f"grade {a if a not in index else b} is not one of {list(grades)}")
        counts[index[a]][index[b]] += 1
    return counts


def weighted_kappa(first: Sequence[int | None], second: Sequence[int | None], *,
                   grades: Sequence[int], weighting: Weighting = None) -> float | None:
    """Cohen's κ (Cohen 1960), or weighted κ (Cohen 1968) for an ordinal scale.

    With o_ij the observed and e_ij = o_i· o_·j the chance proportions over the scale's k
    grades, and disagreement weights w_ij = 1 - δ_ij (unweighted), |i - j| / (k - 1)
    (linear) or ((i - j) / (k - 1))² (quadratic):
        κ = 1 - Σ w_ij o_ij / Σ w_ij e_ij,
    which unweighted is (p_o - p_e) / (1 - p_e). None without pairs, or when chance
    disagreement is 0 (both graders used one and the same grade only).
    """
    counts = np.array(confusion_matrix(first, second, grades=grades), dtype=np.float64)
    total = counts.sum()
    if total == 0 or len(grades) < 2:
        return None
    observed = counts / total
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0))
    positions = np.arange(len(grades), dtype=np.float64)
    distance = np.abs(positions[:, None] - positions[None, :]) / (len(grades) - 1)
    if weighting is None:
        weights = (distance > 0).astype(np.float64)
    elif weighting == "linear":
        weights = distance
    elif weighting == "quadratic":
        weights = distance**2
    else:
        raise ValueError(f"unknown weighting {weighting!r} (linear, quadratic or None)")
    chance = float((weights * expected).sum())
    # Below rounding noise, chance disagreement is 0: κ is undefined, not a huge number.
    if chance <= 1e-12:
        return None
    return 1.0 - float((weights * observed).sum()) / chance


def cohen_kappa(first: Sequence[int | None], second: Sequence[int | None]) -> float | None:
    """Unweighted Cohen's κ over the grades either grader used (unused grades of the
    scale change nothing unweighted). None when no item was graded by both or p_e = 1."""
    used = sorted({grade for pair in _pairs(first, second) for grade in pair})
    return weighted_kappa(first, second, grades=used)


def exact_match_rate(first: Sequence[int | None], second: Sequence[int | None]) -> float | None:
    """Share of items both graded on which they gave the same grade; None without pairs."""
    pairs = _pairs(first, second)
    return sum(a == b for a, b in pairs) / len(pairs) if pairs else None


@dataclass(frozen=True)
class GradeAgreement:
    """Everything calibration shows about two graders' grades on one scale."""

    pair_count: int
    exact_match_rate: float | None
    kappa: float | None
    linear_kappa: float | None
    quadratic_kappa: float | None
    confusion: list[list[int]]
    """Rows: the first grader's grade; columns: the second's; both in the scale's order."""


def grade_agreement(first: Sequence[int | None], second: Sequence[int | None], *,
                    grades: Sequence[int]) -> GradeAgreement:
    return GradeAgreement(
        pair_count=len(_pairs(first, second)),
        exact_match_rate=exact_match_rate(first, second),
        kappa=weighted_kappa(first, second, grades=grades),
        linear_kappa=weighted_kappa(first, second, grades=grades, weighting="linear"),
        quadratic_kappa=weighted_kappa(first, second, grades=grades, weighting="quadratic"),
        confusion=confusion_matrix(first, second, grades=grades),
    )


def _average_ranks(values: np.ndarray) -> np.ndarray:
    """Ranks 1..n, ties sharing the mean of the ranks they span."""
    order = np.argsort(values, kind="mergesort")
    ranks = np.empty(values.size, dtype=np.float64)
    sorted_values = values[order]
    start = 0
    while start < values.size:
        stop = start
        while stop + 1 < values.size and sorted_values[stop + 1] == sorted_values[start]:
            stop += 1
        ranks[order[start:stop + 1]] = (start + stop) / 2.0 + 1.0
        start = stop + 1
    return ranks


def spearman(first: Sequence[float], second: Sequence[float]) -> float | None:
    """Spearman's rho: Pearson's correlation of the average ranks (ties allowed).
    None for fewer than 2 pairs or when either series is constant."""
    a, b = np.asarray(first, dtype=np.float64), np.asarray(second, dtype=np.float64)
    if a.size != b.size:
        raise ValueError("first and second must have the same length")
    if a.size < 2:
        return None
    ranks_a, ranks_b = _average_ranks(a), _average_ranks(b)
    ranks_a -= ranks_a.mean()
    ranks_b -= ranks_b.mean()
    spread = math.sqrt(float((ranks_a**2).sum()) * float((ranks_b**2).sum()))
    return float((ranks_a * ranks_b).sum()) / spread if spread > 0 else None


def kendall_tau(first: Sequence[float], second: Sequence[float]) -> float | None:
    """Kendall's τ-b (Kendall 1945): (n_c - n_d) / √((n_0 - n_1)(n_0 - n_2)), n_0 = n(n-1)/2,
    n_1 and n_2 the pairs tied in the first and second series. None for fewer than 2
    pairs or when either series is constant. O(n²) time, O(n) memory: fine for keywords."""
    a, b = np.asarray(first, dtype=np.float64), np.asarray(second, dtype=np.float64)
    if a.size != b.size:
        raise ValueError("first and second must have the same length")
    count = a.size
    if count < 2:
        return None
    score = tied_a = tied_b = 0
    for i in range(count - 1):
        sign_a = np.sign(a[i + 1:] - a[i])
        sign_b = np.sign(b[i + 1:] - b[i])
        score += int((sign_a * sign_b).sum())
        tied_a += int((sign_a == 0).sum())
        tied_b += int((sign_b == 0).sum())
    pair_count = count * (count - 1) // 2
    denominator = math.sqrt((pair_count - tied_a) * (pair_count - tied_b))
    return score / denominator if denominator > 0 else None


@dataclass(frozen=True)
class MetricAgreement:
    """One metric computed from two graders' grades, over keywords both have a value for."""

    keyword_count: int
    mean_delta: float | None
    """mean(second - first)."""
    spearman: float | None
    kendall: float | None

    @property
    def correlation_warning(self) -> str:
        """Why the rank correlations say little, or "": see correlation_warning."""
        return correlation_warning(self.keyword_count)


MIN_CORRELATION_KEYWORDS = 5
"""Fewer keywords than this and a rank correlation is mostly chance: with 4 keywords a
random order gives |Kendall's τ| ≥ 2/3 one time in 3 (8 of the 24 orders)."""


def correlation_warning(keyword_count: int) -> str:
    """A warning for Spearman's and Kendall's over `keyword_count` keywords: "" from
    MIN_CORRELATION_KEYWORDS on (and for none, where both are null anyway)."""
    if 0 < keyword_count < MIN_CORRELATION_KEYWORDS:
        return (f"Over only {keyword_count} keyword{'s' if keyword_count != 1 else ''} "
                f"(fewer than {MIN_CORRELATION_KEYWORDS}): Spearman and Kendall say "
                "little; chance alone often gives a high value.")
    return ""


def metric_agreement(first: Mapping[Hashable, float | None],
                     second: Mapping[Hashable, float | None]) -> MetricAgreement:
    """Per-keyword values of a metric with the first grader's grades and with the second's
    (e.g. humans, judge): how far apart on average and how alike they rank keywords."""
    common = [key for key in first if key in second
              and _present(first[key]) and _present(second[key])]
    a = np.array([first[key] for key in common], dtype=np.float64)
    b = np.array([second[key] for key in common], dtype=np.float64)
    return MetricAgreement(
        keyword_count=len(common),
        mean_delta=float((b - a).mean()) if common else None,
        spearman=spearman(a, b),
        kendall=kendall_tau(a, b),
    )


def _present(value: float | None) -> bool:
    return value is not None and not math.isnan(value)
