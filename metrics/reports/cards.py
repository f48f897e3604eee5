"""The metric cards of the evaluation dashboard: each configured metric's mean, history and
delta against a reference (the team's baseline or the model's previous evaluation), with
its word in the standing verdict; over every keyword, or over a segment and/or weighted by
traffic (metrics.reports.segments).

Every number comes from stored values (EvaluationMetric.value, the segment sums,
KeywordMetricValue, MetricHistoryPoint); a fixed number of queries whatever the number of
keywords.
"""

from collections import defaultdict
from dataclasses import dataclass

from django.db.models import Q
from django.utils import timezone

import metrics_engine as core
from evaluations.models import Evaluation, EvaluationMetric
from metrics.models import KeywordMetricValue, MetricHistoryPoint, RegressionVerdict
from metrics.queries import Tagged
from metrics.reports.segments import EVERY_KEYWORD, SegmentChoice, SegmentMeans
from metrics.selectors import (
    MetricKey,
    SegmentMean,
    metric_configs,
    metric_key,
    metric_label,
    metric_segment_means,
    team_baseline,
)
from metrics_engine import verdicts as core_verdicts
from metrics_engine.weighted import weighted_mean

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

    segment_mean: SegmentMean | None = None
    """The mean over the chosen segment (or weighted), when the cards show one; the card's
    numbers come from it then, and from the stored mean of every keyword otherwise."""
    segmented: bool = False

    @property
    def verdict_label(self) -> str:
        return RegressionVerdict.Verdict(self.verdict).label if self.verdict else ""

    def _mean(self, name: str, empty):
        if not self.segmented:
            return getattr(self.config, name)
        return empty if self.segment_mean is None else getattr(self.segment_mean, name)

    @property
    def value(self) -> float | None:
        return self._mean("value", None)

    @property
    def keyword_count(self) -> int:
        return self._mean("keyword_count", 0)

    @property
    def weight_sum(self) -> int:
        """Σ weight over the keywords with a value (a weighted card shows it)."""
        return self.segment_mean.weight_sum if self.segment_mean is not None else 0

    @property
    def lower(self) -> float | None:
        return self._mean("lower", None)

    @property
    def upper(self) -> float | None:
        return self._mean("upper", None)

    @property
    def bounds_exact(self) -> bool:
        return self._mean("bounds_exact", True)


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
                 verdict: RegressionVerdict | None = None,
                 choice: SegmentChoice = EVERY_KEYWORD,
                 means: SegmentMeans | None = None) -> list[MetricCard]:
    """One card per configured metric: its mean, history and, against the reference, the
    delta over the keywords both have a value for (two more queries: the reference's
    configs and the values of both); `verdict` (the standing one) gives each card its
    metric's word when it was judged against this reference.

    With a segment or weights chosen (`choice`, `means` holding this evaluation's segment
    means), each card's mean is the segment's, its delta is over this evaluation's keywords
    in the segment (the run's tags, as a verdict reads them), weighted by their weights
    when asked, and the reference's mean is its own segment mean (one query more). The
    history and the verdict's word are every keyword's: the cards leave them out then."""
    configs = metric_configs(evaluation.pk) if configs is None else configs
    segmented = not choice.everything_plain
    history: dict[int, list[float | None]] = defaultdict(list)
    for metric_id, value in MetricHistoryPoint.objects.filter(metric__in=configs).order_by(
            "recorded_at", "id").values_list("metric_id", "value"):
        history[metric_id].append(value)
    reference_configs: dict[MetricKey, EvaluationMetric] = {}
    reference_means: dict[int, SegmentMean] = {}
    shared: dict[int, tuple[float | None, int]] = {}
    if reference.evaluation is not None:
        reference_configs = {metric_key(c): c for c in metric_configs(reference.evaluation.pk)}
        pairs = {c.pk: reference_configs[metric_key(c)].pk for c in configs
                 if metric_key(c) in reference_configs}
        if pairs:
            shared = _shared_deltas(pairs, choice)
            if segmented:
                reference_means = {
                    mean.metric_id: mean for mean in metric_segment_means(
                        metric_ids=list(pairs.values()))
                    if (mean.segment, mean.weighted) == (choice.segment, choice.weighted)}
    judged: dict[MetricKey, dict] = {}
    if (verdict is not None and reference.evaluation is not None
            and verdict.baseline_id == reference.evaluation.pk and not segmented):
        judged = {core.metric_key(m["code"], m["k"], m.get("params") or {}): m
                  for m in verdict.metrics if "code" in m and "k" in m}
    cards = []
    for config in configs:
        key = metric_key(config)
        reference_config = reference_configs.get(key)
        reference_value = reference_config.value if reference_config else None
        if segmented and reference_config is not None:
            found = reference_means.get(reference_config.pk)
            reference_value = found.value if found else None
        delta, shared_count = shared.get(config.pk, (None, 0))
        spec = core.METRICS.get(config.code)
        word = judged.get(key, {})
        cards.append(MetricCard(
            config=config, label=metric_label(config),
            description=spec.description if spec else "",
            reference_value=reference_value,
            delta=delta, shared_count=shared_count, in_reference=reference_config is not None,
            history=[] if segmented else history[config.pk][-SPARKLINE_POINTS:],
            verdict=word.get("verdict", ""), verdict_reason=word.get("reason", ""),
            verdict_rule=verdict.rule_text if word and verdict else "",
            segment_mean=means.get(config.pk, choice) if segmented and means else None,
            segmented=segmented,
        ))
    return cards


def _shared_deltas(pairs: dict[int, int], choice: SegmentChoice
                   ) -> dict[int, tuple[float | None, int]]:
    """Per config of the evaluation (`pairs`: its id -> the reference's config id), the
    mean delta to the reference over the keywords both have a value for, and how many those
    are: this evaluation's keywords restricted to the chosen segment, the delta weighted by
    their weights when chosen (keywords of weight 0 left out). One query."""
    values: dict[int, dict[str, float]] = defaultdict(dict)
    weights: dict[int, dict[str, int]] = defaultdict(dict)
    rows = KeywordMetricValue.objects.filter(
        metric_id__in=[*pairs, *pairs.values()], value__isnull=False)
    if choice.segment:
        rows = rows.filter(Q(metric_id__in=list(pairs.values()))
                           | Q(Tagged(choice.segment, through="keyword__")))
    fields = ["metric_id", "keyword__normalized_text", "value"]
    for metric_id, normalized, value, *weight in rows.values_list(
            *fields, *(["keyword__weight"] if choice.weighted else [])):
        values[metric_id][normalized] = value
        if weight:
            weights[metric_id][normalized] = weight[0]
    if not choice.weighted:
        return {pk: core_verdicts.shared_mean_delta(values[base_pk], values[pk])
                for pk, base_pk in pairs.items()}
    shared = {}
    for pk, base_pk in pairs.items():
        deltas = core_verdicts.shared_deltas(values[base_pk], values[pk])
        counted = [key for key in deltas if weights[pk][key] > 0]
        shared[pk] = (weighted_mean([deltas[key] for key in counted],
                                    [weights[pk][key] for key in counted]), len(counted))
    return shared
