"""The distribution chart's data of the evaluation dashboard: one configured metric's
per-keyword values (over a segment, with their weights when weighted), or their histogram
from the recompute's counts.
"""

from dataclasses import dataclass

import numpy as np
from django.db.models import Q

from evaluations.models import EvaluationMetric
from metrics import queries
from metrics.models import DashboardCount, KeywordMetricValue
from metrics.queries import Tagged
from metrics.recompute import aggregates
from metrics.reports.segments import EVERY_KEYWORD, SegmentChoice


def metric_distribution(*, config: EvaluationMetric) -> list[float]:
    """The non-null per-keyword values of one configured metric."""
    return list(KeywordMetricValue.objects.filter(metric=config, value__isnull=False)
                .values_list("value", flat=True))


def segment_distribution(*, config: EvaluationMetric, choice: SegmentChoice = EVERY_KEYWORD
                         ) -> tuple[list[float], list[int] | None]:
    """The non-null values of one configured metric over the chosen segment's keywords,
    and, when the choice is weighted, each value's keyword weight (else None). One query."""
    rows = KeywordMetricValue.objects.filter(metric=config, value__isnull=False)
    if choice.segment:
        rows = rows.filter(Tagged(choice.segment, through="keyword__"))
    if not choice.weighted:
        return list(rows.values_list("value", flat=True)), None
    pairs = list(rows.values_list("value", "keyword__weight"))
    return [value for value, _ in pairs], [weight for _, weight in pairs]


def metric_histogram(*, config: EvaluationMetric) -> list[int] | None:
    """How many of the metric's non-null keyword values fall in each tenth of [0, 1]
    (numpy.histogram's bins), from the recompute's counts; None when they are not built or
    some value lies outside [0, 1] (the page then bins metric_distribution over the
    values' own range)."""
    prefix = f"b:{config.pk}:"
    stored = dict(DashboardCount.objects.filter(
        Q(key=aggregates.BUILT) | Q(key__startswith=prefix), evaluation_id=config.evaluation_id,
    ).values_list("key", "count"))
    if aggregates.BUILT not in stored or stored.get(f"{prefix}-1"):
        return None
    return [stored.get(f"{prefix}{index}", 0) for index in range(aggregates.BINS)]


@dataclass(frozen=True)
class SegmentHistogram:
    """The distribution of one metric over a segment's keywords, in the tenths of [0, 1]
    (numpy.histogram's bins, as metric_histogram): per bin the keywords, or with `weighted`
    their weights' sum; `keyword_count` keywords with a value, `weight_sum` theirs."""

    bars: list[int]
    keyword_count: int
    weight_sum: int
    weighted: bool


def segment_histogram(*, config: EvaluationMetric, choice: SegmentChoice = EVERY_KEYWORD
                      ) -> SegmentHistogram | None:
    """The chosen keywords' histogram of the metric, counted in one query; None when some
    value lies outside [0, 1] (the page then bins segment_distribution over the values'
    own range)."""
    rows = queries.segment_histogram_rows(
        metric_id=config.pk, tag=choice.segment,
        inner_edges=[float(edge) for edge in np.linspace(0.0, 1.0, aggregates.BINS + 1)[1:-1]])
    if any(bin_ < 0 for bin_, _, _ in rows):
        return None
    bars = [0] * aggregates.BINS
    for bin_, count, weight in rows:
        bars[bin_] = weight if choice.weighted else count
    return SegmentHistogram(bars, sum(count for _, count, _ in rows),
                            sum(weight for _, _, weight in rows), choice.weighted)
