"""Writes that make or change an evaluation's configuration: create, update (with its
metric configuration, transformers and keywords) and clone. The checks they make are
services.config_checks'; starting, pausing, finishing and archiving are services.lifecycle's.
"""

import json
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from audit.models import Action
from audit.services import audit_object, audit_record, fields_of
from evaluations.models import (
    Evaluation,
    EvaluationMetric,
    Keyword,
    QuerySetKeyword,
    QuerySetVersion,
    SearchModel,
)
from evaluations.selectors import evaluation_keyword_entries
from evaluations.services.completion import evaluation_finish_if_complete
from evaluations.services.config_checks import (
    evaluation_fields_validate,
    gold_rate_check,
    grading_order_check,
    metrics_transformers_check,
    metrics_validate,
    second_grader_check,
    shuffle_check,
    tags_clean,
    team_scale_check,
    transformers_validate,
)
from evaluations.services.keywords import (
    KeywordEntry,
    evaluation_keywords_replace,
    keyword_rows,
    keywords_clean,
    keywords_insert,
    keywords_validate,
)
from searchtweak.models import Team, User


def _create_metric_configs(evaluation: Evaluation, metrics: list[dict[str, Any]]) -> None:
    # One by one, not bulk_create: the metrics app recomputes on EvaluationMetric post_save.
    for position, item in enumerate(metrics):
        EvaluationMetric.objects.create(evaluation=evaluation, position=position, **item)


@transaction.atomic
def evaluation_create(
    *, team: Team, created_by: User | None, model: SearchModel, name: str, scale: str,
    strategy: int, keywords: list[str | KeywordEntry | dict[str, Any]],
    metrics: list[dict[str, Any]],
    transformers: dict | None = None, tags: list[str] | None = None, description: str = "",
    guidelines: str = "", reuse_grades: str = Evaluation.Reuse.NONE,
    show_position: bool = False, auto_finish: bool = True, shuffle_results: bool = False,
    grading_order: str = Evaluation.GradingOrder.POSITION, gold_rate: float = 0.05,
    second_grader_below_gold_bar: bool = False,
    query_set_version: QuerySetVersion | None = None,
) -> Evaluation:
    """`keywords`: plain ones, or with weights and tags (services.keywords; cleaned here).
    `query_set_version`: the query set version `keywords` are (its caller,
    query_sets.services, checked that)."""
    evaluation_fields_validate(team=team, model=model, name=name, strategy=strategy)
    scale_obj = team_scale_check(team, scale)
    metrics = metrics_validate(metrics)
    transformers = transformers_validate(team, scale_obj, transformers)
    metrics_transformers_check(team=team, scale=scale_obj, metrics=metrics,
                               transformers=transformers)
    keywords = keywords_clean(keywords).entries
    keywords_validate(keywords)
    if reuse_grades not in Evaluation.Reuse.values:
        raise ValidationError({"reuse_grades": f"Use one of {', '.join(Evaluation.Reuse.values)}."})
    shuffle_check(shuffle_results=shuffle_results, show_position=show_position)
    grading_order_check(grading_order=grading_order, shuffle_results=shuffle_results)
    gold_rate_check(gold_rate)
    second_grader_check(second_grader=second_grader_below_gold_bar, strategy=strategy)
    evaluation = Evaluation.objects.create(
        team=team, created_by=created_by, model=model, name=name.strip(),
        description=description, scale=scale, strategy=strategy, transformers=transformers,
        tags=tags_clean(tags), guidelines=guidelines, reuse_grades=reuse_grades,
        show_position=bool(show_position), auto_finish=bool(auto_finish),
        shuffle_results=shuffle_results, grading_order=grading_order, gold_rate=gold_rate,
        second_grader_below_gold_bar=second_grader_below_gold_bar,
        query_set_version=query_set_version,
    )
    keywords_insert(evaluation, keywords)
    _create_metric_configs(evaluation, metrics)
    audit_record(action=Action.EVALUATION_CREATED, actor=created_by, team_id=team.pk,
                 object_type="evaluation", object_id=evaluation.pk,
                 after={"name": evaluation.name, "model": model.pk,
                        "keyword_count": len(keywords)})
    return evaluation


