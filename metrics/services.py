"""The recompute pipeline (docs/ARCHITECTURE.md): stored metric values always follow the grades.

Every write is labelled with the keyword version whose grades produced it and only lands
if nothing newer landed first, so runs may overlap, repeat or arrive out of order and the
stored values still end equal to a from-scratch recompute.
"""

import logging
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta

import numpy as np
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, OperationalError, connection, transaction
from django.db.models import F, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from evaluations import hooks
from evaluations.models import Evaluation, EvaluationMetric, Keyword
from judgments.models import FeedbackSlot
from judgments.services import keywords_mark_dirty
from metrics import core
from metrics.models import KeywordMetricValue, MetricHistoryPoint, RecomputeDue, TeamBaseline
from metrics.selectors import (
    changed_keywords,
    evaluation_dirty_keyword,
    evaluation_dirty_keywords,
    evaluation_grade_array,
    evaluation_metric_configs,
    evaluation_with_metric_configs,
    keyword_pool_others,
    keyword_results,
    team_metric_configs,
)
from searchtweak.models import Team, User

logger = logging.getLogger(__name__)

# Rows per INSERT/UPDATE statement: far below SQLite's 32,766 bound parameters.
_WRITE_CHUNK = 2000


class RecomputeConflict(Exception):
    """A transient conflict (e.g. a deadlock victim); the task retries."""


# Errors a retry resolves: runs of one evaluation in two worker processes can lock rows
# in opposite orders (PostgreSQL picks a victim).
_TRANSIENT: tuple[type[BaseException], ...] = ()
try:
    import psycopg.errors

    _TRANSIENT = (psycopg.errors.DeadlockDetected, psycopg.errors.SerializationFailure)
except ImportError:  # pragma: no cover - SQLite-only installs
    pass


def evaluation_scale(evaluation: Evaluation) -> core.Scale | str:
    if evaluation.scale in core.SCALES:
        return evaluation.scale
    scale = hooks.team_scale(evaluation.team, evaluation.scale)
    if scale is None:
        raise core.MetricInputError("scale", f"unknown scale {evaluation.scale!r}")
    return scale


