"""The recompute run: a keyword's evaluation's dirty keywords (or a whole evaluation)
through metrics_engine, written with the keyword version they were computed from.

Every write is labelled with the keyword version whose grades produced it and only lands
if nothing newer landed first, so runs may overlap, repeat or arrive out of order and the
stored values still end equal to a from-scratch recompute.
"""

import logging
import sqlite3
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from django.db import IntegrityError, OperationalError
from django.urls import reverse

import metrics_engine as core
from evaluations.models import Evaluation, EvaluationMetric, Keyword
from evaluations.services.completion import evaluation_finish_if_complete
from judgments import scales
from metrics import queries
from metrics.recompute import aggregates, marks
from metrics.recompute.means import evaluation_means_refresh, keyword_values_write
from metrics.selectors import (
    evaluation_dirty_keywords,
    evaluation_grade_array,
    evaluation_keyword_versions,
    evaluation_metric_configs,
    evaluation_slot_table,
    evaluation_with_metric_configs,
    keyword_pool_others,
    keyword_results,
)
from notifications.models import Event
from notifications.services import notify
from searchtweak.models import Role

logger = logging.getLogger(__name__)

# Rows per INSERT/UPDATE statement: far below SQLite's 32,766 bound parameters.
_WRITE_CHUNK = 2000
# A from-scratch run of at least this many keywords refreshes the planner's statistics of
# the values it rewrote.
ANALYZE_AFTER_KEYWORDS = 10_000


class RecomputeConflict(Exception):
    """A transient conflict (e.g. a deadlock victim); the task retries."""


# Errors a retry resolves: runs of one evaluation in two worker processes can lock rows
# in opposite orders (PostgreSQL picks a victim).
_TRANSIENT: tuple[type[BaseException], ...] = ()
# A value row names a keyword or a metric configuration deleted after the run read it
# (keywords replaced, a metric removed): the retry reads what remains.
_GONE: tuple[type[BaseException], ...] = ()
try:
    import psycopg.errors

    _TRANSIENT = (psycopg.errors.DeadlockDetected, psycopg.errors.SerializationFailure)
    _GONE = (psycopg.errors.ForeignKeyViolation,)
except ImportError:  # pragma: no cover - SQLite-only installs
    pass


def evaluation_scale(evaluation: Evaluation) -> core.Scale | str:
    if evaluation.scale in core.SCALES:
        return evaluation.scale
    # The team's own scale, asked of judgments directly (metrics sits above it), not
    # through evaluations.hooks, which exists for evaluations, below judgments.
    bounds = scales.provider_bounds(evaluation.team, evaluation.scale)
    if bounds is None:
        raise core.MetricInputError("scale", f"unknown scale {evaluation.scale!r}")
    return core.Scale(evaluation.scale, bounds[0], bounds[1])


def evaluation_transformers(evaluation: Evaluation) -> dict:
    """The transformers a metric of the evaluation may read (docs/METRICS.md stage 0): the
    team's from the evaluation's scale, overridden by the evaluation's own, each between
    built-in scales and the evaluation's own.

    A metric reads a built-in scale or the evaluation's, so a transformer naming another of
    the team's scales (graded -> a team's 1..5) feeds none: it was checked against that
    scale when it was saved, and is left out here rather than handed to metrics_engine, which
    knows no team's scales. Team transformers between other scales are not this
    evaluation's either."""
    prefix = f"{evaluation.scale}->"
    team_transformers = scales.provider_transformers(evaluation.team)
    readable = {*core.SCALES, evaluation.scale}
    return {
        key: mapping
        for key, mapping in {
            **{key: mapping for key, mapping in team_transformers.items()
               if key.startswith(prefix)},
            **evaluation.transformers,
        }.items()
        if not isinstance(key, str) or "->" not in key or set(key.split("->")) <= readable
    }


# Keywords one run recomputes at most: it bounds a run's time and statement sizes. A run
# that found more waiting is followed at once by another (metrics.tasks).
RUN_KEYWORDS = 1000


