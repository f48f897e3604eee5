"""The distribution chart of the evaluation dashboard: one configured metric's per-keyword
values over the chosen keywords, binned from the recompute's counts, in SQL for a segment,
or from the values themselves (over a segment, with their weights when weighted).
"""

from dataclasses import dataclass

import numpy as np
from django.db.models import Q

from evaluations.models import EvaluationMetric
from metrics import queries
from metrics.models import DashboardCount, KeywordMetricValue
from metrics.queries import Tagged
from metrics.recompute import aggregates
from metrics.reports import charts
from metrics.reports.segments import EVERY_KEYWORD, SegmentChoice
from metrics.selectors import metric_label


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
    their weights' sum; `keyword_count` keywords with a value, `weight_sum` theirs;
    `segment_count` every keyword of the segment, with a value or not."""

    bars: list[int]
    keyword_count: int
    weight_sum: int
    weighted: bool
    segment_count: int


def segment_histogram(*, config: EvaluationMetric, choice: SegmentChoice = EVERY_KEYWORD
                      ) -> SegmentHistogram | None:
    """The chosen keywords' histogram of the metric, counted in one query; None when some
    value lies outside [0, 1] (the page then bins segment_distribution over the values'
    own range)."""
    rows = queries.segment_histogram_rows(
        evaluation_id=config.evaluation_id, metric_id=config.pk, tag=choice.segment,
        inner_edges=[float(edge) for edge in np.linspace(0.0, 1.0, aggregates.BINS + 1)[1:-1]])
    valued = [(bin_, count, weight) for bin_, count, weight in rows if bin_ is not None]
    if any(bin_ < 0 for bin_, _, _ in valued):
        return None
    bars = [0] * aggregates.BINS
    for bin_, count, weight in valued:
        bars[bin_] = weight if choice.weighted else count
    return SegmentHistogram(bars, sum(count for _, count, _ in valued),
                            sum(weight for _, _, weight in valued), choice.weighted,
                            sum(count for _, count, _ in rows))


@dataclass(frozen=True)
class DistributionChart:
    config: EvaluationMetric
    count: int  # keywords with a value
    weighted: bool  # each bar the traffic (Σ weight) of its keywords
    weight_sum: int | None
    svg: str  # escaped by charts: the page may mark it safe
    # Every keyword the chart chose from, with a value or not, when its statement counted
    # them (a segment or weights): the keyword table's count then needs no query.
    segment_count: int | None = None


def distribution_chart(*, config: EvaluationMetric, choice: SegmentChoice = EVERY_KEYWORD
                       ) -> DistributionChart:
    """The histogram of one metric over the chosen keywords: from the recompute's counts for
    every keyword when it has them, counted in SQL for a segment or weights, else binned
    from the values (over the values' own range for the unbounded metrics, CG and DCG)."""
    label = f"{metric_label(config)} over {choice.label}"
    binned = metric_histogram(config=config) if choice.everything_plain else None
    if binned is not None:
        return DistributionChart(config, sum(binned), False, None, charts.histogram_svg(
            binned, charts.unit_edges(len(binned)), label=label))
    counted = None if choice.everything_plain else segment_histogram(config=config,
                                                                     choice=choice)
    if counted is not None:
        return DistributionChart(
            config, counted.keyword_count, counted.weighted, counted.weight_sum,
            charts.histogram_svg(counted.bars, charts.unit_edges(len(counted.bars)),
                                 label=label), counted.segment_count)
    if choice.everything_plain:
        values, weights = metric_distribution(config=config), None
    else:
        values, weights = segment_distribution(config=config, choice=choice)
    # Most metrics live in [0, 1]; the unbounded ones (CG, DCG) use their own range.
    bounded = all(0.0 <= v <= 1.0 for v in values)
    return DistributionChart(
        config, len(values), weights is not None,
        sum(weights) if weights is not None else None,
        charts.histogram(values, bins=10, lo=0.0 if bounded else None,
                         hi=1.0 if bounded else None, label=label, weights=weights))