@transaction.atomic
def evaluation_update(*, evaluation: Evaluation, **changes: Any) -> Evaluation:
    """Change an evaluation. Scale, strategy and transformers freeze at the first start;
    the model and keywords change only while pending, and after the first start keywords
    may be added but not removed (their grades would go with them)."""
    evaluation = Evaluation.objects.select_for_update().get(pk=evaluation.pk)
    stored = fields_of(evaluation)
    allowed = {"name", "description", "model", "scale", "strategy", "transformers", "tags",
               "guidelines", "reuse_grades", "keywords", "metrics", "show_position",
               "auto_finish", "shuffle_results", "grading_order", "gold_rate",
               "second_grader_below_gold_bar"}
    unknown = set(changes) - allowed
    if unknown:
        raise ValidationError({sorted(unknown)[0]: "cannot be changed"})
    if evaluation.status == Evaluation.Status.FINISHED:
        raise ValidationError({"status": "A finished evaluation cannot be changed."})
    for key in ("scale", "strategy", "transformers"):
        if key in changes and changes[key] != getattr(evaluation, key) \
                and evaluation.has_started():
            raise ValidationError({key: "cannot change after the evaluation has started"})
    for key in ("model", "keywords"):
        if key in changes and evaluation.status != Evaluation.Status.PENDING:
            raise ValidationError({key: f"can change only while the evaluation is pending "
                                   f"(it is {evaluation.status})"})
    model = changes.get("model", evaluation.model)
    evaluation_fields_validate(team=evaluation.team, model=model,
                                name=changes.get("name", evaluation.name),
                                strategy=changes.get("strategy", evaluation.strategy))
    scale = team_scale_check(evaluation.team, changes.get("scale", evaluation.scale))
    if "transformers" in changes or "scale" in changes:
        changes["transformers"] = transformers_validate(
            evaluation.team, scale, changes.get("transformers", evaluation.transformers))
    if "metrics" in changes:
        changes["metrics"] = metrics_validate(changes["metrics"])
    if changes.keys() & {"metrics", "scale", "transformers"}:
        metrics_transformers_check(
            team=evaluation.team, scale=scale,
            transformers=changes.get("transformers", evaluation.transformers),
            metrics=changes["metrics"] if "metrics" in changes else [
                {"code": m.code, "k": m.k, "params": m.params}
                for m in evaluation.metric_configs.all()])
    if "tags" in changes:
        changes["tags"] = tags_clean(changes["tags"])
    if "reuse_grades" in changes and changes["reuse_grades"] not in Evaluation.Reuse.values:
        raise ValidationError({"reuse_grades": f"Use one of {', '.join(Evaluation.Reuse.values)}."})
    update_fields = []
    for key in ("show_position", "auto_finish"):
        if key in changes and not isinstance(changes[key], bool):
            raise ValidationError({key: "must be true or false"})
    if changes.keys() & {"shuffle_results", "show_position"}:
        shuffle_check(
            shuffle_results=changes.get("shuffle_results", evaluation.shuffle_results),
            show_position=changes.get("show_position", evaluation.show_position))
    if changes.keys() & {"shuffle_results", "grading_order"}:
        grading_order_check(
            grading_order=changes.get("grading_order", evaluation.grading_order),
            shuffle_results=changes.get("shuffle_results", evaluation.shuffle_results))
    if "gold_rate" in changes:
        gold_rate_check(changes["gold_rate"])
    if changes.keys() & {"second_grader_below_gold_bar", "strategy"}:
        second_grader_check(
            second_grader=changes.get("second_grader_below_gold_bar",
                                      evaluation.second_grader_below_gold_bar),
            strategy=changes.get("strategy", evaluation.strategy))
    for key in ("name", "description", "model", "scale", "strategy", "transformers", "tags",
                "guidelines", "reuse_grades", "show_position", "auto_finish",
                "shuffle_results", "grading_order", "gold_rate",
                "second_grader_below_gold_bar"):
        if key in changes:
            setattr(evaluation, key, changes[key].strip() if key == "name" else changes[key])
            update_fields.append(key)
    before = {key: stored[key] for key in update_fields}
    if update_fields:
        evaluation.save(update_fields=update_fields)
    recorded_after = fields_of(evaluation, only=tuple(update_fields))
    if "keywords" in changes:
        before["keyword_count"] = evaluation.keywords.count()
        recorded_after["keyword_count"] = len(changes["keywords"])
    if "metrics" in changes:
        before["metrics"] = [f"{m.code}@{m.k}" for m in evaluation.metric_configs.all()]
        recorded_after["metrics"] = [f"{m['code']}@{m.get('k')}" for m in changes["metrics"]]
    if "keywords" in changes:
        evaluation_keywords_replace(evaluation=evaluation, keywords=changes["keywords"])
        _query_set_version_unlink_if_changed(evaluation)
    if "metrics" in changes:
        _replace_metrics(evaluation, changes["metrics"])
    if changes.get("auto_finish") is True:
        # Turned on over an evaluation already complete: no grade will come to ask.
        evaluation_finish_if_complete(evaluation_id=evaluation.pk)
    audit_object(action=Action.EVALUATION_CHANGED, instance=evaluation,
                 object_type="evaluation", before=before, after=recorded_after)
    return evaluation


