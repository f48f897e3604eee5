"""Where other apps' announcements turn into recompute work (connected in apps.ready)."""

import logging

from django.conf import settings
from django.db import transaction

from evaluations.models import EvaluationMetric

logger = logging.getLogger(__name__)


def _enqueue(task, *args, countdown: float | None = None, **kwargs) -> None:
    # A broker that is down must not fail the grade that already committed: the keyword
    # stays dirty and the periodic sweep repairs it.
    try:
        task.apply_async(args, kwargs or None, countdown=countdown)
    except Exception:
        logger.exception("could not enqueue %s%r; the sweep will retry", task.name, args)


def on_grades_changed(sender, *, keyword_ids, newly_dirty_ids=None, **kwargs) -> None:
    """Enqueue a recompute of each evaluation with a keyword that just became dirty.

    `newly_dirty_ids` (sent by judgments.services.keywords_mark_dirty) are the keywords the
    transaction turned from clean to dirty. The others were dirty already, so a run is
    queued or running and reads this grade: either it has not read the keyword yet, or it
    finds the keyword still dirty when it finishes and queues another (metrics.tasks).
    Senders that do not say get every keyword enqueued.

    One task per evaluation, as a run reads every dirty keyword of its evaluation; none
    while a run answers for the evaluation (metrics.models.RecomputeDue), since it looks
    for dirty keywords once more when it ends.

    Keywords whose pool changed (the same text elsewhere in the team, where a pool metric
    is configured) are marked dirty here, on grade changes only: a recompute never marks
    others, so two pools that include each other cannot keep waking each other up.
    """
    from metrics.services import keyword_pool_siblings_mark_dirty
    from metrics.tasks import recompute_keyword

    changed = keyword_pool_siblings_mark_dirty(keyword_ids=keyword_ids)
    wanted = keyword_ids if newly_dirty_ids is None else newly_dirty_ids
    runs: dict[int, int] = {}  # evaluation id -> the keyword its task names
    for keyword_id in sorted(wanted):
        evaluation_id = changed.evaluation_of.get(keyword_id)  # None: deleted since
        if evaluation_id is not None and evaluation_id not in changed.run_due:
            runs.setdefault(evaluation_id, keyword_id)
    for keyword_id, evaluation_id in sorted(changed.pool_siblings.items()):
        runs.setdefault(evaluation_id, keyword_id)
    for evaluation_id, keyword_id in runs.items():
        _enqueue(recompute_keyword, keyword_id, evaluation_id=evaluation_id,
                 countdown=settings.RECOMPUTE_DEBOUNCE_SECONDS or None)


def on_snapshots_created(sender, *, evaluation, keyword, snapshots, **kwargs) -> None:
    """A search that returned nothing has pool metric values (0 when the pool knows
    documents) that no grade will trigger: its keyword is marked dirty like a graded one,
    and the recompute is queued after the fetch commits (on_grades_changed)."""
    if snapshots:
        return  # their grades recompute them
    from metrics.services import keyword_empty_results_mark_dirty

    keyword_empty_results_mark_dirty(keyword_id=keyword.pk, evaluation_id=evaluation.pk)


def on_metric_configs_changed(sender, *, instance: EvaluationMetric, **kwargs) -> None:
    from metrics.tasks import recompute_evaluation

    evaluation_id = instance.evaluation_id
    transaction.on_commit(lambda: _enqueue(recompute_evaluation, evaluation_id))