def evaluation_transformers(evaluation: Evaluation) -> dict:
    """The transformers from the evaluation's scale: the team's, overridden by the
    evaluation's own (docs/METRICS.md stage 0). Team transformers between other scales are left
    out; they are not this evaluation's to validate."""
    prefix = f"{evaluation.scale}->"
    team_transformers = hooks.scale_provider().transformers(evaluation.team)
    return {
        **{key: mapping for key, mapping in team_transformers.items() if key.startswith(prefix)},
        **evaluation.transformers,
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
    except OperationalError as error:
        if isinstance(error.__cause__, _TRANSIENT) or _sqlite_busy(error):
            raise RecomputeConflict(str(error)) from error
        raise


def _sqlite_busy(error: OperationalError) -> bool:
    """SQLite's busy timeout ran out while another process held the write lock."""
    return isinstance(error.__cause__, sqlite3.OperationalError) and "locked" in str(error)


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
            _upsert_values(
                (keyword_ids[row], config.pk, _as_optional(values[row]), dirty.versions[row][1])
                for row in rows
                for config, values in zip(configs, values_by_config, strict=True)
            )
    if outcome == "ok":
        evaluation_means_refresh(evaluation_id=evaluation_id)
    # Last, so a clean keyword's values are in the means as well.
    left_dirty = _mark_computed(dirty.versions)
    return RecomputeRun(outcome, evaluation_id, tuple(keyword_ids), tuple(left_dirty),
                        dirty.more)


def evaluation_metrics_recompute(*, evaluation_id: int, progress=None) -> int:
    """Recompute every keyword of an evaluation from scratch with evaluate_batch.

    `progress`, if given, is called with the number of keywords done after each chunk.
    Returns the number of keywords recomputed.
    """
    evaluation = Evaluation.objects.select_related("team").filter(pk=evaluation_id).first()
    if evaluation is None:
        return 0
    configs = evaluation_metric_configs(evaluation_id=evaluation_id)
    keywords = list(Keyword.objects.filter(evaluation_id=evaluation_id)
                    .order_by("position").values_list("pk", "version"))
    keyword_ids = [pk for pk, _ in keywords]
    versions = dict(keywords)
    if not configs or not keyword_ids:
        _mark_computed(keywords)
        evaluation_means_refresh(evaluation_id=evaluation_id)
        if progress is not None:
            progress(len(keyword_ids))
        return len(keyword_ids)
    try:
        values_by_config = _batch_values(evaluation, configs, keyword_ids)
    except core.MetricInputError as error:
        _record_error(evaluation, error)
        _mark_computed(keywords)
        return 0
    for start in range(0, len(keyword_ids), _WRITE_CHUNK):
        chunk = keyword_ids[start:start + _WRITE_CHUNK]
        _upsert_values(
            (keyword_id, config.pk, _as_optional(values[start + offset]), versions[keyword_id])
            for config, values in zip(configs, values_by_config, strict=True)
            for offset, keyword_id in enumerate(chunk)
        )
        _mark_computed([(keyword_id, versions[keyword_id]) for keyword_id in chunk])
        if progress is not None:
            progress(len(chunk))
    evaluation_means_refresh(evaluation_id=evaluation_id, force_history=True)
    return len(keyword_ids)


def _batch_values(
    evaluation: Evaluation, configs: list[EvaluationMetric], keyword_ids: list[int]
) -> list[np.ndarray]:
    scale = evaluation_scale(evaluation)
    transformers = evaluation_transformers(evaluation)
    pooled = [core.needs_pool(c.code, core.resolve_params(c.params)) for c in configs]
    grades = evaluation_grade_array(
        evaluation=evaluation, keyword_ids=keyword_ids, positions=max(c.k for c in configs)
    )
    plain = [(c.code, c.k, c.params) for c, uses_pool in zip(configs, pooled, strict=True)
             if not uses_pool]
    plain_values = iter(core.evaluate_batch_many(
        plain, grades, scale=scale, transformers=transformers
    ) if plain else [])
    pool_values = iter(_pool_metric_values(
        evaluation, [c for c, uses_pool in zip(configs, pooled, strict=True) if uses_pool],
        keyword_ids, scale=scale, transformers=transformers,
    ) if any(pooled) else [])
    return [next(pool_values) if uses_pool else next(plain_values) for uses_pool in pooled]


def _pool_metric_values(
    evaluation: Evaluation, configs: list[EvaluationMetric], keyword_ids: list[int], *,
    scale, transformers: dict,
) -> list[np.ndarray]:
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
    return [
        np.where(unknown, np.nan, core.evaluate_keywords(
            config.code, [r.grades for r in results], doc_ids=[r.doc_ids for r in results],
            k=config.k, scale=scale, params=config.params, transformers=transformers,
            pools=pools,
        ))
        for config in configs
    ]


def keyword_empty_results_mark_dirty(*, keyword_id: int, evaluation_id: int) -> bool:
    """A fetch stored no results for the keyword: with a pool metric configured, its value
    is known now (recall and best give 0 when the pool knows documents the search missed),
    though no grade will ever ask for it, so the keyword is marked dirty like a graded one.

    Runs inside the fetch transaction. Returns whether it marked the keyword.
    """
    if not any(_uses_pool(config)
               for config in evaluation_metric_configs(evaluation_id=evaluation_id)):
        return False
    keywords_mark_dirty(keyword_ids=[keyword_id])
    return True


def _as_optional(value: float) -> float | None:
    return None if np.isnan(value) else float(value)


def _upsert_values(rows: Iterable[tuple[int, int, float | None, int]]) -> None:
    """Write (keyword_id, metric_id, value, version) rows; a row computed from an older
    keyword version than the stored one is dropped, so late runs cannot overwrite."""
    table = connection.ops.quote_name(KeywordMetricValue._meta.db_table)
    now = timezone.now()
    rows = list(rows)
    for start in range(0, len(rows), _WRITE_CHUNK):
        chunk = rows[start:start + _WRITE_CHUNK]
        placeholders = ", ".join(["(%s, %s, %s, %s, %s)"] * len(chunk))
        params: list = []
        for keyword_id, metric_id, value, version in chunk:
            params += [keyword_id, metric_id, value, version, now]
        with connection.cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {table} (keyword_id, metric_id, value, computed_version, updated_at)"
                f" VALUES {placeholders}"
                " ON CONFLICT (keyword_id, metric_id) DO UPDATE SET value = excluded.value,"
                " computed_version = excluded.computed_version, updated_at = excluded.updated_at"
                f" WHERE {table}.computed_version <= excluded.computed_version",
                params,
            )