@dataclass(frozen=True)
class RecomputeRun:
    """What one keyword_metrics_recompute did.

    outcome: "missing" (no such keyword), "fresh" (nothing of its evaluation was dirty),
    "error" (stored on the evaluation) or "ok".
    """

    outcome: str
    evaluation_id: int | None = None
    keyword_ids: tuple[int, ...] = ()
    # Keywords of this run graded again while it ran: they stay dirty, and nothing else
    # queues their next run (their grades found them dirty already).
    left_dirty: tuple[int, ...] = ()
    # More dirty keywords were waiting than one run takes.
    more: bool = False


def keyword_metrics_recompute(*, keyword_id: int) -> RecomputeRun:
    """Recompute the keyword and every other dirty keyword of its evaluation (up to
    RUN_KEYWORDS, oldest first) together, then the evaluation's means once.

    Under load one run covers the keywords graded since the previous one; the runs queued
    for them find nothing dirty and return "fresh".
    """
    try:
        return _recompute_dirty(keyword_id)
    except (OperationalError, IntegrityError) as error:
        _raise_conflict_if_transient(error)
        raise


def _raise_conflict_if_transient(error: OperationalError | IntegrityError) -> None:
    if isinstance(error, OperationalError) and (
            isinstance(error.__cause__, _TRANSIENT) or _sqlite_busy(error)):
        raise RecomputeConflict(str(error)) from error
    if isinstance(error, IntegrityError) and _row_gone(error):
        raise RecomputeConflict(str(error)) from error


def _sqlite_busy(error: OperationalError) -> bool:
    """SQLite's busy timeout ran out while another process held the write lock."""
    return isinstance(error.__cause__, sqlite3.OperationalError) and "locked" in str(error)


def _row_gone(error: IntegrityError) -> bool:
    """A foreign key of a written row points at a row deleted since the run read it."""
    return isinstance(error.__cause__, _GONE) or (
        isinstance(error.__cause__, sqlite3.IntegrityError) and "FOREIGN KEY" in str(error))


def _recompute_dirty(keyword_id: int) -> RecomputeRun:
    dirty = evaluation_dirty_keywords(keyword_id=keyword_id, limit=RUN_KEYWORDS)
    if not dirty.exists:
        return RecomputeRun("missing")
    evaluation_id = dirty.evaluation_id
    if not dirty.versions:
        return RecomputeRun("fresh", evaluation_id)
    keyword_ids = [pk for pk, _ in dirty.versions]
    loaded = evaluation_with_metric_configs(evaluation_id=evaluation_id)
    if loaded is None:
        return RecomputeRun("missing")  # deleted since
    evaluation, configs = loaded
    outcome = "ok"
    if configs:
        try:
            values_by_config = _batch_values(evaluation, configs, keyword_ids)
        except core.MetricInputError as error:
            _record_error(evaluation, error)
            outcome = "error"
        else:
            # In keyword order, as every run writes: two runs wait for each other's rows
            # instead of deadlocking.
            rows = sorted(range(len(keyword_ids)), key=keyword_ids.__getitem__)
            columns = [_columns(computed) for computed in values_by_config]
            _upsert_values(evaluation_id, queries.KeywordValueColumns.from_rows(
                _value_row(keyword_ids[row], config.pk, column, row, dirty.versions[row][1])
                for row in rows
                for config, column in zip(configs, columns, strict=True)
            ))
    if not configs or outcome == "error":
        # No values written; the dashboard's counts, which the progress reads, still
        # follow the keywords' slots.
        aggregates.dashboard_aggregates_update(keyword_ids=keyword_ids)
    progress = evaluation_means_refresh(evaluation_id=evaluation_id) if outcome == "ok" else None
    # Last, so a clean keyword's values are in the means as well.
    left_dirty = marks.keywords_mark_computed(dirty.versions)
    # After the marks: the rule waits for clean keywords, and of this run and a fetch's end
    # (the evaluation turning active) whichever asks second sees both.
    _finish_if_complete(evaluation_id, progress)
    return RecomputeRun(outcome, evaluation_id, tuple(keyword_ids), tuple(left_dirty),
                        dirty.more)


