"""When recompute runs happen: see the package docstring for the states."""

import logging
import time
from collections.abc import Callable, Iterable
from contextlib import suppress
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import DatabaseError, IntegrityError, transaction
from django.utils import timezone

import metrics_engine as core
from evaluations.models import Evaluation, Keyword
from evaluations.services.completion import evaluation_finish_if_complete
from metrics import queries
from metrics.models import KeywordRecomputeMark, RecomputeDue
from metrics.recompute import aggregates, marks
from metrics.recompute.means import evaluation_means_refresh
from metrics.recompute.run import (
    RecomputeRun,
    evaluation_metrics_recompute,
    keyword_metrics_recompute,
)
from metrics.selectors import (
    changed_keywords,
    evaluation_dirty_keyword,
    evaluation_metric_configs,
    team_metric_configs,
)

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class FetchedMarked:
    marked_count: int
    # The runs to queue: evaluation id -> the keyword its task names.
    runs: dict[int, int]


def keywords_fetched_mark_dirty(*, evaluation_id: int, keywords: Iterable[tuple[int, bool]]
                                ) -> FetchedMarked | None:
    """A fetch stored these keywords' results (keyword id, whether it returned any), which
    no grade has asked about yet: their values' bounds are known now (every completion of
    their ungraded slots), and their new slots belong in the dashboard's counts, which the
    progress reads (metrics.recompute.aggregates), with or without metrics; so each is
    marked dirty like a graded one. A fetch that returned nothing opened no slot and
    matters only with a pool metric (recall and best give 0 when the pool knows documents
    the search missed).

    Runs after the fetch committed (metrics.tasks.mark_fetched_dirty_many), for a whole
    stored group at once: the configuration is read once, the marks take two statements,
    and at most one run is queued for the group. Returns None when nothing is marked, else
    how many were and the runs to queue as grades_changed_runs says (none when a run is due
    already). The keywords have no grades, so no pool sibling changes.
    """
    configs = evaluation_metric_configs(evaluation_id=evaluation_id)
    marks_empty = any(core.config_reads_pool(config.code, config.params) for config in configs)
    keyword_ids = [keyword_id for keyword_id, has_results in keywords
                   if has_results or marks_empty]
    if not keyword_ids:
        return None
    with transaction.atomic():
        newly_dirty = marks.keywords_version_bump(keyword_ids=keyword_ids)
    runs = grades_changed_runs(keyword_ids=keyword_ids, newly_dirty_ids=newly_dirty).runs
    return FetchedMarked(len(keyword_ids), runs)


@dataclass(frozen=True)
class ChangedKeywords:
    # The evaluation of each changed keyword that still exists.
    evaluation_of: dict[int, int]
    # Keywords whose pool changed, now marked dirty, and their evaluations.
    pool_siblings: dict[int, int]
    # Evaluations a run answers for (RecomputeDue): it reads these grades, or finds their
    # keywords dirty when it ends.
    run_due: set[int]


# A mark this long past its time is taken for lost (its run died, or runs for long):
# grades queue runs again, which is safe, only more work.
_DUE_GRACE = timedelta(seconds=1)


def keyword_pool_siblings_mark_dirty(*, keyword_ids: Iterable[int]) -> ChangedKeywords:
    """A grade changes the pool of every keyword of the team with the same text and scale;
    those whose evaluation uses a pool metric are marked dirty too (returned, to enqueue).

    Called when grades change (metrics.tasks.mark_pool_siblings_dirty, queued by
    metrics.receivers after their commit), so the siblings' runs read a pool that
    includes them. One query when no evaluation of the team on that
    scale configures a pool metric, the usual case; it also says which evaluations a run
    answers for (RecomputeDue).
    """
    keyword_ids = list(keyword_ids)
    changed = changed_keywords(keyword_ids=keyword_ids, due_after=timezone.now() - _DUE_GRACE)
    evaluation_of = {row.keyword_id: row.evaluation_id for row in changed}
    run_due = {row.evaluation_id for row in changed if row.run_due}
    exposed = [row.keyword_id for row in changed if row.pool_exposed]
    if not exposed:
        return ChangedKeywords(evaluation_of, {}, run_due)
    texts = list(Keyword.objects.filter(pk__in=exposed).values_list(
        "normalized_text", "evaluation__team_id", "evaluation__scale"))
    pool_evaluation_ids = {
        config.evaluation_id for config in team_metric_configs(keyword_ids=exposed)
        if core.config_reads_pool(config.code, config.params)
    }
    if not pool_evaluation_ids:
        return ChangedKeywords(evaluation_of, {}, run_due)
    siblings = Keyword.objects.filter(
        evaluation_id__in=pool_evaluation_ids,
        normalized_text__in={text for text, _, _ in texts},
    ).exclude(pk__in=keyword_ids)
    wanted = set(texts)
    sibling_evaluations = {
        pk: evaluation_id for pk, evaluation_id, text, team, scale in siblings.values_list(
            "pk", "evaluation_id", "normalized_text", "evaluation__team_id", "evaluation__scale")
        if (text, team, scale) in wanted
    }
    if sibling_evaluations:
        marks.keywords_version_bump_all(keyword_ids=sibling_evaluations)
    return ChangedKeywords(evaluation_of, sibling_evaluations, run_due)


