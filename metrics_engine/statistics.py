"""Statistics for the dashboards: coverage, agreement, paired comparison, bootstrap.

Pure Python + numpy like the rest of the core. Grades here are already on one scale
(transform with stage 0 first when needed); None = an empty slot. Every function returns
None where its statistic is undefined rather than a made-up number.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

# Two graders' agreement lives in agreement.py; cohen_kappa stays importable from here.
from metrics_engine.agreement import _present
from metrics_engine.agreement import cohen_kappa as cohen_kappa
from metrics_engine.batch import mean_over_keywords
from metrics_engine.weighted import validate_weights

SlotGrades = Sequence[int | None]
"""The slots of one snapshot; None = not graded yet."""


def coverage(snapshots: Sequence[SlotGrades]) -> float | None:
    """Graded slots / slots over every snapshot's slots; None when there is no slot."""
    slot_count = sum(len(slots) for slots in snapshots)
    if slot_count == 0:
        return None
    graded_count = sum(grade is not None for slots in snapshots for grade in slots)
    return graded_count / slot_count


def binary_tie_rate(snapshots: Sequence[SlotGrades]) -> float | None:
    """Share of graded snapshots whose binary majority vote is a tie (stage 1 → null).

    Binary grades 0/1; a snapshot counts when it has at least one grade, and is a tie when
    it has as many 0s as 1s. None when no snapshot has a grade.
    """
    graded_count = tie_count = 0
    for slots in snapshots:
        ones = sum(grade == 1 for grade in slots if grade is not None)
        zeros = sum(grade == 0 for grade in slots if grade is not None)
        if ones + zeros:
            graded_count += 1
            tie_count += ones == zeros
    return tie_count / graded_count if graded_count else None


def fleiss_kappa(snapshots: Sequence[SlotGrades]) -> float | None:
    """Fleiss' kappa (Fleiss 1971) of the graders' agreement over snapshots.

    Only fully graded snapshots with the most common slot count n ≥ 2 take part (the
    statistic assumes n ratings per subject). With n_ij the ratings of snapshot i in
    category j, N snapshots:
        P_i = (Σ_j n_ij² - n) / (n(n - 1)),  P̄ = mean P_i,
        p_j = Σ_i n_ij / (N n),              P̄_e = Σ_j p_j²,
        κ = (P̄ - P̄_e) / (1 - P̄_e).
    None when fewer than one such snapshot or P̄_e = 1 (every rating in one category).
    """
    complete = [list(slots) for slots in snapshots if slots and None not in slots]
    if not complete:
        return None
    lengths = [len(slots) for slots in complete]
    rater_count = max(set(lengths), key=lengths.count)
    rows = [slots for slots in complete if len(slots) == rater_count]
    if rater_count < 2:
        return None
    categories = sorted({grade for slots in rows for grade in slots})
    counts = np.array([[slots.count(category) for category in categories] for slots in rows])
    subject_count = counts.shape[0]
    agreement = ((counts**2).sum(axis=1) - rater_count) / (rater_count * (rater_count - 1))
    shares = counts.sum(axis=0) / (subject_count * rater_count)
    expected = float((shares**2).sum())
    if expected >= 1.0:
        return None
    return (float(agreement.mean()) - expected) / (1.0 - expected)


CountedSnapshots = Sequence[tuple[SlotGrades, int]]
"""Distinct snapshots' slot grades with how many snapshots have them: what the dashboard
stores, so that its statistics cost the number of distinct patterns, not of snapshots."""


def coverage_counted(patterns: CountedSnapshots) -> float | None:
    """coverage() of the snapshots the patterns stand for."""
    slot_count = sum(len(slots) * n for slots, n in patterns)
    if slot_count == 0:
        return None
    return sum(sum(g is not None for g in slots) * n for slots, n in patterns) / slot_count


def binary_tie_rate_counted(patterns: CountedSnapshots) -> float | None:
    """binary_tie_rate() of the snapshots the patterns stand for."""
    graded_count = tie_count = 0
    for slots, n in patterns:
        ones = sum(grade == 1 for grade in slots if grade is not None)
        zeros = sum(grade == 0 for grade in slots if grade is not None)
        if ones + zeros:
            graded_count += n
            tie_count += n * (ones == zeros)
    return tie_count / graded_count if graded_count else None


