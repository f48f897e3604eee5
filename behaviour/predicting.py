"""Reads for "do offline metrics predict behaviour?": per keyword of an evaluation one
configured metric's stored value against the keyword's CTR@k or first-click RR from a
behaviour source over a window, their rank correlation with a seeded bootstrap interval
(behaviour.core.predictive) and the keywords where they disagree most."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

import numpy as np
from django.http import Http404

from behaviour.core.predictive import (
    RankCorrelation,
    disagreement,
    most_disagreeing,
    rank_correlation,
    resamples_for,
)
from behaviour.models import BehaviourSource
from behaviour.selectors import evaluation_online_metrics
from evaluations.models import Evaluation, EvaluationMetric
from metrics.models import KeywordMetricValue
from metrics.selectors import evaluation_metric_configs, metric_label
from searchtweak import access
from searchtweak.models import User

ONLINE_MEASURES = {"ctr": "CTR@k", "first_click_rr": "first-click RR"}
DISAGREEING_SHOWN = 10
@dataclass(frozen=True)
class KeywordPoint:
    keyword_id: int
    text: str
    offline: float | None
    online: float | None
    disagreement: float | None


@dataclass(frozen=True)
class Prediction:
    metric_id: int
    metric_label: str
    online: str
    online_label: str
    k: int
    correlation: RankCorrelation
    points: list[KeywordPoint]
    disagreeing: list[KeywordPoint]
    """The keywords of greatest disagreement, greatest first."""


def _value(value) -> float | None:
    return None if value is None or value != value else float(value)


def offline_vs_behaviour(*, evaluation: Evaluation, source: BehaviourSource,
                         metric: EvaluationMetric, online: str = "ctr", k: int = 10,
                         start_on: date | None = None, end_on: date | None = None,
                         resamples: int = 1000, seed: int = 0) -> Prediction:
    """The figures of one metric of the evaluation against one online measure of the
    source. `online`: "ctr" (CTR@k) or "first_click_rr" (None for a CSV source, which
    counts no searches)."""
    if online not in ONLINE_MEASURES:
        raise ValueError(f"unknown online measure {online!r}")
    found = evaluation_online_metrics(evaluation=evaluation, source=source, k=k,
                                      start_on=start_on, end_on=end_on)
    stored = dict(KeywordMetricValue.objects.filter(metric=metric).values_list(
        "keyword_id", "value"))
    rows = []
    for row in found.keywords:
        measured = None
        if row.metrics is not None:
            measured = row.metrics.ctr_at_k if online == "ctr" else row.metrics.first_click_rr
        rows.append((row.keyword_id, row.text, _value(stored.get(row.keyword_id)),
                     _value(measured)))
    offline = np.array([np.nan if r[2] is None else r[2] for r in rows], dtype=np.float64)
    measured = np.array([np.nan if r[3] is None else r[3] for r in rows], dtype=np.float64)
    both = int((~(np.isnan(offline) | np.isnan(measured))).sum())
    correlation = rank_correlation(offline, measured, resamples=resamples_for(both, resamples),
                                   seed=seed)
    apart = disagreement(offline, measured)
    points = [KeywordPoint(keyword_id, text, off, on, _value(apart[index]))
              for index, (keyword_id, text, off, on) in enumerate(rows)]
    return Prediction(
        metric_id=metric.pk, metric_label=metric_label(metric), online=online,
        online_label=ONLINE_MEASURES[online].replace("k", str(k)) if online == "ctr"
        else ONLINE_MEASURES[online], k=k, correlation=correlation, points=points,
        disagreeing=[points[index] for index in most_disagreeing(
            offline, measured, count=DISAGREEING_SHOWN)])


@dataclass(frozen=True)
class PredictionInputs:
    sources: list[BehaviourSource]
    metrics: list[EvaluationMetric]
    source: BehaviourSource | None
    """The one asked for, else the team's newest; None when the team has none."""
    metric: EvaluationMetric | None
    """The one asked for, else the evaluation's first; None when it has none."""


def prediction_inputs(*, user: User, evaluation: Evaluation, source_id: int | None,
                      metric_id: int | None) -> PredictionInputs:
    """The choices for the evaluation, and the chosen ones: "No such behaviour source."
    or "No such metric." (404) for one that is missing or not the evaluation's team's."""
    sources = list(BehaviourSource.objects.filter(team_id=evaluation.team_id))
    metrics = list(evaluation_metric_configs(evaluation_id=evaluation.pk))
    source = sources[0] if sources else None
    if source_id is not None:
        source = access.row_get_for_user(
            BehaviourSource.objects.filter(team_id=evaluation.team_id), user=user,
            pk=source_id, what="behaviour source")
    metric = metrics[0] if metrics else None
    if metric_id is not None:
        metric = next((m for m in metrics if m.pk == metric_id), None)
        if metric is None:
            raise Http404("No such metric.")
    return PredictionInputs(sources=sources, metrics=metrics, source=source, metric=metric)
