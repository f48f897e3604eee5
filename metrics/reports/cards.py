"""The metric cards of the evaluation dashboard: each configured metric's mean, history and
delta against a reference (the team's baseline or the model's previous evaluation), with
its word in the standing verdict.

Every number comes from stored values (EvaluationMetric.value, KeywordMetricValue,
MetricHistoryPoint); a fixed number of queries whatever the number of keywords.
"""

from collections import defaultdict
from dataclasses import dataclass

from django.utils import timezone

import metrics_engine as core
from evaluations.models import Evaluation, EvaluationMetric
from metrics.models import KeywordMetricValue, MetricHistoryPoint, RegressionVerdict
from metrics.selectors import MetricKey, metric_configs, metric_key, metric_label, team_baseline
from metrics_engine import verdicts as core_verdicts

SPARKLINE_POINTS = 60


@dataclass(frozen=True)
class Reference:
    """What the metric cards compare against: the team baseline or the model's previous
    finished evaluation."""

    evaluation: Evaluation | None
    kind: str  # "baseline", "previous" or "" (nothing to compare with)
    # The evaluation compared is itself the team's baseline (read with it, no query more).
    is_team_baseline: bool = False


@dataclass(frozen=True)
class MetricCard:
    config: EvaluationMetric
    label: str
    description: str
    reference_value: float | None
    delta: float | None
    """Mean of (this - reference) over the keywords both have a value for
    (core.verdicts.shared_mean_delta): the delta every surface shows."""
    history: list[float | None]
    shared_count: int = 0
    """The keywords `delta` covers."""
    verdict: str = ""
    """This metric's word in the standing verdict against the reference (RegressionVerdict
    value), "" when there is none against it."""
    verdict_reason: str = ""
    verdict_rule: str = ""
    in_reference: bool = False
    """The reference configures this metric too."""

    @property
    def verdict_label(self) -> str:
        return RegressionVerdict.Verdict(self.verdict).label if self.verdict else ""

    @property
    def value(self) -> float | None:
        return self.config.value

    @property
    def keyword_count(self) -> int:
        return self.config.keyword_count

    @property
    def lower(self) -> float | None:
        return self.config.lower

    @property
    def upper(self) -> float | None:
        return self.config.upper

    @property
    def bounds_exact(self) -> bool:
        return self.config.bounds_exact


def evaluation_reference(*, evaluation: Evaluation, against: str = "") -> Reference:
    """The team's baseline unless `against` is "previous" or the evaluation is the baseline
    itself; otherwise the latest evaluation of the same search model finished before it."""
    baseline = team_baseline(team_id=evaluation.team_id)
    is_baseline = baseline is not None and baseline.pk == evaluation.pk
    if against != "previous":
        if baseline is not None and not is_baseline:
            return Reference(baseline, "baseline")
        if against == "baseline":
            return Reference(None, "", is_baseline)
    previous = Evaluation.objects.filter(
        model_id=evaluation.model_id, status=Evaluation.Status.FINISHED,
        finished_at__lt=evaluation.finished_at or timezone.now(),
    ).exclude(pk=evaluation.pk).order_by("-finished_at", "-id").first()
    return Reference(previous, "previous" if previous else "", is_baseline)


def metric_cards(*, evaluation: Evaluation, reference: Reference,
                 configs: list[EvaluationMetric] | None = None,
                 verdict: RegressionVerdict | None = None) -> list[MetricCard]:
    """One card per configured metric: its mean, history and, against the reference, the
    delta over the keywords both have a value for (two more queries: the reference's
    configs and the values of both); `verdict` (the standing one) gives each card its
    metric's word when it was judged against this reference."""
    configs = metric_configs(evaluation.pk) if configs is None else configs
    history: dict[int, list[float | None]] = defaultdict(list)
    for metric_id, value in MetricHistoryPoint.objects.filter(metric__in=configs).order_by(
            "recorded_at", "id").values_list("metric_id", "value"):
        history[metric_id].append(value)
    reference_configs: dict[MetricKey, EvaluationMetric] = {}
    shared: dict[int, tuple[float | None, int]] = {}
    if reference.evaluation is not None:
        reference_configs = {metric_key(c): c for c in metric_configs(reference.evaluation.pk)}
        pairs = {c.pk: reference_configs[metric_key(c)].pk for c in configs
                 if metric_key(c) in reference_configs}
        values: dict[int, dict[str, float]] = defaultdict(dict)
        if pairs:
            for metric_id, normalized, value in KeywordMetricValue.objects.filter(
                    metric_id__in=[*pairs, *pairs.values()], value__isnull=False,
            ).values_list("metric_id", "keyword__normalized_text", "value"):
                values[metric_id][normalized] = value
        shared = {pk: core_verdicts.shared_mean_delta(values[base_pk], values[pk])
                  for pk, base_pk in pairs.items()}
    judged: dict[MetricKey, dict] = {}
    if (verdict is not None and reference.evaluation is not None
            and verdict.baseline_id == reference.evaluation.pk):
        judged = {core.metric_key(m["code"], m["k"], m.get("params") or {}): m
                  for m in verdict.metrics if "code" in m and "k" in m}
    cards = []
    for config in configs:
        key = metric_key(config)
        reference_config = reference_configs.get(key)
        delta, shared_count = shared.get(config.pk, (None, 0))
        spec = core.METRICS.get(config.code)
        word = judged.get(key, {})
        cards.append(MetricCard(
            config=config, label=metric_label(config),
            description=spec.description if spec else "",
            reference_value=reference_config.value if reference_config else None,
            delta=delta, shared_count=shared_count, in_reference=reference_config is not None,
            history=history[config.pk][-SPARKLINE_POINTS:],
            verdict=word.get("verdict", ""), verdict_reason=word.get("reason", ""),
            verdict_rule=verdict.rule_text if word and verdict else "",
        ))
    return cards
