"""Where other apps' announcements turn into recompute work (connected in apps.ready)."""

import logging

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet

from evaluations.models import Evaluation, EvaluationMetric, Keyword

logger = logging.getLogger(__name__)


def _enqueue(task, *args, countdown: float | None = None, marks: bool = False,
             **kwargs) -> None:
    # A broker that is down must not fail the grade that already committed: the keyword
    # stays dirty and the periodic sweep repairs it. A task that only marks keywords dirty
    # runs here instead, because the sweep finds only keywords that are marked.
    try:
        task.apply_async(args, kwargs or None, countdown=countdown)
    except Exception:
        if marks:
            logger.warning("could not enqueue %s%r; marking here", task.name, args)
            task.apply(args, kwargs or None)
        else:
            logger.exception("could not enqueue %s%r; the sweep will retry", task.name, args)


def _cascaded_from_elsewhere(origin, model) -> bool:
    """Whether a post_delete comes from deleting something else (`origin`, an instance or a
    QuerySet: Django's deletion collector) that takes these rows with it. Marks written then
    would name keywords the same deletion removes."""
    if origin is None:
        return False
    origin_model = origin.model if isinstance(origin, QuerySet) else type(origin)
    return origin_model is not model


def on_grades_written(sender, *, keyword_ids, newly_dirty_ids=None, **kwargs) -> None:
    """Grades of these keywords changed in the transaction under way (judgments sends this
    before it commits): bump their versions and mark them dirty in it, unless the grade's
    own statement did (`newly_dirty_ids` given), and queue their recompute after the
    commit (on_grades_changed)."""
    from metrics.recompute.marks import keywords_version_bump

    keyword_ids = list(keyword_ids)
    if newly_dirty_ids is None:
        newly_dirty_ids = keywords_version_bump(keyword_ids=keyword_ids)
    transaction.on_commit(lambda: on_grades_changed(
        sender, keyword_ids=keyword_ids, newly_dirty_ids=list(newly_dirty_ids)))


def on_grades_changed(sender, *, keyword_ids, newly_dirty_ids=None, **kwargs) -> None:
    """Enqueue a recompute of each evaluation with a keyword that just became dirty
    (metrics.recompute.scheduling.grades_changed_runs says which; one query, no writes).

    Called after the commit of grades (on_grades_written). `newly_dirty_ids` are the
    keywords the transaction turned from clean to dirty; callers that do not say get every
    keyword enqueued. When a pool metric of the team may read these grades, a task marks the
    keywords whose pool changed (the same text elsewhere in the team) dirty and queues
    their runs: on grade changes only, so two pools that include each other cannot keep
    waking each other up.
    """
    from metrics.recompute.scheduling import grades_changed_runs
    from metrics.tasks import mark_pool_siblings_dirty, recompute_keyword

    wanted = grades_changed_runs(keyword_ids=keyword_ids, newly_dirty_ids=newly_dirty_ids)
    if wanted.pool_exposed:
        # First, so the siblings are dirty before the runs queued below read the pool.
        _enqueue(mark_pool_siblings_dirty, sorted(keyword_ids), marks=True)
    for evaluation_id, keyword_id in wanted.runs.items():
        _enqueue(recompute_keyword, keyword_id, evaluation_id=evaluation_id,
                 countdown=settings.RECOMPUTE_DEBOUNCE_SECONDS or None)


def on_snapshots_created(sender, *, evaluation, snapshots_by_keyword, **kwargs) -> None:
    """Fetched keywords have values no grade will trigger: the bounds of their ungraded
    results, or for a search that returned nothing the pool metrics' values (0 when the
    pool knows documents). After the fetch commits, one task for the group marks each
    keyword dirty like a graded one when a metric (for an empty result, a pool metric) is
    configured, which queues its recompute (on_grades_changed): one message per stored
    group, not one per keyword."""
    from metrics.tasks import mark_fetched_dirty_many

    evaluation_id = evaluation.pk
    keywords = [[keyword.pk, bool(snapshots)] for keyword, snapshots in
                snapshots_by_keyword.items()]
    if keywords:
        transaction.on_commit(lambda: _enqueue(
            mark_fetched_dirty_many, evaluation_id, keywords, marks=True))