def fleiss_kappa_counted(patterns: CountedSnapshots) -> float | None:
    """fleiss_kappa() of the snapshots the patterns stand for: the same rater count (the
    most common among fully graded snapshots, the smallest on a tie), P̄ as the mean of
    P_i weighted by how many snapshots share them."""
    complete = [(list(slots), n) for slots, n in patterns if n and slots and None not in slots]
    if not complete:
        return None
    by_length: dict[int, int] = {}
    for slots, n in complete:
        by_length[len(slots)] = by_length.get(len(slots), 0) + n
    rater_count = max(sorted(by_length), key=by_length.__getitem__)
    rows = [(slots, n) for slots, n in complete if len(slots) == rater_count]
    if rater_count < 2:
        return None
    categories = sorted({grade for slots, _ in rows for grade in slots})
    counts = np.array([[slots.count(category) for category in categories] for slots, _ in rows])
    weights = np.array([n for _, n in rows], dtype=np.float64)
    subject_count = weights.sum()
    agreement = ((counts**2).sum(axis=1) - rater_count) / (rater_count * (rater_count - 1))
    shares = (counts * weights[:, None]).sum(axis=0) / (subject_count * rater_count)
    expected = float((shares**2).sum())
    if expected >= 1.0:
        return None
    return (float((agreement * weights).sum() / subject_count) - expected) / (1.0 - expected)


@dataclass(frozen=True)
class PairedComparison:
    """Evaluation B against evaluation A over their common non-null keywords."""

    keyword_count: int
    mean_a: float | None
    mean_b: float | None
    mean_delta: float | None
    """mean(b - a)."""
    wins: int
    """Keywords where B is higher."""
    losses: int
    ties: int
    t_test_p: float | None
    randomization_p: float | None


def paired_comparison(
    a: Mapping[Hashable, float | None],
    b: Mapping[Hashable, float | None],
    *,
    resamples: int = 10_000,
    seed: int = 0,
) -> PairedComparison:
    """Compare per-keyword values of two evaluations over keywords both have a value for.

    - paired t-test (Student 1908): t = mean(d) / (sd(d)/√n), df = n - 1, two-sided p;
      None for n < 2 or when sd(d) = 0 (t is undefined).
    - two-sided randomization (sign-flip) test (Fisher 1935; Smucker, Allan & Carterette
      2007): under H0 each d_i's sign is exchangeable; p = (1 + #{|mean(±d)| ≥ |mean(d)|})
      / (1 + resamples) over ``resamples`` seeded random sign vectors (the +1 keeps the
      estimate valid, Phipson & Smyth 2010). None for n = 0.
    """
    common = [
        key for key in a
        if key in b and _present(a[key]) and _present(b[key])
    ]
    first = np.array([a[key] for key in common], dtype=np.float64)
    second = np.array([b[key] for key in common], dtype=np.float64)
    deltas = second - first
    count = int(deltas.size)
    if count == 0:
        return PairedComparison(0, None, None, None, 0, 0, 0, None, None)
    return PairedComparison(
        keyword_count=count,
        mean_a=mean_over_keywords(first)[0],
        mean_b=mean_over_keywords(second)[0],
        mean_delta=mean_over_keywords(deltas)[0],
        wins=int((deltas > 0).sum()),
        losses=int((deltas < 0).sum()),
        ties=int((deltas == 0).sum()),
        t_test_p=paired_t_test(deltas),
        randomization_p=randomization_test(deltas, resamples=resamples, seed=seed),
    )


def paired_t_test(deltas: np.ndarray) -> float | None:
    """Two-sided p-value of the paired t-test on the differences (Student 1908)."""
    count = deltas.size
    if count < 2:
        return None
    spread = float(deltas.std(ddof=1))
    if spread == 0.0:
        return None
    statistic = float(deltas.mean()) / (spread / math.sqrt(count))
    freedom = count - 1
    # P(|T| ≥ |t|) = I_x(df/2, 1/2) with x = df / (df + t²) (Abramowitz & Stegun 26.7.1).
    return _regularized_incomplete_beta(freedom / 2.0, 0.5, freedom / (freedom + statistic**2))


def randomization_test(
    deltas: np.ndarray, *, resamples: int = 10_000, seed: int = 0
) -> float | None:
    """Two-sided sign-flip randomization test p-value of mean(d) = 0; seeded, reproducible."""
    count = deltas.size
    if count == 0:
        return None
    return _sign_flip_p(deltas, float(count), abs(float(deltas.mean())),
                        resamples=resamples, seed=seed)


