"""The distribution chart's data of the evaluation dashboard: one configured metric's
per-keyword values, or their histogram from the recompute's counts.
"""


from django.db.models import Q

from evaluations.models import EvaluationMetric
from metrics.models import DashboardCount, KeywordMetricValue
from metrics.recompute import aggregates


def metric_distribution(*, config: EvaluationMetric) -> list[float]:
    """The non-null per-keyword values of one configured metric."""
    return list(KeywordMetricValue.objects.filter(metric=config, value__isnull=False)
                .values_list("value", flat=True))


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
