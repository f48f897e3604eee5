"""The checks an evaluation's configuration passes before it is stored: its fields, scale,
metrics, transformers and options, each raising a ValidationError that names the field.

evaluation_create and evaluation_update (services.configuration) make them; a schedule
makes evaluation_config_check before it stores a configuration; a start asks
metrics_transformers_check again (services.lifecycle).
"""

import json
from typing import Any

from django.core.exceptions import ValidationError

import metrics_engine as core
from evaluations.hooks import scale_provider, team_scale, team_scales
from evaluations.models import Evaluation, EvaluationMetric, SearchModel
from evaluations.strategies import ADAPTIVE_STRATEGY, STRATEGY_VALUES
from searchtweak.models import Team


def team_scale_check(team: Team, code: str) -> core.Scale:
    scale = team_scale(team, code)
    if scale is None:
        raise ValidationError({"scale": f"Unknown scale {code!r}."})
    return scale


def metrics_validate(metrics: Any) -> list[dict[str, Any]]:
    if not isinstance(metrics, list):
        raise ValidationError({"metrics": "must be a list of {code, k, params}"})
    clean, seen = [], set()
    for index, item in enumerate(metrics):
        if not isinstance(item, dict):
            raise ValidationError({"metrics": f"item {index + 1} must be an object"})
        params = item.get("params") or {}
        try:
            core.metric_spec(item.get("code"))
            k = core.validate_k(item.get("k"))
            core.resolve_params(params)
        except core.MetricInputError as error:
            raise ValidationError({"metrics": f"item {index + 1}: {error}"}) from None
        if k > EvaluationMetric.K_MAX:
            raise ValidationError({"metrics": f"item {index + 1}: k must be at most "
                                              f"{EvaluationMetric.K_MAX}."})
        key = (item["code"], k, json.dumps(params, sort_keys=True))
        if key in seen:
            raise ValidationError({"metrics": f"item {index + 1}: "
                                   f"{core.metric_code_at_k(item['code'], k)} is listed twice"})
        seen.add(key)
        clean.append({"code": item["code"], "k": k, "params": params})
    return clean


def transformers_validate(team: Team, scale: core.Scale, transformers: Any) -> dict:
    transformers = transformers or {}
    try:
        core.validate_transformers(transformers, scale, team_scales(team))
    except core.MetricInputError as error:
        raise ValidationError({"transformers": str(error)}) from None
    return transformers


def evaluation_fields_validate(*, team: Team, model: SearchModel, name: str,
                                strategy: int) -> None:
    if not name.strip():
        raise ValidationError({"name": "An evaluation needs a name."})
    if model.team_id != team.pk:
        raise ValidationError({"model": "No such search model in this team."})
    if model.archived_at is not None:
        raise ValidationError({"model": f"{model.name} is archived."})
    if strategy not in STRATEGY_VALUES:
        raise ValidationError({"strategy": (
            f"Use 1 or 3 graders per result. {ADAPTIVE_STRATEGY} gives 1 grader and up to 3 "
            "where it matters.")})


def evaluation_config_check(*, team: Team, model: SearchModel, name: str, scale: str,
                            strategy: int, metrics: Any) -> list[dict[str, Any]]:
    """The checks evaluation_create makes of these fields (errors on each field), for a
    caller that stores them to create evaluations later (a schedule); the metrics cleaned."""
    evaluation_fields_validate(team=team, model=model, name=name, strategy=strategy)
    if model.is_offline:
        # A schedule's runs would read the same uploaded run each time: nothing to watch.
        # Refused here, so a schedule's tick never reaches the endpoint it does not have.
        raise ValidationError({"model": f"{model.name} is an offline model: its run is "
                               "uploaded, not fetched, so it cannot be scheduled. Start its "
                               "evaluations after each upload (from CI through the API)."})
    scale_obj = team_scale_check(team, scale)
    metrics = metrics_validate(metrics)
    if not metrics:
        raise ValidationError({"metrics": "Configure at least one metric."})
    metrics_transformers_check(team=team, scale=scale_obj, metrics=metrics, transformers={})
    return metrics