def on_metric_configs_changed(sender, *, instance: EvaluationMetric,
                              update_fields=None, **kwargs) -> None:
    """A metric was added, changed or removed: the evaluation's keywords are marked dirty
    here, inside the transaction that made the change (post_save and post_delete run in
    it), and its recompute is enqueued after commit.

    Unlike the receivers of announcements made after commit, it writes: the mark must
    commit with the change, or a lost message or a dead worker would leave the values
    stale with nothing to tell the sweep (scheduling.evaluation_configuration_changed).
    Moving a metric in the list changes no value and marks nothing, nor does deleting the
    evaluation (or its team), which takes the keywords with it."""
    if update_fields is not None and set(update_fields) <= {"position"}:
        return
    if _cascaded_from_elsewhere(kwargs.get("origin"), EvaluationMetric):
        return
    from metrics.recompute.scheduling import evaluation_configuration_changed
    from metrics.tasks import recompute_evaluation

    evaluation_id = instance.evaluation_id
    # Only fetched keywords hold values: before the first fetch (an evaluation being
    # created, a schedule's run) there is nothing to mark or recompute, and a run created
    # with its metrics would otherwise send one message per metric for nothing.
    if not Keyword.objects.filter(evaluation_id=evaluation_id,
                                  fetch_status=Keyword.FetchStatus.FETCHED).exists():
        return
    evaluation_configuration_changed(evaluation_id=evaluation_id)
    transaction.on_commit(lambda: _enqueue(recompute_evaluation, evaluation_id))


def on_team_transformers_changed(sender, *, instance, **kwargs) -> None:
    """A team's transformer was saved or deleted: the values of the evaluations that read
    grades through it change though no grade did. Marked here, in the transaction of the
    change, for the reason on_metric_configs_changed gives; their runs after commit. A
    team being deleted takes its evaluations with it: nothing to mark."""
    if _cascaded_from_elsewhere(kwargs.get("origin"), type(instance)):
        return
    from metrics.recompute.scheduling import team_transformer_changed
    from metrics.tasks import recompute_evaluation

    for evaluation_id in team_transformer_changed(
            team_id=instance.team_id, source=instance.source, target=instance.target):
        transaction.on_commit(
            lambda evaluation_id=evaluation_id: _enqueue(recompute_evaluation, evaluation_id))


def on_evaluation_deleting(sender, *, instance: Evaluation, **kwargs) -> None:
    """An evaluation is being deleted: pool metrics elsewhere in the team that read its
    grades change. Their keywords are marked here, inside the deleting transaction and
    before the cascade (scheduling.evaluation_deleted_pool_sibling_runs); their runs are
    queued after commit."""
    from metrics.recompute.scheduling import evaluation_deleted_pool_sibling_runs
    from metrics.tasks import recompute_keyword

    for evaluation_id, keyword_id in evaluation_deleted_pool_sibling_runs(
            evaluation_id=instance.pk).items():
        transaction.on_commit(
            lambda keyword_id=keyword_id, evaluation_id=evaluation_id: _enqueue(
                recompute_keyword, keyword_id, evaluation_id=evaluation_id))


def on_keyword_deleting(sender, *, instance: Keyword, origin=None, **kwargs) -> None:
    """Keywords are being deleted (before the cascade takes their values): their
    evaluation's running sums and dashboard counts would still count them, so they are
    dropped here, in the deleting transaction and under the evaluation's lock; after the
    commit a task rebuilds them from what remains and refreshes the means and progress
    (metrics.recompute.scheduling.keywords_deleted_refresh; if it is lost, the next run
    of the evaluation rebuilds them). Once per evaluation and deletion; nothing when the
    evaluation (or team) itself goes."""
    if _cascaded_from_elsewhere(origin, Keyword):
        return
    # One deletion of many keywords sends this for each: the origin remembers which
    # evaluations it has done.
    done = getattr(origin, "_metrics_sums_forgotten", None) if origin is not None else None
    if done is not None and instance.evaluation_id in done:
        return
    from metrics.recompute.means import evaluation_sums_forget
    from metrics.tasks import refresh_after_keywords_deleted

    evaluation_id = instance.evaluation_id
    evaluation_sums_forget(evaluation_id=evaluation_id)
    transaction.on_commit(lambda: _enqueue(refresh_after_keywords_deleted, evaluation_id))
    if origin is not None:
        if done is None:
            done = set()
            origin._metrics_sums_forgotten = done
        done.add(instance.evaluation_id)


def on_keyword_traffic_changed(sender, *, evaluation_id: int, **kwargs) -> None:
    """Weights or tags of a started evaluation's keywords changed in the transaction under
    way: its per-segment sums are regrouped in it (metrics.recompute.segments)."""
    from metrics.recompute.segments import segment_sums_reweigh

    segment_sums_reweigh(evaluation_id=evaluation_id)