def evaluation_metrics_recompute(*, evaluation_id: int, progress=None) -> int:
    """Recompute every keyword of an evaluation from scratch with evaluate_batch.

    `progress`, if given, is called with the number of keywords done after each chunk.
    Returns the number of keywords recomputed. A keyword or metric deleted after it read
    them (keywords replaced, a metric removed) makes it read the evaluation again.

    The keywords' dirty marks are cleared last, each only if its version is still the one
    read here (before the configuration, so a configuration change committed in between
    leaves its keywords dirty): a run that dies part way leaves them for the sweep.
    """
    attempts = _EVALUATION_ATTEMPTS
    while True:
        attempts -= 1
        try:
            return _recompute_evaluation(evaluation_id, progress)
        except IntegrityError as error:
            if attempts and _row_gone(error):
                logger.info("evaluation %s changed under its recompute; reading it again",
                            evaluation_id)
                continue
            _raise_conflict_if_transient(error)
            raise
        except OperationalError as error:
            _raise_conflict_if_transient(error)
            raise


# Each attempt follows a configuration change that committed during the previous one; past
# these the task's retry (RecomputeConflict) takes over, a little later.
_EVALUATION_ATTEMPTS = 3


def _recompute_evaluation(evaluation_id: int, progress) -> int:
    keywords = evaluation_keyword_versions(evaluation_id=evaluation_id)
    evaluation = Evaluation.objects.select_related("team").filter(pk=evaluation_id).first()
    if evaluation is None:
        return 0
    configs = evaluation_metric_configs(evaluation_id=evaluation_id)
    keyword_ids = [pk for pk, _ in keywords]
    versions = dict(keywords)
    if not configs or not keyword_ids:
        # No values: the counts from the slots alone (and none left of a removed metric's).
        aggregates.dashboard_aggregates_rebuild(evaluation_id=evaluation_id)
        stored = evaluation_means_refresh(evaluation_id=evaluation_id, rebuild=True)
        marks.keywords_mark_computed(keywords)
        _finish_if_complete(evaluation_id, stored)
        if progress is not None:
            progress(len(keyword_ids))
        return len(keyword_ids)
    # Read once: the metrics and the dashboard's counts both come from it.
    slot_table = evaluation_slot_table(evaluation_id=evaluation_id)
    try:
        values_by_config = _batch_values(evaluation, configs, keyword_ids,
                                         slot_table=slot_table)
    except core.MetricInputError as error:
        _record_error(evaluation, error)
        marks.keywords_mark_computed(keywords)
        return 0
    # Its writes need not move the running sums: the refresh at the end rebuilds them.
    queries.metric_sums_forget(evaluation_id=evaluation_id)
    columns = [_columns(computed) for computed in values_by_config]
    for start in range(0, len(keyword_ids), _WRITE_CHUNK):
        chunk = keyword_ids[start:start + _WRITE_CHUNK]
        stop = start + len(chunk)
        chunk_versions = [versions[keyword_id] for keyword_id in chunk]
        # Config by config, a slice of each column: no tuple per row (600,000 at 100,000
        # keywords x 6 metrics).
        _upsert_values(evaluation_id, queries.KeywordValueColumns(
            chunk * len(configs),
            [config.pk for config in configs for _ in chunk],
            [value for column in columns for value in column.values[start:stop]],
            [value for column in columns for value in column.lower[start:stop]],
            [value for column in columns for value in column.upper[start:stop]],
            [value for column in columns for value in column.exact[start:stop]],
            chunk_versions * len(configs),
        ), dashboard=False)
        if progress is not None:
            progress(len(chunk))
    if len(keyword_ids) >= ANALYZE_AFTER_KEYWORDS:
        # Autovacuum would see the rewrite a minute later; until then the planner judged
        # the values table by its old statistics, and a search sorted by a metric walked
        # the metric's whole index once per keyword (47 s a request at 100,000 keywords).
        queries.keyword_values_analyze()
    # From scratch: the counts and sums too (the repair path); the counts first, since the
    # refresh reads its progress from them.
    aggregates.dashboard_aggregates_rebuild(
        evaluation_id=evaluation_id, counted=aggregates.shares_count(
            slot_table=slot_table, keyword_ids=keyword_ids, versions=versions,
            metric_values=[(config.pk, computed.values)
                           for config, computed in zip(configs, values_by_config, strict=True)]))
    stored = evaluation_means_refresh(evaluation_id=evaluation_id, force_history=True,
                                      rebuild=True)
    marks.keywords_mark_computed(keywords)
    _finish_if_complete(evaluation_id, stored)
    return len(keyword_ids)