def shuffle_check(*, shuffle_results: Any, show_position: Any) -> None:
    if not isinstance(shuffle_results, bool):
        raise ValidationError({"shuffle_results": "must be true or false"})
    if shuffle_results and show_position:
        raise ValidationError({"shuffle_results": (
            "Shuffled results hide the engine's position from graders: turn off "
            "\"show position\" to shuffle.")})


def grading_order_check(*, grading_order: Any, shuffle_results: Any) -> None:
    # Refused together: the decisive order hands out a keyword's top positions first, which
    # is the very rank signal a shuffled evaluation keeps from its graders.
    if grading_order not in Evaluation.GradingOrder.values:
        raise ValidationError({"grading_order": (
            f"Use one of {', '.join(Evaluation.GradingOrder.values)}.")})
    if grading_order == Evaluation.GradingOrder.DECISIVE and shuffle_results:
        raise ValidationError({"grading_order": (
            "\"Grade what decides first\" hands out top positions first, which would tell "
            "graders the engine's rank: turn off shuffled results to use it.")})


def gold_rate_check(gold_rate: Any) -> None:
    # At most half: the probes measure graders, the slots are the work.
    if isinstance(gold_rate, bool) or not isinstance(gold_rate, int | float) \
            or not 0 <= gold_rate <= 0.5:
        raise ValidationError({"gold_rate": (
            "A share of claims from 0 (no gold items) to 0.5, e.g. 0.05 for 5 %.")})


def second_grader_check(*, second_grader: Any, strategy: Any) -> None:
    if not isinstance(second_grader, bool):
        raise ValidationError({"second_grader_below_gold_bar": "must be true or false"})
    # Only "1 → 3" opens slots; under 3 graders every result has its second grader already.
    if second_grader and strategy != ADAPTIVE_STRATEGY:
        raise ValidationError({"second_grader_below_gold_bar": (
            "A second grader opens only under \"1 grader, up to 3 where it matters\": "
            "choose that strategy, or turn this off.")})


def tags_clean(tags: Any) -> list[str]:
    if tags is None:
        return []
    if not isinstance(tags, list) or not all(isinstance(tag, str) for tag in tags):
        raise ValidationError({"tags": "must be a list of strings"})
    return list(dict.fromkeys(tag.strip() for tag in tags if tag.strip()))


class MissingTransformerError(ValidationError):
    """A metric reads a built-in scale that the evaluation's own scale has no mapping to.
    `source` and `target` name the pair, so a page can link admins to that transformer."""

    def __init__(self, message: str, *, source: str, target: str) -> None:
        super().__init__({"metrics": message})
        self.source = source
        self.target = target


def metrics_transformers_check(*, team: Team, scale: core.Scale,
                               metrics: list[dict[str, Any]], transformers: dict) -> None:
    """Every metric must read grades it can get: a metric on another scale than the
    evaluation's needs a transformer, and a scale an admin defined has no default one. The
    team's transformers count, then the evaluation's own overrides. Saving and starting
    both ask this (a transformer may have been removed since the save)."""
    if scale.is_builtin:
        return  # the built-ins map to each other by default (docs/METRICS.md)
    available = {**scale_provider().transformers(team), **transformers}
    for item in metrics:
        spec = core.metric_spec(item["code"])
        if spec.scale == "graded":
            continue  # graded metrics read an admin-defined scale directly (docs/METRICS.md)
        try:
            core.resolve_transformer(scale, core.SCALES[spec.scale], available)
        except core.MetricInputError:
            name = dict(scale_provider().choices(team)).get(scale.code, scale.code)
            label = core.metric_label(item["code"], item["k"], item.get("params"))
            raise MissingTransformerError(
                f"{label} needs grades on the {spec.scale} scale: an admin must define a "
                f"transformer from '{name}' to {spec.scale} under Scales (or give this "
                f"evaluation one in its transformer overrides).",
                source=scale.code, target=spec.scale) from None