def recompute_due_set(*, evaluation_id: int, due_at) -> None:
    """Record that a run of the evaluation answers for its grades: one queued for `due_at`
    (set before it is sent) or one starting now (set before it reads), so whoever sees the
    mark can count on that run."""
    # An IntegrityError means the evaluation was deleted meanwhile.
    with suppress(IntegrityError):
        queries.recompute_due_upsert(evaluation_id=evaluation_id, due_at=due_at)


def recompute_due_release(*, evaluation_id: int) -> int | None:
    """A run of the evaluation ends: lift its mark unless a keyword of the evaluation is
    dirty. Returns such a keyword, for the caller to queue the next run from (keeping the
    mark), or None.

    The mark comes off before the last look: a grade that saw the mark committed before
    that look, which finds its keyword.
    """
    dirty = evaluation_dirty_keyword(evaluation_id=evaluation_id)
    if dirty is not None:
        return dirty
    recompute_due_clear(evaluation_id=evaluation_id)
    return evaluation_dirty_keyword(evaluation_id=evaluation_id)


def recompute_due_clear(*, evaluation_id: int) -> None:
    """No run answers for the evaluation any more: later grades queue their own."""
    RecomputeDue.objects.filter(evaluation_id=evaluation_id).update(due_at=None)


def dirty_keywords_due(*, limit: int = 5000) -> list[int]:
    return [pk for pk, _ in _dirty_due(limit)]


def dirty_keywords_due_by_evaluation(*, limit: int = 5000) -> dict[int, list[int]]:
    """The keywords left dirty too long, by evaluation: one run per evaluation takes them
    all (up to RUN_KEYWORDS, then the next run)."""
    by_evaluation: dict[int, list[int]] = {}
    for pk, evaluation_id in _dirty_due(limit):
        by_evaluation.setdefault(evaluation_id, []).append(pk)
    return by_evaluation


def _dirty_due(limit: int) -> list[tuple[int, int]]:
    cutoff = timezone.now() - timedelta(seconds=settings.RECOMPUTE_SWEEP_AFTER_SECONDS)
    return list(
        KeywordRecomputeMark.objects.filter(dirty_since__lte=cutoff)
        .order_by("dirty_since").values_list("keyword_id", "evaluation_id")[:limit]
    )




# --- after grades change: which runs to queue (metrics.receivers) ---


@dataclass(frozen=True)
class RecomputeRunsWanted:
    # Evaluation id -> the keyword its recompute task names.
    runs: dict[int, int]
    # A pool metric of the team may read these grades: their pool siblings are to be
    # marked dirty (keyword_pool_siblings_mark_dirty, in a task of its own).
    pool_exposed: bool


def grades_changed_runs(
    *, keyword_ids: Iterable[int], newly_dirty_ids: Iterable[int] | None
) -> RecomputeRunsWanted:
    """The recompute tasks to queue for keywords whose grades just changed; reads only,
    one query.

    `newly_dirty_ids` are the keywords the grades turned from clean to dirty
    (metrics.receivers.on_grades_written). The others were dirty already, so a run is
    queued or running and reads these grades: either it has not read the keyword yet, or
    it finds the keyword still dirty when it finishes and queues another. None means every
    keyword.

    One run per evaluation, as a run reads every dirty keyword of its evaluation; none
    while a run answers for the evaluation (RecomputeDue), since it looks for dirty
    keywords once more when it ends.
    """
    keyword_ids = list(keyword_ids)
    changed = changed_keywords(keyword_ids=keyword_ids, due_after=timezone.now() - _DUE_GRACE)
    evaluation_of = {row.keyword_id: row.evaluation_id for row in changed}
    run_due = {row.evaluation_id for row in changed if row.run_due}
    wanted = keyword_ids if newly_dirty_ids is None else newly_dirty_ids
    runs: dict[int, int] = {}
    for keyword_id in sorted(wanted):
        evaluation_id = evaluation_of.get(keyword_id)  # None: deleted since
        if evaluation_id is not None and evaluation_id not in run_due:
            runs.setdefault(evaluation_id, keyword_id)
    return RecomputeRunsWanted(runs, any(row.pool_exposed for row in changed))