def _mark_computed(keyword_versions: list[tuple[int, int]]) -> list[int]:
    """Record that each keyword's values reflect `version`; clear its dirty mark only if no
    newer grade arrived meanwhile (compare-and-set on the version). Returns the keywords it
    left dirty: a newer grade arrived, and the caller queues the run that reads it."""
    table = connection.ops.quote_name(Keyword._meta.db_table)
    left_dirty = []
    for start in range(0, len(keyword_versions), _WRITE_CHUNK):
        chunk = sorted(keyword_versions[start:start + _WRITE_CHUNK])
        placeholders = ", ".join(["(%s, %s)"] * len(chunk))
        params = [value for pair in chunk for value in pair]
        with connection.cursor() as cursor:
            cursor.execute(
                f"WITH computed (keyword_id, version) AS (VALUES {placeholders})"
                f" UPDATE {table} SET computed_version = computed.version,"
                f" dirty_since = CASE WHEN {table}.version = computed.version THEN NULL"
                f" ELSE {table}.dirty_since END"
                f" FROM computed WHERE {table}.id = computed.keyword_id"
                f" AND {table}.computed_version <= computed.version"
                f" RETURNING {table}.id, {table}.dirty_since",
                params,
            )
            left_dirty += [pk for pk, dirty_since in cursor.fetchall() if dirty_since is not None]
    return sorted(left_dirty)


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

    Called when grades change (metrics.receivers), after their commit, so the siblings'
    runs read a pool that includes them. One query when no evaluation of the team on that
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
        if config.code in core.METRICS and _uses_pool(config)
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
        with transaction.atomic():
            Keyword.objects.filter(pk__in=sorted(sibling_evaluations)).update(
                version=F("version") + 1,
                dirty_since=Coalesce(F("dirty_since"), Value(timezone.now())),
            )
    return ChangedKeywords(evaluation_of, sibling_evaluations, run_due)


def recompute_due_set(*, evaluation_id: int, due_at) -> None:
    """Record that a run of the evaluation answers for its grades: one queued for `due_at`
    (set before it is sent) or one starting now (set before it reads), so whoever sees the
    mark can count on that run."""
    table = connection.ops.quote_name(RecomputeDue._meta.db_table)
    try:
        with connection.cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {table} (evaluation_id, due_at) VALUES (%s, %s)"
                " ON CONFLICT (evaluation_id) DO UPDATE SET due_at = excluded.due_at",
                [evaluation_id, connection.ops.adapt_datetimefield_value(due_at)],
            )
    except IntegrityError:
        pass  # the evaluation was deleted meanwhile


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
    table = connection.ops.quote_name(RecomputeDue._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {table} SET due_at = NULL WHERE evaluation_id = %s",
                       [evaluation_id])


def _uses_pool(config: EvaluationMetric) -> bool:
    try:
        return core.needs_pool(config.code, core.resolve_params(config.params))
    except core.MetricInputError:
        return False


def evaluation_means_refresh(*, evaluation_id: int, force_history: bool = False) -> None:
    """Means over non-null keywords, keyword counts, a throttled history point, progress,
    and the automatic finish at 100 %.

    It follows every recompute run, so each step is one SQL statement written out (see
    metrics.selectors on the recompute's reads).
    """
    evaluations = connection.ops.quote_name(Evaluation._meta.db_table)
    configs = connection.ops.quote_name(EvaluationMetric._meta.db_table)
    values = connection.ops.quote_name(KeywordMetricValue._meta.db_table)
    lock = " FOR UPDATE" if connection.features.has_select_for_update else ""
    now = timezone.now()
    with transaction.atomic(), connection.cursor() as cursor:
        # Serialise refreshes of one evaluation: each reads after the previous wrote, so
        # the last refresh sees every value committed before it.
        cursor.execute(f"SELECT status, auto_finish FROM {evaluations} WHERE id = %s{lock}",
                       [evaluation_id])
        row = cursor.fetchone()
        if row is None:
            return
        status, auto_finish = row
        # Each config's stored mean and count, and those of its stored keyword values.
        cursor.execute(
            "SELECT m.id, m.value, m.keyword_count, AVG(v.value), COUNT(v.value)"
            f" FROM {configs} m LEFT JOIN {values} v ON v.metric_id = m.id"
            " WHERE m.evaluation_id = %s GROUP BY m.id, m.value, m.keyword_count",
            [evaluation_id],
        )
        rows = cursor.fetchall()
        means = [(pk, mean, count) for pk, _, _, mean, count in rows]
        if means:
            # Written even when equal: updated_at marks the grade state (metrics.dashboards).
            _means_store(cursor, means, now=now)
        changed = any((value, keyword_count) != (mean, count)
                      for _, value, keyword_count, mean, count in rows)
        if means and (changed or force_history):
            # An unchanged mean leaves the history alone: its latest point shows it.
            _history_append(cursor, means, now=now, force=force_history)
        progress = _progress_store(cursor, evaluation_id)
    if progress >= 100.0 and auto_finish and status == Evaluation.Status.ACTIVE:
        from evaluations.services import evaluation_finish

        evaluation_finish(evaluation=Evaluation.objects.get(pk=evaluation_id))