def _finish_if_complete(evaluation_id: int, progress: float | None) -> None:
    """Ask the lifecycle's finish rule after a run's marks are cleared (it waits for clean
    keywords); not when the refresh found the evaluation gone."""
    if progress is not None:
        evaluation_finish_if_complete(evaluation_id=evaluation_id, progress=progress)


@dataclass(frozen=True)
class _Computed:
    """One config's values for the run's keywords, with their bounds (NaN = null)."""

    values: np.ndarray
    bounds: core.BatchBounds


def _batch_values(
    evaluation: Evaluation, configs: list[EvaluationMetric], keyword_ids: list[int], *,
    slot_table: np.ndarray | None = None,
) -> list[_Computed]:
    scale = evaluation_scale(evaluation)
    transformers = evaluation_transformers(evaluation)
    # A configuration the registry refuses goes the plain way, whose engine raises its
    # MetricInputError (recorded on the evaluation).
    pooled = [core.config_reads_pool(c.code, c.params) for c in configs]
    slots = evaluation_grade_array(
        evaluation=evaluation, keyword_ids=keyword_ids, positions=max(c.k for c in configs),
        slot_table=slot_table,
    )
    plain_configs = [c for c, uses_pool in zip(configs, pooled, strict=True) if not uses_pool]
    plain_values = core.evaluate_batch_many(
        [(c.code, c.k, c.params) for c in plain_configs], slots.grades, scale=scale,
        transformers=transformers, present=core.positions_present(slots.grades, slots.ungraded),
    ) if plain_configs else []
    plain_bounds = core.bounds_batch_many(
        [(c.code, c.k, c.params) for c in plain_configs], slots.grades, slots.ungraded,
        scale=scale, transformers=transformers, values=plain_values,
    ) if plain_configs else []
    plain = iter([_Computed(values, bounds)
                  for values, bounds in zip(plain_values, plain_bounds, strict=True)])
    pool_values = iter(_pool_metric_values(
        evaluation, [c for c, uses_pool in zip(configs, pooled, strict=True) if uses_pool],
        keyword_ids, scale=scale, transformers=transformers,
    ) if any(pooled) else [])
    return [next(pool_values) if uses_pool else next(plain) for uses_pool in pooled]


