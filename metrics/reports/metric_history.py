"""A search model's history: each metric's value over the model's finished evaluations, over
every keyword or over a segment, weighted by traffic or not (metrics.reports.segments)."""

from dataclasses import dataclass, field

from evaluations.models import Evaluation, EvaluationMetric, SearchModel
from metrics.reports.segments import EVERY_KEYWORD, SegmentChoice, segment_means_of
from metrics.selectors import MetricKey, metric_key, metric_key_label


@dataclass(frozen=True)
class MetricHistory:
    key: MetricKey
    label: str
    points: list[tuple[Evaluation, float | None, int]]  # evaluation, value, keyword count
    # Each point's configured metric (its stored values give the point's interval).
    configs: list[EvaluationMetric] = field(default_factory=list)
    # Each point's bounds under missing grades: the configs' own over every keyword, the
    # segment's otherwise.
    bounds: list[tuple[float | None, float | None]] = field(default_factory=list)


@dataclass(frozen=True)
class ModelHistory:
    histories: list[MetricHistory]
    # The tags the model's finished evaluations carry (their stored segment means), in
    # tag_order: what the page offers to choose.
    tags: list[str]


def model_history(*, model: SearchModel, choice: SegmentChoice = EVERY_KEYWORD
                  ) -> ModelHistory:
    """Each metric's value over the model's finished evaluations, oldest first: the stored
    mean over every keyword, or the chosen segment's stored mean (one query more, which
    also finds the tags)."""
    configs = list(EvaluationMetric.objects.filter(
        evaluation__model=model, evaluation__status=Evaluation.Status.FINISHED,
    ).with_stored_mean().select_related("evaluation").order_by(
        "evaluation__finished_at", "evaluation_id", "position", "id"))
    means = segment_means_of(configs)
    series: dict[MetricKey, list] = {}
    configs_of: dict[MetricKey, list[EvaluationMetric]] = {}
    bounds_of: dict[MetricKey, list[tuple[float | None, float | None]]] = {}
    for config in configs:
        key = metric_key(config)
        if choice.everything_plain:
            point, bounds = (config.value, config.keyword_count), (config.lower, config.upper)
        else:
            mean = means.get(config.pk, choice)
            point = (mean.value, mean.keyword_count) if mean else (None, 0)
            bounds = (mean.lower, mean.upper) if mean else (None, None)
        series.setdefault(key, []).append((config.evaluation, *point))
        configs_of.setdefault(key, []).append(config)
        bounds_of.setdefault(key, []).append(bounds)
    return ModelHistory(
        histories=[MetricHistory(key, metric_key_label(key), points, configs_of[key],
                                 bounds_of[key]) for key, points in series.items()],
        tags=means.tags)