def pool_sibling_runs(*, keyword_ids: Iterable[int]) -> dict[int, int]:
    """Mark the pool siblings of keywords whose grades changed dirty
    (keyword_pool_siblings_mark_dirty); the runs to queue for them, evaluation id -> the
    keyword its task names.

    Only grades mark siblings, never a recompute, so two pools that include each other
    cannot keep waking each other up.
    """
    changed = keyword_pool_siblings_mark_dirty(keyword_ids=keyword_ids)
    runs: dict[int, int] = {}
    for keyword_id, evaluation_id in sorted(changed.pool_siblings.items()):
        runs.setdefault(evaluation_id, keyword_id)
    return runs


# --- after the metric configuration changes (metrics.receivers) ---


# send(keyword_id, evaluation_id, deferred, countdown) queues a recompute_keyword task.
SendRun = Callable[[int, int | None, bool, float | None], None]


def evaluation_configuration_changed(*, evaluation_id: int) -> None:
    """Every stored value of the evaluation may be stale: mark its fetched keywords dirty
    (the others hold no value; marks.evaluation_keywords_version_bump).

    Runs inside the transaction that changed the configuration (the receiver of
    EvaluationMetric's post_save and post_delete), so the mark commits with the change:
    if the run queued after commit (recompute_evaluation_scheduled) is lost or its worker
    dies, the sweep finds the keywords; a run that read the older configuration read an
    older version too, and leaves them dirty.
    """
    marks.evaluation_keywords_version_bump(evaluation_id=evaluation_id)


def team_transformer_changed(*, team_id: int, source: str, target: str) -> list[int]:
    """A team's transformer source -> target was saved or deleted: mark dirty the keywords
    of every evaluation that reads its grades through it (on the source scale, with a
    metric on the target scale, no transformer of its own for the pair), as
    evaluation_configuration_changed does; those evaluations, to queue their runs."""
    codes = [code for code, spec in core.METRICS.items() if spec.scale == target]
    if not codes:
        return []
    evaluation_ids = sorted(
        Evaluation.objects.filter(team_id=team_id, scale=source, metric_configs__code__in=codes)
        .exclude(transformers__has_key=f"{source}->{target}")
        .values_list("pk", flat=True).distinct())
    for evaluation_id in evaluation_ids:
        evaluation_configuration_changed(evaluation_id=evaluation_id)
    return evaluation_ids


def recompute_evaluation_scheduled(*, evaluation_id: int, send: SendRun) -> int:
    """metrics.tasks.recompute_evaluation: the whole evaluation from scratch, then a run
    of its dirty keywords through `send` if any is left. A grade that landed on a keyword
    the configuration change had marked queued nothing, counting on this run, which read
    the version before that grade. Returns the number of keywords recomputed."""
    count = evaluation_metrics_recompute(evaluation_id=evaluation_id)
    keyword_id = evaluation_dirty_keyword(evaluation_id=evaluation_id)
    if keyword_id is not None:
        send(keyword_id, evaluation_id, False, None)
    return count


def evaluation_deleted_pool_sibling_runs(*, evaluation_id: int) -> dict[int, int]:
    """The evaluation is being deleted: its grades leave the team's pool, so the keywords
    of other evaluations whose pool metrics read them are marked dirty (pool_sibling_runs);
    the runs to queue for them.

    Runs inside the deleting transaction, before the cascade takes the keywords' texts
    (the receiver of Evaluation's pre_delete): the marks commit with the deletion.
    """
    graded = list(Keyword.objects.filter(evaluation_id=evaluation_id, slots__grade__isnull=False)
                  .order_by("pk").values_list("pk", flat=True).distinct())
    runs: dict[int, int] = {}
    for start in range(0, len(graded), _DELETED_CHUNK):
        for evaluation, keyword in pool_sibling_runs(
                keyword_ids=graded[start:start + _DELETED_CHUNK]).items():
            runs.setdefault(evaluation, keyword)
    return runs


# Keywords per look for pool siblings: far below SQLite's 32,766 bound parameters.
_DELETED_CHUNK = 2000


# --- after keywords are deleted (metrics.receivers) ---


def keywords_deleted_refresh(*, evaluation_id: int) -> float | None:
    """Keywords of the evaluation were deleted, and with them what its dashboard counts and
    running sums held of them (metrics.receivers.on_keyword_deleting dropped both): rebuild
    the counts from what remains, refresh the means, history and progress (the sums
    rebuilt from the remaining values) and ask the finish rule, as a run would. Once, in a
    task after the deletion, so the stored figures follow it at once and the next grade's
    run rebuilds nothing. The progress stored, or None when the evaluation is gone."""
    aggregates.dashboard_aggregates_rebuild(evaluation_id=evaluation_id)
    progress = evaluation_means_refresh(evaluation_id=evaluation_id)
    if progress is not None:
        evaluation_finish_if_complete(evaluation_id=evaluation_id, progress=progress)
    return progress


