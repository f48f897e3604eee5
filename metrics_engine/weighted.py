"""Weighted means and traffic segments (docs/METRICS.md, "Weighted means and segments").

A keyword's weight is how often people ask it: a non-negative integer, 1 when not given.
The weighted mean is R(Σ wᵢ·vᵢ) / Σ wᵢ over the keywords with a value and a weight above 0,
each product exact and the sum rounded once, so with every weight 1 it is
`mean_over_keywords` bit for bit.
"""

from collections.abc import Iterable, Sequence

import numpy as np

from metrics_engine.errors import MetricInputError
from metrics_engine.exact_sum import exact_units, sum_to_float
from metrics_engine.scales import is_integer

DEFAULT_CUTS = (50, 80)
HEAD, TORSO, TAIL = "head", "torso", "tail"


def validate_weights(weights: object, count: int) -> list[int]:
    """The weights as ints, one non-negative integer per keyword (an integer as grades and k
    read it: `3.0` is 3, `true` and `"3"` are not); else an error naming `weights`."""
    if not isinstance(weights, list | tuple):
        raise MetricInputError("weights", "must be a list of non-negative integers")
    if len(weights) != count:
        raise MetricInputError("weights", f"has {len(weights)} weights for {count} keywords")
    for index, weight in enumerate(weights):
        if not is_integer(weight) or weight < 0:
            raise MetricInputError(
                "weights", f"item {index}: {weight!r} is not a non-negative integer")
    return [int(weight) for weight in weights]


def weighted_mean(values: Iterable[float | None], weights: Sequence[int]) -> float | None:
    """R(Σ wᵢ·vᵢ) / Σ wᵢ over the keywords whose value is not null (nor NaN) and whose
    weight is above 0; None when none is."""
    total, weight_sum = 0, 0
    for value, weight in zip(values, weights, strict=True):
        if value is None or weight <= 0 or np.isnan(value):
            continue
        total += exact_units(float(value)) * weight
        weight_sum += weight
    return sum_to_float(total) / weight_sum if weight_sum else None


def validate_cuts(cuts: object) -> tuple[int, int]:
    """Cut points a < b in percent, integers with 0 ≤ a < b ≤ 100; else an error naming
    `cuts`."""
    if (not isinstance(cuts, list | tuple) or len(cuts) != 2
            or not all(is_integer(cut) for cut in cuts)
            or not 0 <= cuts[0] < cuts[1] <= 100):
        raise MetricInputError("cuts", "must be two integers a < b with 0 ≤ a < b ≤ 100")
    return int(cuts[0]), int(cuts[1])


def traffic_segments(weights: Sequence[int],
                     cuts: tuple[int, int] = DEFAULT_CUTS) -> list[str]:
    """Each keyword's traffic segment, in the given order: sorted by weight (largest first,
    ties in their given order), a keyword is head while the weight before it is under a %
    of all, torso under b %, tail after; all tail when there is no traffic."""
    low, high = cuts
    total = sum(weights)
    segments = [TAIL] * len(weights)
    if total == 0:
        return segments
    before = 0
    for index in sorted(range(len(weights)), key=lambda i: -weights[i]):
        if 100 * before < low * total:
            segments[index] = HEAD
        elif 100 * before < high * total:
            segments[index] = TORSO
        before += weights[index]
    return segments
