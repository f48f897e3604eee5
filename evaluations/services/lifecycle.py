"""Writes for an evaluation's lifecycle: create, update (with its metric configuration and
transformers), start, retry failed keywords, pause, finish (by hand or once complete),
clone, archive, restore, delete.

Every change of status or archive flag announces itself (evaluations.events) after commit,
once: `by` says how it happened (a page, the API, a rule, the system) and `user` who, if
anyone. The end of a fetch is announced by evaluations.fetching.services, which this module
imports (it cannot import this one back).
"""

import contextlib
import json
import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

import metrics_engine as core
from evaluations.events import By, Transition, transition_announce
from evaluations.fetching.dispatch import FetchNotSent, keywords_fetch_enqueue
from evaluations.hooks import scale_provider, team_scale, team_scales
from evaluations.models import (
    Evaluation,
    EvaluationMetric,
    Keyword,
    QuerySetKeyword,
    QuerySetVersion,
    SearchModel,
)
from evaluations.services.completion import evaluation_finish_if_complete
from evaluations.services.keywords import (
    evaluation_keywords_replace,
    keyword_rows,
    keywords_clean,
    keywords_insert,
    keywords_validate,
)
from evaluations.strategies import ADAPTIVE_STRATEGY, STRATEGY_VALUES
from searchtweak.models import Team, User

logger = logging.getLogger(__name__)


def _team_scale(team: Team, code: str) -> core.Scale:
    scale = team_scale(team, code)
    if scale is None:
        raise ValidationError({"scale": f"Unknown scale {code!r}."})
    return scale


def _validate_metrics(metrics: Any) -> list[dict[str, Any]]:
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


def _validate_transformers(team: Team, scale: core.Scale, transformers: Any) -> dict:
    transformers = transformers or {}
    try:
        core.validate_transformers(transformers, scale, team_scales(team))
    except core.MetricInputError as error:
        raise ValidationError({"transformers": str(error)}) from None
    return transformers