def _query_set_version_unlink_if_changed(evaluation: Evaluation) -> None:
    """An evaluation names the query set version it ran only while its keywords
    are still that version's (with their weights and tags), in its order."""
    if evaluation.query_set_version_id is None:
        return
    columns = ("normalized_text", "weight", "tags")
    ours = list(evaluation.keywords.order_by("position").values_list(*columns))
    theirs = list(QuerySetKeyword.objects.filter(version_id=evaluation.query_set_version_id)
                  .order_by("position").values_list(*columns))
    if ours != theirs:
        evaluation.query_set_version = None
        evaluation.save(update_fields=["query_set_version"])


def _replace_metrics(evaluation: Evaluation, metrics: list[dict[str, Any]]) -> None:
    current = {(m.code, m.k, json.dumps(m.params, sort_keys=True)): m
               for m in evaluation.metric_configs.all()}
    wanted = [(m["code"], m["k"], json.dumps(m["params"], sort_keys=True)) for m in metrics]
    for key, config in current.items():
        if key not in wanted:
            config.delete()
    for position, (key, item) in enumerate(zip(wanted, metrics, strict=True)):
        config = current.get(key)
        if config is None:
            EvaluationMetric.objects.create(evaluation=evaluation, position=position, **item)
        elif config.position != position:
            config.position = position
            config.save(update_fields=["position"])


@transaction.atomic
def evaluation_clone(*, evaluation: Evaluation, created_by: User | None,
                     name: str | None = None) -> Evaluation:
    """A new pending evaluation with the same configuration and keywords, nothing fetched,
    named `name` or "<name> (copy)"."""
    if name is not None and not name.strip():
        raise ValidationError({"name": "The copy needs a name (or none for \"(copy)\")."})
    clone = Evaluation.objects.create(
        team=evaluation.team, model=evaluation.model, created_by=created_by,
        name=(name.strip() if name is not None else f"{evaluation.name} (copy)")[:200],
        description=evaluation.description,
        scale=evaluation.scale, strategy=evaluation.strategy,
        transformers=evaluation.transformers, tags=evaluation.tags,
        guidelines=evaluation.guidelines, reuse_grades=evaluation.reuse_grades,
        auto_finish=evaluation.auto_finish, show_position=evaluation.show_position,
        shuffle_results=evaluation.shuffle_results, grading_order=evaluation.grading_order,
        gold_rate=evaluation.gold_rate,
        second_grader_below_gold_bar=evaluation.second_grader_below_gold_bar,
        query_set_version_id=evaluation.query_set_version_id,  # the same keywords
    )
    Keyword.objects.bulk_create(
        keyword_rows(clone, evaluation_keyword_entries(evaluation=evaluation)), batch_size=1000)
    _create_metric_configs(clone, [
        {"code": m.code, "k": m.k, "params": m.params} for m in evaluation.metric_configs.all()
    ])
    audit_object(action=Action.EVALUATION_CREATED, instance=clone, object_type="evaluation",
                 actor=created_by, after={"name": clone.name, "model": clone.model_id,
                                          "cloned_from": evaluation.pk})
    return clone
