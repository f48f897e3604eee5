"""Reading and setting the recompute state the metrics app keeps (metrics.models), as tests
see it: a keyword's mark, a metric's stored mean, an evaluation's progress and error, with
the defaults a missing row stands for."""

from collections.abc import Iterable

from evaluations.models import Evaluation, EvaluationMetric, Keyword
from metrics.models import EvaluationRecomputeState, KeywordRecomputeMark, MetricMean


def _pk(row) -> int:
    return row if isinstance(row, int) else row.pk


def mark_of(keyword: Keyword | int) -> KeywordRecomputeMark:
    """The keyword's mark as stored now; version 0 and clean when it has none."""
    mark = KeywordRecomputeMark.objects.filter(keyword_id=_pk(keyword)).first()
    return mark or KeywordRecomputeMark(keyword_id=_pk(keyword))


def marks_set(keywords: Iterable[Keyword | int], **fields) -> None:
    """Give each keyword's mark these fields (as if grades or runs had), creating it."""
    for keyword_id in map(_pk, keywords):
        evaluation_id = Keyword.objects.values_list("evaluation_id", flat=True).get(
            pk=keyword_id)
        KeywordRecomputeMark.objects.update_or_create(
            keyword_id=keyword_id, defaults={"evaluation_id": evaluation_id, **fields})


def dirty_marks(**filters):
    """The marks of dirty keywords, filtered like KeywordRecomputeMark.objects.filter."""
    return KeywordRecomputeMark.objects.filter(dirty_since__isnull=False, **filters)


def mean_of(config: EvaluationMetric | int) -> MetricMean:
    """The metric's stored mean; no value over 0 keywords when never computed."""
    mean = MetricMean.objects.filter(metric_id=_pk(config)).first()
    return mean or MetricMean(metric_id=_pk(config))


def state_of(evaluation: Evaluation | int) -> EvaluationRecomputeState:
    """The evaluation's stored progress and recompute error; 0 % and none by default."""
    state = EvaluationRecomputeState.objects.filter(evaluation_id=_pk(evaluation)).first()
    return state or EvaluationRecomputeState(evaluation_id=_pk(evaluation))
