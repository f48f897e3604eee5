"""Writes for an evaluation's lifecycle: start (one, or many created started at once),
retry failed keywords, pause, finish by hand, archive, restore, delete. Creating, changing
and copying one is services.configuration's; the finish once complete is
services.completion's.

Every change of status or archive flag announces itself (evaluations.events) after commit,
once: `by` says how it happened (a page, the API, a rule, the system) and `user` who, if
anyone. The end of a fetch is announced by evaluations.fetching.services.
"""

import contextlib
import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from audit.models import Action
from audit.services import audit_record
from evaluations.events import By, Transition, transition_announce
from evaluations.fetching.dispatch import FetchNotSent, keywords_fetch_enqueue
from evaluations.models import (
    Endpoint,
    Evaluation,
    EvaluationMetric,
    Keyword,
    OfflineRun,
    QuerySetVersion,
    SearchModel,
)
from evaluations.services.completion import (
    evaluation_finish_if_complete,
    evaluation_finished_notify,
)
from evaluations.services.config_checks import metrics_transformers_check, team_scale_check
from evaluations.services.keywords import KeywordEntry, keyword_rows
from searchtweak.models import Team, User

logger = logging.getLogger(__name__)


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
    keywords: list[KeywordEntry]
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
    # An offline model has no endpoint: PostgreSQL locks no row of an outer join's null
    # side, so the endpoint's row (when there is one) is locked on its own.
    evaluation = Evaluation.objects.select_for_update(
        of=("self", "model", "team")).select_related("model__endpoint", "team").get(
        pk=evaluation.pk)
    if evaluation.model.endpoint_id is not None:
        list(Endpoint.objects.select_for_update().filter(
            pk=evaluation.model.endpoint_id).values_list("pk", flat=True))
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
    model = evaluation.model
    if model.archived_at or (model.endpoint is not None and model.endpoint.archived_at):
        raise ValidationError({"model": "The search model or its endpoint is archived."})
    if model.is_offline and not OfflineRun.objects.filter(model=model).exists():
        raise ValidationError({"model": f"{model.name} is offline and has no run file yet: "
                               "upload one first."})
    metrics_transformers_check(
        team=evaluation.team, scale=team_scale_check(evaluation.team, evaluation.scale),
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
    evaluation_finished_notify(evaluation_id=evaluation.pk, team_id=evaluation.team_id,
                               name=evaluation.name, by=by, at=evaluation.finished_at)
    _announce(evaluation, Transition.FINISHED, previous_status=previous_status, by=by,
              user=user, at=evaluation.finished_at)
    return evaluation


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
def evaluation_delete(*, evaluation: Evaluation, user: User | None = None) -> None:
    evaluation = Evaluation.objects.select_for_update().get(pk=evaluation.pk)
    if evaluation.status == Evaluation.Status.FETCHING:
        raise ValidationError({"status": "Pause the evaluation before deleting it."})
    audit_record(action=Action.EVALUATION_DELETED, actor=user, team_id=evaluation.team_id,
                 object_type="evaluation", object_id=evaluation.pk,
                 before={"name": evaluation.name, "status": evaluation.status})
    evaluation.delete()
