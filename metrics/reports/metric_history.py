"""A search model's history: each metric's value over the model's finished evaluations."""

from dataclasses import dataclass, field

from evaluations.models import Evaluation, EvaluationMetric, SearchModel
from metrics.selectors import MetricKey, metric_key, metric_key_label


@dataclass(frozen=True)
class MetricHistory:
    key: MetricKey
    label: str
    points: list[tuple[Evaluation, float | None, int]]  # evaluation, value, keyword count
    # Each point's configured metric (its stored values give the point's interval).
    configs: list[EvaluationMetric] = field(default_factory=list)


def model_history(*, model: SearchModel) -> list[MetricHistory]:
    """Each metric's value over the model's finished evaluations, oldest first."""
    configs = EvaluationMetric.objects.filter(
        evaluation__model=model, evaluation__status=Evaluation.Status.FINISHED,
    ).with_stored_mean().select_related("evaluation").order_by(
        "evaluation__finished_at", "evaluation_id", "position", "id")
    series: dict[MetricKey, list] = {}
    configs_of: dict[MetricKey, list[EvaluationMetric]] = {}
    for config in configs:
        series.setdefault(metric_key(config), []).append(
            (config.evaluation, config.value, config.keyword_count))
        configs_of.setdefault(metric_key(config), []).append(config)
    return [MetricHistory(key, metric_key_label(key), points, configs_of[key])
            for key, points in series.items()]