# --- a worker's runs of a busy evaluation (metrics.tasks.recompute_keyword) ---


# Evaluation id -> time.monotonic() at which this worker process's deferred run of it is
# due. Until then tasks for the evaluation's keywords need not run: the deferred run reads
# every keyword dirty by then, theirs included (their grades committed before they were
# sent). A task costs the worker far more than the few statements of a run.
#
# Only an optimisation, per process: correctness never depends on it. What others count
# on is the RecomputeDue mark in the database, set before the deferred run is sent. A task
# this map ends early names a keyword that is dirty and stays dirty until a run reads it:
# the deferred run does when it comes; if that run is lost or fails, the keyword is still
# dirty and the periodic sweep (RECOMPUTE_SWEEP_AFTER_SECONDS) queues it again. Clearing
# the map, or a second worker process with its own, only costs redundant runs.
_due: dict[int, float] = {}


def busy_interval() -> float:
    """While an evaluation is being graded, its next run starts this long after the
    previous one ended, so each run reads many grades."""
    return settings.RECOMPUTE_BUSY_INTERVAL_SECONDS


def keyword_recompute_scheduled(
    *, keyword_id: int, evaluation_id: int | None, deferred: bool, eager: bool, send: SendRun
) -> str:
    """One recompute task: keyword_metrics_recompute, and the next run of the evaluation
    queued through `send` when anything of it is still dirty. Returns the run's outcome,
    or "deferred" when a deferred run of this process answers for the evaluation.

    `eager` (Celery runs tasks inline: tests, the development server) has no other worker
    to hand over to and no marks to keep: a run that left keywords dirty queues the next
    at once, which runs inline. In a worker, a run answers for its evaluation until it
    ends (RecomputeDue): grades that see the mark queue nothing, and the run, once done,
    queues the next run if anything of the evaluation is dirty (recompute_due_release).
    """
    if eager:
        run = keyword_metrics_recompute(keyword_id=keyword_id)
        if run.outcome in ("ok", "error") and (run.left_dirty or run.more):
            # Grades that arrived while this run computed found their keywords dirty and
            # queued nothing (metrics.receivers): the run that reads them is queued here.
            send((run.left_dirty or run.keyword_ids)[0], run.evaluation_id, False, None)
        return run.outcome
    if deferred:
        _due.pop(evaluation_id, None)
    elif evaluation_id is not None:
        if _due.get(evaluation_id, 0.0) > time.monotonic():
            return "deferred"
        recompute_due_set(evaluation_id=evaluation_id, due_at=timezone.now())
    try:
        run = keyword_metrics_recompute(keyword_id=keyword_id)
    except Exception:
        if evaluation_id is not None:
            _stop_answering(evaluation_id)
        raise
    evaluation_id = run.evaluation_id or evaluation_id
    if evaluation_id is not None:
        _answer_for_later_grades(evaluation_id, run, send)
    return run.outcome


def _stop_answering(evaluation_id: int) -> None:
    """A run failed: lift its mark, so later grades queue runs of their own. A retry (on a
    conflict) sets it again; keywords graded while it ran are the sweep's to queue."""
    _due.pop(evaluation_id, None)
    try:
        recompute_due_clear(evaluation_id=evaluation_id)
    except DatabaseError:
        logger.exception("could not lift the recompute mark of evaluation %s", evaluation_id)


def _answer_for_later_grades(evaluation_id: int, run: RecomputeRun, send: SendRun) -> None:
    """Queue the evaluation's next run if anything of it is dirty; lift the mark if not."""
    if run.left_dirty or run.more:
        keyword_id = (run.left_dirty or run.keyword_ids)[0]
    else:
        keyword_id = recompute_due_release(evaluation_id=evaluation_id)
        if keyword_id is None:
            return
    if _due.get(evaluation_id, 0.0) > time.monotonic():
        return  # this process has one queued already; it answers for the evaluation
    # More keywords waiting than a run takes: at once. Otherwise a little later, so the
    # next run reads the grades of a while.
    delay = 0.0 if run.more else max(settings.RECOMPUTE_DEBOUNCE_SECONDS, busy_interval())
    # Marked before it is sent: whoever sees the mark can count on the run.
    recompute_due_set(evaluation_id=evaluation_id,
                      due_at=timezone.now() + timedelta(seconds=delay))
    send(keyword_id, evaluation_id, True, delay or None)
    if len(_due) > 10_000:
        _due.clear()  # entries of evaluations no longer graded
    _due[evaluation_id] = time.monotonic() + delay