def _sign_flip_p(terms: np.ndarray, total: float, observed: float, *, resamples: int,
                 seed: int) -> float:
    """(extreme + 1) / (resamples + 1): how often |Σ ±termᵢ| / total, signs drawn from the
    seed, reaches the observed |mean|."""
    generator = np.random.default_rng(seed)
    count = int(terms.size)
    extreme = 0
    # Blocks keep the sign matrix small for evaluations with many keywords.
    block = max(1, 2_000_000 // count)
    done = 0
    while done < resamples:
        size = min(block, resamples - done)
        signs = generator.integers(0, 2, size=(size, count), dtype=np.int8) * 2 - 1
        means = np.abs(signs @ terms) / total
        # A tolerance so that the observed arrangement itself always counts as extreme.
        extreme += int((means >= observed - 1e-12 * max(observed, 1.0)).sum())
        done += size
    return (extreme + 1) / (resamples + 1)


def bootstrap_ci(
    values: Sequence[float | None],
    *,
    confidence: float = 0.95,
    resamples: int = 10_000,
    seed: int = 0,
) -> tuple[float, float] | None:
    """Percentile bootstrap confidence interval of the mean (Efron & Tibshirani 1993, ch. 13).

    Nulls are left out like in the mean over keywords. Resample the n values with
    replacement ``resamples`` times (seeded), take each resample's mean, and return the
    (1 - confidence)/2 and (1 + confidence)/2 quantiles. None when no value is present.
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError("confidence must be in (0, 1)")
    present = np.array([value for value in values if _present(value)], dtype=np.float64)
    if present.size == 0:
        return None
    generator = np.random.default_rng(seed)
    means = np.empty(resamples)
    block = max(1, 2_000_000 // present.size)
    for start in range(0, resamples, block):
        stop = min(start + block, resamples)
        picks = generator.integers(0, present.size, size=(stop - start, present.size))
        means[start:stop] = present[picks].mean(axis=1)
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return float(low), float(high)


def weighted_randomization_test(
    deltas: np.ndarray, weights: Sequence[int], *, resamples: int = 10_000, seed: int = 0
) -> float | None:
    """randomization_test of the weighted mean Σ wᵢ·dᵢ / Σ wᵢ: each resample flips the
    signs of the dᵢ and compares the weighted mean of the flipped deltas with the observed
    one. Keywords of weight 0 take no part (docs/METRICS.md, "Weighted means and
    segments"); None when none is left. With every weight 1 it draws the same signs and
    answers randomization_test's p to the bit."""
    kept = _weighted_rows(deltas, weights)
    if kept is None:
        return None
    values, weight = kept
    weighted = values * weight
    total = float(weight.sum())
    return _sign_flip_p(weighted, total, abs(float(weighted.sum()) / total),
                        resamples=resamples, seed=seed)


def weighted_bootstrap_ci(
    values: Sequence[float | None],
    weights: Sequence[int],
    *,
    confidence: float = 0.95,
    resamples: int = 10_000,
    seed: int = 0,
) -> tuple[float, float] | None:
    """bootstrap_ci of the weighted mean: resample the keywords (each value with its
    weight) with replacement and take each resample's Σ wᵢ·vᵢ / Σ wᵢ. Nulls and keywords
    of weight 0 are left out; None when none is left. With every weight 1 it draws the same
    resamples and answers bootstrap_ci's interval to the bit."""
    if not 0.0 < confidence < 1.0:
        raise ValueError("confidence must be in (0, 1)")
    kept = _weighted_rows(values, weights)
    if kept is None:
        return None
    present, weight = kept
    weighted = present * weight
    generator = np.random.default_rng(seed)
    means = np.empty(resamples)
    block = max(1, 2_000_000 // present.size)
    for start in range(0, resamples, block):
        stop = min(start + block, resamples)
        picks = generator.integers(0, present.size, size=(stop - start, present.size))
        means[start:stop] = weighted[picks].sum(axis=1) / weight[picks].sum(axis=1)
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return float(low), float(high)


def _weighted_rows(values: Sequence[float | None] | np.ndarray, weights: Sequence[int]
                   ) -> tuple[np.ndarray, np.ndarray] | None:
    """The present values whose weight is above 0, and those weights as floats (exact up to
    2^53); None when none is. An error naming `weights` for a weight that is not a
    non-negative integer or a count that differs from the values'."""
    checked = validate_weights(list(weights), len(values))
    rows = [(float(value), weight) for value, weight in zip(values, checked, strict=True)
            if _present(value) and weight > 0]
    if not rows:
        return None
    return (np.array([value for value, _ in rows], dtype=np.float64),
            np.array([weight for _, weight in rows], dtype=np.float64))


def holm_adjust(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm-Bonferroni adjusted p-values (Holm 1979), in the order given; None stays None
    and does not count as a test.

    Sort the m present p-values ascending, p_(1) ≤ … ≤ p_(m); the adjusted value of the
    i-th is max over j ≤ i of min(1, (m - j + 1) · p_(j)), so the adjustment keeps the
    order and the family-wise error rate stays at the level tested.
    """
    present = sorted((value, index) for index, value in enumerate(p_values) if value is not None)
    count = len(present)
    adjusted: list[float | None] = [None] * len(p_values)
    running = 0.0
    for rank, (value, index) in enumerate(present):
        running = max(running, min(1.0, (count - rank) * value))
        adjusted[index] = running
    return adjusted


def _regularized_incomplete_beta(a: float, b: float, x: float) -> float:
    """I_x(a, b) by Lentz's continued fraction (Numerical Recipes, 3rd ed., §6.4)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    if x > (a + 1.0) / (a + b + 2.0):
        return 1.0 - _regularized_incomplete_beta(b, a, 1.0 - x)
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    fraction = d
    for m in range(1, 10_000):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            fraction *= c * d
        if abs(c * d - 1.0) < 1e-15:
            break
    return math.exp(log_front) * fraction / a