def _cases(column: str, pairs: list[tuple[int, object]], cast: str) -> tuple[str, list]:
    """`CASE column WHEN key THEN CAST(value AS cast) ... END` and its parameters."""
    whens = " ".join([f"WHEN %s THEN CAST(%s AS {cast})"] * len(pairs))
    return f"CASE {column} {whens} END", [item for pair in pairs for item in pair]


def _means_store(cursor, means: list[tuple[int, float | None, int]], *, now) -> None:
    table = connection.ops.quote_name(EvaluationMetric._meta.db_table)
    value_case, value_params = _cases("id", [(pk, mean) for pk, mean, _ in means],
                                      "DOUBLE PRECISION")
    count_case, count_params = _cases("id", [(pk, count) for pk, _, count in means], "INTEGER")
    ids = [pk for pk, _, _ in means]
    cursor.execute(
        f"UPDATE {table} SET value = {value_case}, keyword_count = {count_case},"
        f" updated_at = %s WHERE id IN ({', '.join(['%s'] * len(ids))})",
        [*value_params, *count_params, connection.ops.adapt_datetimefield_value(now), *ids],
    )


def _history_append(cursor, means: list[tuple[int, float | None, int]], *, now,
                    force: bool) -> None:
    interval = timedelta(seconds=settings.METRIC_HISTORY_INTERVAL_SECONDS)
    followed: set[int] = set()
    if interval and not force:
        # Within one burst each metric's latest point follows the mean instead of adding
        # rows; a metric with no point in the interval gets a new one below.
        table = connection.ops.quote_name(MetricHistoryPoint._meta.db_table)
        value_case, value_params = _cases(
            "metric_id", [(pk, mean) for pk, mean, _ in means], "DOUBLE PRECISION")
        count_case, count_params = _cases(
            "metric_id", [(pk, count) for pk, _, count in means], "INTEGER")
        ids = [pk for pk, _, _ in means]
        cursor.execute(
            f"UPDATE {table} SET value = {value_case}, keyword_count = {count_case}"
            f" WHERE metric_id IN ({', '.join(['%s'] * len(ids))}) AND recorded_at >= %s"
            f" AND recorded_at = (SELECT MAX(latest.recorded_at) FROM {table} latest"
            f" WHERE latest.metric_id = {table}.metric_id) RETURNING metric_id",
            [*value_params, *count_params, *ids,
             connection.ops.adapt_datetimefield_value(now - interval)],
        )
        followed = {metric_id for (metric_id,) in cursor.fetchall()}
    MetricHistoryPoint.objects.bulk_create([
        MetricHistoryPoint(metric_id=pk, value=mean, keyword_count=count, recorded_at=now)
        for pk, mean, count in means if pk not in followed
    ])


def _progress_store(cursor, evaluation_id: int) -> float:
    """Store the share of the evaluation's slots that hold a grade (and clear any recompute
    error) in one statement; returns it."""
    evaluations = connection.ops.quote_name(Evaluation._meta.db_table)
    slots = connection.ops.quote_name(FeedbackSlot._meta.db_table)
    cursor.execute(
        f"UPDATE {evaluations} SET recompute_error = '', progress = COALESCE(("
        "SELECT CAST(COUNT(grade) AS DOUBLE PRECISION) * 100.0 / NULLIF(COUNT(*), 0)"
        f" FROM {slots} WHERE evaluation_id = %s), 0) WHERE id = %s RETURNING progress",
        [evaluation_id, evaluation_id],
    )
    return cursor.fetchone()[0]


def _record_error(evaluation: Evaluation, error: Exception) -> None:
    logger.warning("recompute of evaluation %s failed: %s", evaluation.pk, error)
    Evaluation.objects.filter(pk=evaluation.pk).update(recompute_error=str(error))


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
        Keyword.objects.filter(dirty_since__lte=cutoff)
        .order_by("dirty_since").values_list("pk", "evaluation_id")[:limit]
    )


# --- the team baseline the dashboards compare against ---


@transaction.atomic
def team_baseline_set(*, team: Team, evaluation: Evaluation, user: User) -> TeamBaseline:
    """Mark a finished evaluation of the team as its baseline (replacing the previous one)."""
    if evaluation.team_id != team.pk:
        raise ValidationError({"evaluation": "The baseline must be one of the team's evaluations."})
    if evaluation.status != Evaluation.Status.FINISHED:
        raise ValidationError({"evaluation": "Only a finished evaluation can be the baseline."})
    baseline, _ = TeamBaseline.objects.update_or_create(
        team=team, defaults={"evaluation": evaluation, "set_by": user, "set_at": timezone.now()}
    )
    return baseline


@transaction.atomic
def team_baseline_clear(*, team: Team) -> None:
    TeamBaseline.objects.filter(team=team).delete()
