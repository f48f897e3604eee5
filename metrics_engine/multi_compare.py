"""Comparing several evaluations at once: per-evaluation summaries, tests against a
reference, a randomized Tukey HSD over all pairs, and top-k overlap of result lists.

Pure Python + numpy like the rest of the core. A value matrix has one row per keyword and
one column per evaluation; NaN = no value (the keyword is missing or its metric undefined).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

from metrics_engine.agreement import _present
from metrics_engine.batch import mean_over_keywords
from metrics_engine.statistics import bootstrap_ci, holm_adjust, randomization_test


@dataclass(frozen=True)
class MetricSummary:
    """One evaluation's mean of one metric over the compared keywords."""

    mean: float | None
    ci: tuple[float, float] | None
    present_count: int
    keyword_count: int

    @property
    def coverage(self) -> float | None:
        """Share of the compared keywords that have a value; None without keywords."""
        return self.present_count / self.keyword_count if self.keyword_count else None


def metric_summary(values: Sequence[float | None], *, resamples: int = 10_000,
                   seed: int = 0) -> MetricSummary:
    """Mean of the present values, its percentile bootstrap 95 % interval
    (`statistics.bootstrap_ci`, seeded) and how many of the values are present."""
    present = [float(v) for v in values if _present(v)]
    return MetricSummary(
        mean=mean_over_keywords(np.array(present, dtype=np.float64))[0] if present else None,
        ci=bootstrap_ci(present, resamples=resamples, seed=seed) if present else None,
        present_count=len(present), keyword_count=len(values),
    )


@dataclass(frozen=True)
class ReferenceTest:
    """Column `index` against the reference over the keywords both have a value for."""

    index: int
    keyword_count: int
    mean_delta: float | None
    p: float | None
    p_adjusted: float | None


def reference_tests(matrix: np.ndarray, *, reference: int, resamples: int = 10_000,
                    seed: int = 0) -> list[ReferenceTest]:
    """Each other column against column `reference`: mean(other - reference) and the
    two-sided sign-flip randomization p over the keywords both have a value for, then the
    p-values Holm-adjusted over the N - 1 comparisons. In column order, the reference
    left out."""
    matrix = np.asarray(matrix, dtype=np.float64)
    raw: list[tuple[int, int, float | None, float | None]] = []
    for index in range(matrix.shape[1]):
        if index == reference:
            continue
        both = ~np.isnan(matrix[:, index]) & ~np.isnan(matrix[:, reference])
        deltas = matrix[both, index] - matrix[both, reference]
        if deltas.size == 0:
            raw.append((index, 0, None, None))
            continue
        raw.append((index, int(deltas.size), mean_over_keywords(deltas)[0],
                    randomization_test(deltas, resamples=resamples, seed=seed)))
    adjusted = holm_adjust([p for *_, p in raw])
    return [ReferenceTest(index, count, delta, p, p_adj)
            for (index, count, delta, p), p_adj in zip(raw, adjusted, strict=True)]


@dataclass(frozen=True)
class PairTest:
    """Columns i < j over the keywords every column has a value for (Tukey HSD)."""

    i: int
    j: int
    mean_delta: float  # mean(j - i)
    p: float


def tukey_randomized(matrix: np.ndarray, *, resamples: int = 10_000,
                     seed: int = 0) -> tuple[int, list[PairTest]]:
    """Randomized Tukey HSD (Carterette 2012, "Multiple testing in statistical analysis of
    systems-based information retrieval experiments"): over the keywords with a value in
    every column, each resample permutes the evaluation labels within each keyword and
    records the range (max - min) of the column means, i.e. the largest |mean difference|
    over all pairs. Pair (i, j) gets p = (1 + #{range ≥ |mean_j - mean_i|}) / (1 +
    resamples): the family-wise error is controlled by using the maximum. Returns the
    number of complete keywords and one test per pair i < j, in (i, j) order; no pairs
    without a complete keyword or with fewer than two columns."""
    matrix = np.asarray(matrix, dtype=np.float64)
    columns = matrix.shape[1] if matrix.ndim == 2 else 0
    complete = matrix[~np.isnan(matrix).any(axis=1)] if columns else matrix
    count = int(complete.shape[0]) if columns else 0
    if count == 0 or columns < 2:
        return count, []
    means = complete.mean(axis=0)
    pairs = [(i, j) for i in range(columns) for j in range(i + 1, columns)]
    observed = np.array([abs(means[j] - means[i]) for i, j in pairs])
    generator = np.random.default_rng(seed)
    extreme = np.zeros(len(pairs), dtype=np.int64)
    block = max(1, 2_000_000 // (count * columns))
    done = 0
    while done < resamples:
        size = min(block, resamples - done)
        order = generator.random((size, count, columns)).argsort(axis=2)
        shuffled = np.take_along_axis(np.broadcast_to(complete, order.shape), order, axis=2)
        column_means = shuffled.mean(axis=1)
        ranges = column_means.max(axis=1) - column_means.min(axis=1)
        # A tolerance so the observed arrangement itself always counts as extreme.
        tolerance = 1e-12 * np.maximum(observed, 1.0)
        extreme += (ranges[:, None] >= observed[None, :] - tolerance[None, :]).sum(axis=0)
        done += size
    return count, [PairTest(i, j, float(means[j] - means[i]), (int(e) + 1) / (resamples + 1))
                   for (i, j), e in zip(pairs, extreme, strict=True)]


def jaccard(a: Sequence[Hashable], b: Sequence[Hashable], *, k: int) -> float:
    """Jaccard of the documents in the top k of each list: |A and B| / |A or B|;
    both empty → 1."""
    first, second = set(list(a)[:k]), set(list(b)[:k])
    union = first | second
    return len(first & second) / len(union) if union else 1.0


def entered_left(reference: Sequence[Hashable], other: Sequence[Hashable], *,
                 k: int) -> tuple[list[Hashable], list[Hashable]]:
    """Documents in the top k of `other` but not of `reference` (entered, in `other`'s
    order) and in the reference's top k but not `other`'s (left, in the reference's)."""
    first, second = list(reference)[:k], list(other)[:k]
    first_set, second_set = set(first), set(second)
    entered = [doc for doc in dict.fromkeys(second) if doc not in first_set]
    left = [doc for doc in dict.fromkeys(first) if doc not in second_set]
    return entered, left