def _pool_metric_values(
    evaluation: Evaluation, configs: list[EvaluationMetric], keyword_ids: list[int], *,
    scale, transformers: dict,
) -> list[_Computed]:
    # Pool metrics read other evaluations' grades per keyword text: gathered per keyword,
    # then evaluated together by the same engine path the per-keyword recompute uses.
    keywords = Keyword.objects.in_bulk(keyword_ids)
    results = [keyword_results(keyword_id=keyword_id) for keyword_id in keyword_ids]
    pools = [keyword_pool_others(keyword=keywords[keyword_id], evaluation=evaluation)
             for keyword_id in keyword_ids]
    # No results is "the search returned nothing" (recall and best then give 0) only for a
    # fetched keyword; one not fetched yet or whose fetch failed has no value.
    unknown = np.array([keywords[keyword_id].fetch_status != Keyword.FetchStatus.FETCHED
                        for keyword_id in keyword_ids], dtype=bool)
    computed = []
    for config in configs:
        values = np.where(unknown, np.nan, core.evaluate_keywords(
            config.code, [r.grades for r in results], doc_ids=[r.doc_ids for r in results],
            k=config.k, scale=scale, params=config.params, transformers=transformers,
            pools=pools,
        ))
        lower, upper = values.copy(), values.copy()
        exact = np.ones(len(values), dtype=bool)
        # The pool reads every result, so any ungraded slot can move the value; only
        # this evaluation's slots can be ungraded (the pool's others are grades).
        for row, result in enumerate(results):
            if unknown[row] or all(g is not None for grades in result.grades for g in grades):
                continue
            found = core.keyword_bounds(
                config.code, result.grades, doc_ids=result.doc_ids, pool=pools[row],
                k=config.k, scale=scale, params=config.params, transformers=transformers,
            )
            lower[row] = np.nan if found.lower is None else found.lower
            upper[row] = np.nan if found.upper is None else found.upper
            exact[row] = found.exact
        computed.append(_Computed(values, core.BatchBounds(lower, upper, exact)))
    return computed


class _Columns(NamedTuple):
    """One config's values and bounds as Python lists (None for NaN), read row by row."""

    values: list[float | None]
    lower: list[float | None]
    upper: list[float | None]
    exact: list[bool]


def _columns(computed: _Computed) -> _Columns:
    # Converted once a config, not value by value: indexing a numpy array and isnan on
    # its scalar cost microseconds each, for 600,000 values at 100,000 keywords x 6
    # metrics. tolist() gives the same floats float() does.
    bounds = computed.bounds
    return _Columns(_optional(computed.values), _optional(bounds.lower),
                    _optional(bounds.upper), [bool(exact) for exact in bounds.exact.tolist()])


def _optional(array: np.ndarray) -> list[float | None]:
    return [None if value != value else value  # NaN != NaN
            for value in np.asarray(array, dtype=float).tolist()]


def _value_row(keyword_id: int, metric_id: int, column: _Columns, row: int,
               version: int) -> queries.KeywordValueRow:
    return queries.KeywordValueRow(keyword_id, metric_id, column.values[row],
                                   column.lower[row], column.upper[row], column.exact[row],
                                   version)


def _upsert_values(evaluation_id: int, columns: queries.KeywordValueColumns, *,
                   dashboard: bool = True) -> None:
    """Write the rows with the running sums they move (means.keyword_values_write); a row
    computed from an older keyword version than the stored one is dropped, so late runs
    cannot overwrite. Then the keywords' widths for the decisive queue, from what is now
    stored, and (unless the caller rebuilds them after) their dashboard shares."""
    keyword_values_write(evaluation_id=evaluation_id, columns=columns)
    keyword_ids = sorted(set(columns.keyword_ids))
    queries.keyword_queue_widths_store(keyword_ids=keyword_ids)
    if dashboard:
        aggregates.dashboard_aggregates_update(keyword_ids=keyword_ids)


def _record_error(evaluation: Evaluation, error: Exception) -> None:
    """Store why the run could not compute (the dashboard shows it) and tell the team's
    leads when the reason is new: a failing configuration fails every run, and one message
    per run would bury them."""
    logger.warning("recompute of evaluation %s failed: %s", evaluation.pk, error)
    if queries.evaluation_recompute_error_store(evaluation_id=evaluation.pk, error=str(error)):
        # The run's evaluation carries only what a recompute reads (no name).
        name = Evaluation.objects.filter(pk=evaluation.pk).values_list("name", flat=True).first()
        notify(team_id=evaluation.team_id, event=Event.RECOMPUTE_FAILED, minimum_role=Role.LEAD,
               text=f"The metrics of “{name}” could not be computed: {error}",
               url=reverse("metrics:evaluation_dashboard", args=[evaluation.pk]),
               payload={"evaluation": evaluation.pk, "error": str(error)})