def _validate_evaluation_fields(*, team: Team, model: SearchModel, name: str,
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


def _create_metric_configs(evaluation: Evaluation, metrics: list[dict[str, Any]]) -> None:
    # One by one, not bulk_create: the metrics app recomputes on EvaluationMetric post_save.
    for position, item in enumerate(metrics):
        EvaluationMetric.objects.create(evaluation=evaluation, position=position, **item)


def evaluation_config_check(*, team: Team, model: SearchModel, name: str, scale: str,
                            strategy: int, metrics: Any) -> list[dict[str, Any]]:
    """The checks evaluation_create makes of these fields (errors on each field), for a
    caller that stores them to create evaluations later (a schedule); the metrics cleaned."""
    _validate_evaluation_fields(team=team, model=model, name=name, strategy=strategy)
    scale_obj = _team_scale(team, scale)
    metrics = _validate_metrics(metrics)
    if not metrics:
        raise ValidationError({"metrics": "Configure at least one metric."})
    metrics_transformers_check(team=team, scale=scale_obj, metrics=metrics, transformers={})
    return metrics


@transaction.atomic
def evaluation_create(
    *, team: Team, created_by: User | None, model: SearchModel, name: str, scale: str,
    strategy: int, keywords: list[str], metrics: list[dict[str, Any]],
    transformers: dict | None = None, tags: list[str] | None = None, description: str = "",
    guidelines: str = "", reuse_grades: str = Evaluation.Reuse.NONE,
    show_position: bool = False, auto_finish: bool = True, shuffle_results: bool = False,
    grading_order: str = Evaluation.GradingOrder.POSITION, gold_rate: float = 0.05,
    second_grader_below_gold_bar: bool = False,
    query_set_version: QuerySetVersion | None = None,
) -> Evaluation:
    """`query_set_version`: the query set version `keywords` are (its caller,
    query_sets.services, checked that)."""
    _validate_evaluation_fields(team=team, model=model, name=name, strategy=strategy)
    scale_obj = _team_scale(team, scale)
    metrics = _validate_metrics(metrics)
    transformers = _validate_transformers(team, scale_obj, transformers)
    metrics_transformers_check(team=team, scale=scale_obj, metrics=metrics,
                               transformers=transformers)
    keywords = keywords_clean(keywords).keywords
    keywords_validate(keywords)
    if reuse_grades not in Evaluation.Reuse.values:
        raise ValidationError({"reuse_grades": f"Use one of {', '.join(Evaluation.Reuse.values)}."})
    _check_shuffle(shuffle_results=shuffle_results, show_position=show_position)
    _check_grading_order(grading_order=grading_order, shuffle_results=shuffle_results)
    _check_gold_rate(gold_rate)
    _check_second_grader(second_grader=second_grader_below_gold_bar, strategy=strategy)
    evaluation = Evaluation.objects.create(
        team=team, created_by=created_by, model=model, name=name.strip(),
        description=description, scale=scale, strategy=strategy, transformers=transformers,
        tags=_clean_tags(tags), guidelines=guidelines, reuse_grades=reuse_grades,
        show_position=bool(show_position), auto_finish=bool(auto_finish),
        shuffle_results=shuffle_results, grading_order=grading_order, gold_rate=gold_rate,
        second_grader_below_gold_bar=second_grader_below_gold_bar,
        query_set_version=query_set_version,
    )
    keywords_insert(evaluation, keywords)
    _create_metric_configs(evaluation, metrics)
    return evaluation


@dataclass(frozen=True)
class StartedEvaluationSpec:
    """One evaluation for evaluations_create_started: evaluation_create's fields, its
    keywords as stored in `query_set_version` (already clean), and the metrics checked by
    evaluation_config_check."""

    team: Team
    model: SearchModel
    name: str
    scale: str
    strategy: int
    metrics: list[dict[str, Any]]
    keywords: list[str]
    query_set_version: QuerySetVersion
    created_by: User | None = None
    description: str = ""
    reuse_grades: str = Evaluation.Reuse.DOCUMENT


@transaction.atomic
def evaluations_create_started(*, specs: list[StartedEvaluationSpec], by: By = By.SYSTEM
                               ) -> list[Evaluation]:
    """Create and start many evaluations in a few statements (a schedule tick's runs):
    what evaluation_create followed by evaluation_start writes for a fresh evaluation, in
    bulk; each announced `started`, its fetch sent after commit, as evaluation_start does.

    The caller has made the checks (evaluation_config_check per configuration; the model
    and its endpoint not archived). The metric configurations are written in bulk, without
    their post_save: its receiver (metrics.receivers.on_metric_configs_changed) marks and
    recomputes fetched keywords only, and these have none yet."""
    if not specs:
        return []
    now = timezone.now()
    evaluations = Evaluation.objects.bulk_create([
        Evaluation(team=spec.team, created_by=spec.created_by, model=spec.model,
                   name=spec.name.strip(), description=spec.description, scale=spec.scale,
                   strategy=spec.strategy, reuse_grades=spec.reuse_grades, auto_finish=True,
                   query_set_version=spec.query_set_version,
                   status=Evaluation.Status.FETCHING, started_at=now, fetch_sent_at=now)
        for spec in specs])
    keywords = Keyword.objects.bulk_create(
        [row for evaluation, spec in zip(evaluations, specs, strict=True)
         for row in keyword_rows(evaluation, spec.keywords)], batch_size=2000)
    EvaluationMetric.objects.bulk_create(
        [EvaluationMetric(evaluation=evaluation, position=position, **item)
         for evaluation, spec in zip(evaluations, specs, strict=True)
         for position, item in enumerate(spec.metrics)], batch_size=2000)
    keyword_ids: dict[int, list[int]] = {}
    for keyword in keywords:
        keyword_ids.setdefault(keyword.evaluation_id, []).append(keyword.pk)
    for evaluation in evaluations:
        _announce(evaluation, Transition.STARTED, previous_status=Evaluation.Status.PENDING,
                  by=by, user=None, at=now)
        keywords_fetch_enqueue(evaluation_id=evaluation.pk,
                               keyword_ids=keyword_ids.get(evaluation.pk, []), stamped=True)
    return evaluations


def _check_shuffle(*, shuffle_results: Any, show_position: Any) -> None:
    if not isinstance(shuffle_results, bool):
        raise ValidationError({"shuffle_results": "must be true or false"})
    if shuffle_results and show_position:
        raise ValidationError({"shuffle_results": (
            "Shuffled results hide the engine's position from graders: turn off "
            "\"show position\" to shuffle.")})


def _check_grading_order(*, grading_order: Any, shuffle_results: Any) -> None:
    # Refused together: the decisive order hands out a keyword's top positions first, which
    # is the very rank signal a shuffled evaluation keeps from its graders.
    if grading_order not in Evaluation.GradingOrder.values:
        raise ValidationError({"grading_order": (
            f"Use one of {', '.join(Evaluation.GradingOrder.values)}.")})
    if grading_order == Evaluation.GradingOrder.DECISIVE and shuffle_results:
        raise ValidationError({"grading_order": (
            "\"Grade what decides first\" hands out top positions first, which would tell "
            "graders the engine's rank: turn off shuffled results to use it.")})


def _check_gold_rate(gold_rate: Any) -> None:
    # At most half: the probes measure graders, the slots are the work.
    if isinstance(gold_rate, bool) or not isinstance(gold_rate, int | float) \
            or not 0 <= gold_rate <= 0.5:
        raise ValidationError({"gold_rate": (
            "A share of claims from 0 (no gold items) to 0.5, e.g. 0.05 for 5 %.")})


def _check_second_grader(*, second_grader: Any, strategy: Any) -> None:
    if not isinstance(second_grader, bool):
        raise ValidationError({"second_grader_below_gold_bar": "must be true or false"})
    # Only "1 → 3" opens slots; under 3 graders every result has its second grader already.
    if second_grader and strategy != ADAPTIVE_STRATEGY:
        raise ValidationError({"second_grader_below_gold_bar": (
            "A second grader opens only under \"1 grader, up to 3 where it matters\": "
            "choose that strategy, or turn this off.")})


def _clean_tags(tags: Any) -> list[str]:
    if tags is None:
        return []
    if not isinstance(tags, list) or not all(isinstance(tag, str) for tag in tags):
        raise ValidationError({"tags": "must be a list of strings"})
    return list(dict.fromkeys(tag.strip() for tag in tags if tag.strip()))


@transaction.atomic
def evaluation_update(*, evaluation: Evaluation, **changes: Any) -> Evaluation:
    """Change an evaluation. Scale, strategy and transformers freeze at the first start;
    the model and keywords change only while pending, and after the first start keywords
    may be added but not removed (their grades would go with them)."""
    evaluation = Evaluation.objects.select_for_update().get(pk=evaluation.pk)
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
    _validate_evaluation_fields(team=evaluation.team, model=model,
                                name=changes.get("name", evaluation.name),
                                strategy=changes.get("strategy", evaluation.strategy))
    scale = _team_scale(evaluation.team, changes.get("scale", evaluation.scale))
    if "transformers" in changes or "scale" in changes:
        changes["transformers"] = _validate_transformers(
            evaluation.team, scale, changes.get("transformers", evaluation.transformers))
    if "metrics" in changes:
        changes["metrics"] = _validate_metrics(changes["metrics"])
    if changes.keys() & {"metrics", "scale", "transformers"}:
        metrics_transformers_check(
            team=evaluation.team, scale=scale,
            transformers=changes.get("transformers", evaluation.transformers),
            metrics=changes["metrics"] if "metrics" in changes else [
                {"code": m.code, "k": m.k, "params": m.params}
                for m in evaluation.metric_configs.all()])
    if "tags" in changes:
        changes["tags"] = _clean_tags(changes["tags"])
    if "reuse_grades" in changes and changes["reuse_grades"] not in Evaluation.Reuse.values:
        raise ValidationError({"reuse_grades": f"Use one of {', '.join(Evaluation.Reuse.values)}."})
    update_fields = []
    for key in ("show_position", "auto_finish"):
        if key in changes and not isinstance(changes[key], bool):
            raise ValidationError({key: "must be true or false"})
    if changes.keys() & {"shuffle_results", "show_position"}:
        _check_shuffle(
            shuffle_results=changes.get("shuffle_results", evaluation.shuffle_results),
            show_position=changes.get("show_position", evaluation.show_position))
    if changes.keys() & {"shuffle_results", "grading_order"}:
        _check_grading_order(
            grading_order=changes.get("grading_order", evaluation.grading_order),
            shuffle_results=changes.get("shuffle_results", evaluation.shuffle_results))
    if "gold_rate" in changes:
        _check_gold_rate(changes["gold_rate"])
    if changes.keys() & {"second_grader_below_gold_bar", "strategy"}:
        _check_second_grader(
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
    if update_fields:
        evaluation.save(update_fields=update_fields)
    if "keywords" in changes:
        evaluation_keywords_replace(evaluation=evaluation, keywords=changes["keywords"])
        _query_set_version_unlink_if_changed(evaluation)
    if "metrics" in changes:
        _replace_metrics(evaluation, changes["metrics"])
    if changes.get("auto_finish") is True:
        # Turned on over an evaluation already complete: no grade will come to ask.
        evaluation_finish_if_complete(evaluation_id=evaluation.pk)
    return evaluation


def _query_set_version_unlink_if_changed(evaluation: Evaluation) -> None:
    """An evaluation names the query set version it ran only while its keywords
    are still that version's, in its order."""
    if evaluation.query_set_version_id is None:
        return
    ours = list(evaluation.keywords.order_by("position")
                .values_list("normalized_text", flat=True))
    theirs = list(QuerySetKeyword.objects.filter(version_id=evaluation.query_set_version_id)
                  .order_by("position").values_list("normalized_text", flat=True))
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


def _announce(evaluation: Evaluation, transition: Transition, *, previous_status: str, by: By,
              user: User | None, at: datetime | None = None) -> None:
    transition_announce(
        evaluation_id=evaluation.pk, team_id=evaluation.team_id, transition=transition,
        previous_status=previous_status, status=evaluation.status, by=by,
        user_id=user.pk if user is not None else None, at=at)


def evaluation_start(*, evaluation: Evaluation, enqueue: bool = True, by: By = By.SYSTEM,
                     user: User | None = None) -> Evaluation:
    """pending → fetching; fetch tasks for keywords never fetched (or failed) go out after
    commit. With nothing left to fetch the evaluation goes straight to active.

    When the broker does not take the fetch tasks the evaluation is paused again (pending,
    startable) and a ValidationError on `status` says why; called inside an outer atomic
    block the tasks go out at its commit, and the caller meets FetchNotSent there.

    enqueue=False leaves the fetching to the caller (seed_demo fetches in-process).
    """
    try:
        return _evaluation_start(evaluation=evaluation, enqueue=enqueue, by=by, user=user)
    except FetchNotSent as error:
        raise _fetch_not_sent(evaluation, error, doing="started") from error


def _fetch_not_sent(evaluation: Evaluation, error: FetchNotSent, *, doing: str
                    ) -> ValidationError:
    """The start or retry committed, its fetch tasks did not go out (not all of them): put
    the evaluation back to pending, so nothing waits for tasks that will never come and it
    can be started again; the error that says so."""
    logger.warning("evaluation %s not %s: %s", evaluation.pk, doing, error)
    # No longer fetching (a task that did go out has ended it): nothing to put back.
    with contextlib.suppress(ValidationError):
        evaluation_pause(evaluation=evaluation, by=By.SYSTEM)
    return ValidationError({"status": (
        "The task queue (the broker) cannot be reached, so no fetch could be sent: the "
        f"evaluation was not {doing} and is paused. Start it again once the queue is back.")})


@transaction.atomic
def _evaluation_start(*, evaluation: Evaluation, enqueue: bool, by: By,
                      user: User | None) -> Evaluation:
    evaluation = Evaluation.objects.select_for_update().select_related(
        "model__endpoint", "team").get(pk=evaluation.pk)
    if evaluation.status != Evaluation.Status.PENDING:
        raise ValidationError({"status": f"Only a pending evaluation can start (it is "
                               f"{evaluation.get_status_display().lower()})."})
    if evaluation.archived_at is not None:
        raise ValidationError({"status": "An archived evaluation cannot start."})
    if not evaluation.keywords.exists():
        raise ValidationError({"keywords": "Add at least one keyword."})
    configs = list(evaluation.metric_configs.all())
    if not configs:
        raise ValidationError({"metrics": "Configure at least one metric."})
    if evaluation.model.archived_at or evaluation.model.endpoint.archived_at:
        raise ValidationError({"model": "The search model or its endpoint is archived."})
    metrics_transformers_check(
        team=evaluation.team, scale=_team_scale(evaluation.team, evaluation.scale),
        transformers=evaluation.transformers,
        metrics=[{"code": m.code, "k": m.k, "params": m.params} for m in configs])
    # Failed keywords are fetched again. Claims are dropped: a worker that died left some
    # that would otherwise hold their keywords until they lapse; a task of before the pause
    # still running finds its claims gone and stores nothing (fetching.services).
    # Only the rows that change: a new evaluation's keywords are all pending already, and
    # rewriting 100,000 of them held the start for seconds.
    evaluation.keywords.exclude(fetch_status=Keyword.FetchStatus.FETCHED).filter(
        Q(fetch_status=Keyword.FetchStatus.FAILED) | ~Q(fetch_error="")
        | Q(fetch_claimed_at__isnull=False),
    ).update(fetch_status=Keyword.FetchStatus.PENDING, fetch_error="", fetch_claimed_at=None)
    to_fetch = list(evaluation.keywords.filter(fetch_status=Keyword.FetchStatus.PENDING)
                    .order_by("position").values_list("pk", flat=True))
    evaluation.status = Evaluation.Status.FETCHING if to_fetch else Evaluation.Status.ACTIVE
    evaluation.started_at = evaluation.started_at or timezone.now()
    evaluation.save(update_fields=["status", "started_at"])
    # Before the fetch tasks: on_commit keeps this order, and an eager fetch that ends at
    # once announces `fetched` from inside its task.
    _announce(evaluation, Transition.STARTED, previous_status=Evaluation.Status.PENDING, by=by,
              user=user)
    if to_fetch and enqueue:
        keywords_fetch_enqueue(evaluation_id=evaluation.pk, keyword_ids=to_fetch)
    elif not to_fetch:
        # Active at once, perhaps complete already (graded before a pause): no grade will
        # come to ask.
        evaluation_finish_if_complete(evaluation_id=evaluation.pk)
    return evaluation


def evaluation_retry_failed(*, evaluation: Evaluation, enqueue: bool = True,
                            by: By = By.SYSTEM, user: User | None = None) -> Evaluation:
    """Fetch the failed keywords of a started evaluation again: they go back to pending,
    the evaluation to fetching, and their fetch tasks out after commit. Without failed
    keywords nothing changes, so a repeated request is harmless. When the broker does not
    take the tasks, as evaluation_start.

    enqueue=False leaves the fetching to the caller (seed_demo fetches in-process)."""
    try:
        return _evaluation_retry_failed(evaluation=evaluation, enqueue=enqueue, by=by,
                                        user=user)
    except FetchNotSent as error:
        raise _fetch_not_sent(evaluation, error, doing="retried") from error


@transaction.atomic
def _evaluation_retry_failed(*, evaluation: Evaluation, enqueue: bool, by: By,
                             user: User | None) -> Evaluation:
    evaluation = Evaluation.objects.select_for_update().get(pk=evaluation.pk)
    if evaluation.status not in (Evaluation.Status.ACTIVE, Evaluation.Status.FETCHING):
        state = evaluation.get_status_display().lower()
        hint = " Start it: that fetches them again." if (
            evaluation.status == Evaluation.Status.PENDING) else ""
        raise ValidationError({"status": "Only an active or fetching evaluation retries failed "
                               f"keywords (it is {state}).{hint}"})
    if evaluation.archived_at is not None:
        raise ValidationError({"status": "An archived evaluation cannot fetch."})
    failed = evaluation.keywords.filter(fetch_status=Keyword.FetchStatus.FAILED)
    to_fetch = list(failed.order_by("position").values_list("pk", flat=True))
    if not to_fetch:
        return evaluation
    failed.update(fetch_status=Keyword.FetchStatus.PENDING, fetch_error="",
                  fetch_claimed_at=None)
    if evaluation.status != Evaluation.Status.FETCHING:
        previous_status = evaluation.status
        evaluation.status = Evaluation.Status.FETCHING
        evaluation.save(update_fields=["status"])
        _announce(evaluation, Transition.RETRIED, previous_status=previous_status, by=by,
                  user=user)
    if enqueue:
        keywords_fetch_enqueue(evaluation_id=evaluation.pk, keyword_ids=to_fetch)
    return evaluation


@transaction.atomic
def evaluation_pause(*, evaluation: Evaluation, by: By = By.SYSTEM,
                     user: User | None = None) -> Evaluation:
    """fetching or active → pending. Fetch tasks still queued find it pending and stop."""
    evaluation = Evaluation.objects.select_for_update().get(pk=evaluation.pk)
    if evaluation.status not in (Evaluation.Status.FETCHING, Evaluation.Status.ACTIVE):
        raise ValidationError({"status": f"Only a fetching or active evaluation can pause (it "
                               f"is {evaluation.get_status_display().lower()})."})
    previous_status = evaluation.status
    evaluation.status = Evaluation.Status.PENDING
    evaluation.save(update_fields=["status"])
    _announce(evaluation, Transition.PAUSED, previous_status=previous_status, by=by, user=user)
    return evaluation


@transaction.atomic
def evaluation_finish(*, evaluation: Evaluation, by: By = By.SYSTEM,
                      user: User | None = None) -> Evaluation:
    """By hand; finishing twice is a no-op. The rule that finishes an evaluation by itself
    is evaluation_finish_if_complete (services.completion)."""
    evaluation = Evaluation.objects.select_for_update().get(pk=evaluation.pk)
    if evaluation.status == Evaluation.Status.FINISHED:
        return evaluation
    if evaluation.status == Evaluation.Status.FETCHING:
        raise ValidationError({"status": "Wait until fetching ends, or pause, before finishing."})
    if not evaluation.has_started():
        raise ValidationError({"status": "An evaluation that never started cannot finish."})
    previous_status = evaluation.status
    evaluation.status = Evaluation.Status.FINISHED
    evaluation.finished_at = timezone.now()
    evaluation.save(update_fields=["status", "finished_at"])
    _announce(evaluation, Transition.FINISHED, previous_status=previous_status, by=by,
              user=user, at=evaluation.finished_at)
    return evaluation


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
        keyword_rows(clone, list(evaluation.keywords.order_by("position")
                                  .values_list("text", flat=True))), batch_size=1000)
    _create_metric_configs(clone, [
        {"code": m.code, "k": m.k, "params": m.params} for m in evaluation.metric_configs.all()
    ])
    return clone


@transaction.atomic
def evaluation_archive(*, evaluation: Evaluation, archived: bool = True, by: By = By.SYSTEM,
                       user: User | None = None) -> Evaluation:
    """Archive (or with archived=False restore) the evaluation; archiving an archived one,
    or restoring one that is not, changes nothing and announces nothing."""
    evaluation = Evaluation.objects.select_for_update().get(pk=evaluation.pk)
    if archived and evaluation.status == Evaluation.Status.FETCHING:
        raise ValidationError({"status": "Pause the evaluation before archiving it."})
    if archived == (evaluation.archived_at is not None):
        return evaluation
    evaluation.archived_at = timezone.now() if archived else None
    evaluation.save(update_fields=["archived_at"])
    _announce(evaluation, Transition.ARCHIVED if archived else Transition.RESTORED,
              previous_status=evaluation.status, by=by, user=user,
              at=evaluation.archived_at)
    return evaluation


def evaluation_restore(*, evaluation: Evaluation, by: By = By.SYSTEM,
                       user: User | None = None) -> Evaluation:
    return evaluation_archive(evaluation=evaluation, archived=False, by=by, user=user)


@transaction.atomic
def evaluation_delete(*, evaluation: Evaluation) -> None:
    evaluation = Evaluation.objects.select_for_update().get(pk=evaluation.pk)
    if evaluation.status == Evaluation.Status.FETCHING:
        raise ValidationError({"status": "Pause the evaluation before deleting it."})
    evaluation.delete()
