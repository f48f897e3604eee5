"""Exact running sums of one metric's keyword values per segment, plain and traffic-weighted
(docs/METRICS.md, "Weighted means and segments"), moved value by value so that each
segment's mean and bounds are the ones `weighted.weighted_mean` gives over every stored
value, bit for bit, at any number of keywords.

A keyword counts in the segment of every keyword (`EVERY`) and in one segment per tag it
carries; in each, once in the plain sums (weight 1, so the plain mean is
`mean_over_keywords`) and once in the weighted sums (its weight; a weight of 0 leaves it
out). Totals are in units of 2**-1074 (metrics_engine.exact_sum), so adding and taking
away in any order is exact.
"""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields

from metrics_engine.exact_sum import exact_units, mean_from_total

EVERY = ""  # the segment of every keyword

# (segment, weighted): a segment is a tag, or EVERY.
SegmentKey = tuple[str, bool]


@dataclass
class SegmentTotals:
    """One segment's sums: `*_total` Σ wᵢ·xᵢ in exact units, `*_weight` Σ wᵢ over the
    keywords whose x is not null (and whose weight is above 0); `value_count` how many
    keywords have a value; `inexact_count` how many of the counted keywords' bounds are
    not exact."""

    value_total: int = 0
    value_count: int = 0
    value_weight: int = 0
    lower_total: int = 0
    lower_weight: int = 0
    upper_total: int = 0
    upper_weight: int = 0
    inexact_count: int = 0

    def move(self, sign: int, weight: int, value: float | None, lower: float | None,
             upper: float | None, bounds_exact: bool) -> None:
        """Add (sign 1) or take away (sign -1) one keyword's values counted `weight`
        times. OverflowError/ValueError for a value no exact sum holds (inf, NaN)."""
        if weight <= 0:
            return
        if value is not None:
            self.value_total += sign * weight * exact_units(value)
            self.value_count += sign
            self.value_weight += sign * weight
        if lower is not None:
            self.lower_total += sign * weight * exact_units(lower)
            self.lower_weight += sign * weight
        if upper is not None:
            self.upper_total += sign * weight * exact_units(upper)
            self.upper_weight += sign * weight
        if not bounds_exact:
            self.inexact_count += sign

    @property
    def empty(self) -> bool:
        return not any(getattr(self, field.name) for field in fields(self))

    @property
    def mean(self) -> float | None:
        return mean_from_total(self.value_total, self.value_weight)

    @property
    def lower(self) -> float | None:
        return mean_from_total(self.lower_total, self.lower_weight)

    @property
    def upper(self) -> float | None:
        return mean_from_total(self.upper_total, self.upper_weight)

    @property
    def bounds_exact(self) -> bool:
        return self.inexact_count == 0


def keyword_shares(weight: int, tags: Sequence[str]) -> list[tuple[SegmentKey, int]]:
    """Each segment a keyword counts in, with the weight it counts there."""
    shares: list[tuple[SegmentKey, int]] = []
    for segment in (EVERY, *tags):
        shares.append(((segment, False), 1))
        shares.append(((segment, True), weight))
    return shares


def segment_totals(rows: Iterable[tuple[int, Sequence[str], float | None, float | None,
                                        float | None, bool]]
                   ) -> dict[SegmentKey, SegmentTotals]:
    """The sums of every segment from every keyword's (weight, tags, value, lower, upper,
    bounds_exact); the plain and weighted EVERY segments always present."""
    totals: dict[SegmentKey, SegmentTotals] = {(EVERY, False): SegmentTotals(),
                                               (EVERY, True): SegmentTotals()}
    for weight, tags, value, lower, upper, exact in rows:
        for key, share in keyword_shares(weight, tags):
            totals.setdefault(key, SegmentTotals()).move(1, share, value, lower, upper, exact)
    return totals
