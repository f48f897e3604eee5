"""The metrics app's hand-written SQL statements, each one function; nothing else in the app
writes SQL.

Longer than our ~450-line mark on purpose: every raw SQL statement of the app in one module,
each tested against the ORM.

They are written out because they run after nearly every grade (the recompute: its reads,
the upsert of keyword values, the means refresh) and building the equivalent ORM queries
cost several times the database's own work for these small, indexed statements
(bench/recompute.py), or because the ORM cannot say them (an upsert that keeps a newer
row, a GROUP BY over a grouped subquery). Table names come from the models' `_meta`.
Each statement has a test against the same question asked through the ORM
(tests/metrics/test_queries.py).
"""

from collections.abc import Iterable
from datetime import datetime
from typing import NamedTuple

from django.db import NotSupportedError, connection
from django.db.models import BooleanField, F, Func

import metrics_engine as core
from evaluations.models import Evaluation, EvaluationMetric, Keyword
from judgments.models import FeedbackSlot
from metrics.models import (
    DashboardCount,
    EvaluationRecomputeState,
    KeywordDashboardShare,
    KeywordMetricValue,
    KeywordQueueWidth,
    KeywordRecomputeMark,
    MetricHistoryPoint,
    MetricMean,
    MetricSums,
    RecomputeDue,
    SegmentSums,
)
from metrics.queue_order import UNKNOWN_WIDTH
from metrics_engine.exact_sum import total_decode, total_encode
from searchtweak import sql
from searchtweak.models import Team


def _table(model) -> str:
    return connection.ops.quote_name(model._meta.db_table)


def _marks(values: list) -> str:
    return ", ".join(["%s"] * len(values))


def _rows(statement: str, params: list, *, binary: bool = False) -> list[tuple]:
    """The rows of one statement, prepared on PostgreSQL as the grading requests' are
    (searchtweak.sql): planning these small statements cost PostgreSQL more than running
    them, after every grade."""
    return sql.fetch_all(statement, params, binary=binary)


def _write(statement: str, params: list) -> int:
    """One statement on Django's own cursor; the number of rows it changed."""
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        return cursor.rowcount


def _run(statement: str, params: list) -> list[tuple]:
    """One statement on Django's own cursor (client-side binding), its rows if any."""
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        return cursor.fetchall() if cursor.description else []


# --- the recompute's reads (metrics.selectors) ---


def dirty_keyword_rows(*, keyword_id: int, limit: int) -> list[tuple[int, int, int, bool]]:
    """(id, evaluation_id, version, is dirty) of the keyword and of the dirty keywords of its
    evaluation, oldest dirty mark first, the clean keyword last; at most `limit` rows."""
    keywords, marks = _table(Keyword), _table(KeywordRecomputeMark)
    # Two indexed reads joined by UNION (a keyword both names and finds dirty comes once):
    # written as one WHERE with OR, PostgreSQL scanned every keyword and mark of the
    # database after each grade (2.8 ms at 15,000 keywords, growing with them; 0.04 ms so).
    return _rows(
        "SELECT id, evaluation_id, version, dirty_since IS NOT NULL FROM ("
        "SELECT k.id, k.evaluation_id, COALESCE(m.version, 0) AS version, m.dirty_since"
        f" FROM {keywords} k LEFT JOIN {marks} m ON m.keyword_id = k.id WHERE k.id = %s"
        " UNION SELECT d.keyword_id, d.evaluation_id, d.version, d.dirty_since"
        f" FROM {marks} d WHERE d.dirty_since IS NOT NULL AND d.evaluation_id ="
        f" (SELECT evaluation_id FROM {keywords} WHERE id = %s)"
        ") AS named_or_dirty ORDER BY dirty_since IS NULL, dirty_since, id LIMIT %s",
        [keyword_id, keyword_id, limit],
    )


def evaluation_dirty_keyword_id(*, evaluation_id: int) -> int | None:
    rows = _rows(
        f"SELECT keyword_id FROM {_table(KeywordRecomputeMark)}"
        " WHERE dirty_since IS NOT NULL AND evaluation_id = %s LIMIT 1", [evaluation_id])
    return rows[0][0] if rows else None


def evaluation_config_rows(*, evaluation_id: int) -> list[tuple]:
    """(team_id, team name, scale, strategy, transformers, config id, code, k, params,
    position) of the evaluation and each metric config, in config order; one row with
    None configs when it has none, no row when it is gone. JSON columns come as the driver
    returns them (searchtweak.sql.json_value decodes them)."""
    return _rows(
        "SELECT e.team_id, t.name, e.scale, e.strategy, e.transformers,"
        " m.id, m.code, m.k, m.params, m.position"
        f" FROM {_table(Evaluation)} e JOIN {_table(Team)} t ON t.id = e.team_id"
        f" LEFT JOIN {_table(EvaluationMetric)} m ON m.evaluation_id = e.id"
        " WHERE e.id = %s ORDER BY m.position, m.id",
        [evaluation_id],
    )


def _pool_config_sql() -> str:
    """A filter on EvaluationMetric (alias m) for the configs that may read the keyword pool,
    derived from the registry's rule (metrics_engine.config_reads_pool, whose two cases
    pool_reading_codes lists): the metrics that always do, and those with an `ideal`
    parameter whose params mention pool. A superset (a text match, the same on every
    database, so a config the registry refuses may pass); callers confirm with
    config_reads_pool."""
    always, by_ideal = core.pool_reading_codes()
    listed = ", ".join
    return (f"(m.code IN ({listed(repr(c) for c in always)}) OR (m.code IN"
            f" ({listed(repr(c) for c in by_ideal)}) AND CAST(m.params AS TEXT) LIKE '%%pool%%'))")


def changed_keyword_rows(*, keyword_ids: list[int], due_after: datetime
                         ) -> list[tuple[int, int, bool, bool]]:
    """(keyword id, evaluation id, a config of its team on its scale may read the pool, a
    run of its evaluation is due after `due_after`) for each keyword."""
    evaluations = _table(Evaluation)
    rows = _rows(
        f"SELECT k.id, k.evaluation_id, EXISTS (SELECT 1 FROM {_table(EvaluationMetric)} m"
        f" JOIN {evaluations} o ON o.id = m.evaluation_id"
        f" WHERE o.team_id = e.team_id AND o.scale = e.scale AND {_pool_config_sql()}),"
        " d.due_at IS NOT NULL AND d.due_at > %s"
        f" FROM {_table(Keyword)} k JOIN {evaluations} e ON e.id = k.evaluation_id"
        f" LEFT JOIN {_table(RecomputeDue)} d ON d.evaluation_id = k.evaluation_id"
        f" WHERE k.id IN ({_marks(keyword_ids)})",
        [sql.time_param(due_after), *keyword_ids],
    )
    return [(pk, evaluation_id, bool(exposed), bool(due))
            for pk, evaluation_id, exposed, due in rows]


UNGRADED = -(1 << 20)
"""The grade slot_rows gives an ungraded slot: outside every scale (grades are smallints)."""


def slot_rows(*, keyword_ids: list[int] | None = None, evaluation_id: int | None = None,
              positions: int | None) -> list[tuple[int, int, int, int]]:
    """(keyword_id, position, index, grade) of every slot at a position up to `positions`
    (None: at any), of the given keywords or else of the whole evaluation; an ungraded
    slot's grade is UNGRADED (the bounds need to know which slots exist)."""
    if keyword_ids is not None:
        where, params = f"keyword_id IN ({_marks(keyword_ids)})", list(keyword_ids)
    else:
        where, params = "evaluation_id = %s", [evaluation_id]
    # FeedbackSlot.position repeats the snapshot's, so this reads one table, no join.
    if positions is not None:
        where, params = f"{where} AND position <= %s", [*params, positions]
    return _rows(
        f"SELECT keyword_id, position, {connection.ops.quote_name('index')},"
        f" COALESCE(grade, {UNGRADED})"
        f" FROM {_table(FeedbackSlot)} WHERE {where}", params)


# --- the recompute's writes (metrics.recompute) ---


class KeywordValueRow(NamedTuple):
    """A keyword's value of a metric and its bounds; `version`, the keyword version it was
    computed from, for a row to write (None for a row read back)."""

    keyword_id: int
    metric_id: int
    value: float | None
    lower: float | None
    upper: float | None
    bounds_exact: bool
    version: int | None = None


class KeywordValueColumns(NamedTuple):
    """Rows to write (KeywordValueRow with a version) as one list per field: what
    recompute_metrics builds for 600,000 rows without a tuple per row, and what the
    statement binds (one array per column)."""

    keyword_ids: list[int]
    metric_ids: list[int]
    values: list[float | None]
    lowers: list[float | None]
    uppers: list[float | None]
    exacts: list[bool]
    versions: list[int]

    @classmethod
    def from_rows(cls, rows: Iterable[KeywordValueRow]) -> "KeywordValueColumns":
        rows = list(rows)
        if not rows:
            return cls([], [], [], [], [], [], [])
        return cls(*(list(column) for column in zip(*rows, strict=True)))

    @property
    def row_count(self) -> int:
        return len(self.keyword_ids)

    def part(self, start: int, stop: int) -> "KeywordValueColumns":
        return KeywordValueColumns(*(column[start:stop] for column in self))

    def rows(self) -> list[KeywordValueRow]:
        return [KeywordValueRow(*row) for row in zip(*self, strict=True)]


def keyword_values_read(*, keyword_ids: list[int], metric_ids: list[int]
                        ) -> list[KeywordValueRow]:
    """The stored values of these keywords for these metrics (every pair that has one)."""
    return [KeywordValueRow(*row) for row in _run(
        "SELECT keyword_id, metric_id, value, lower, upper, bounds_exact"
        f" FROM {_table(KeywordMetricValue)} WHERE keyword_id IN ({_marks(keyword_ids)})"
        f" AND metric_id IN ({_marks(metric_ids)})", [*keyword_ids, *metric_ids])]


def keyword_values_upsert(rows: list[KeywordValueRow], *, now) -> list[KeywordValueRow]:
    """Write the rows (values and their bounds) in one statement; a row computed from an
    older keyword version than the stored one is dropped, so late runs cannot overwrite.
    (bulk_create's update_conflicts has no condition on the conflict.) Returns the rows
    written, not those dropped."""
    statement, params = _keyword_values_upsert_sql(KeywordValueColumns.from_rows(rows), now=now)
    return [KeywordValueRow(*row) for row in _rows(
        f"{statement} RETURNING keyword_id, metric_id, value, lower, upper, bounds_exact",
        params, binary=True)]


def keyword_values_upsert_count(columns: KeywordValueColumns, *, now) -> int:
    """keyword_values_upsert for a caller that moves no running sum (recompute_metrics,
    which rebuilds them after): how many rows were written, without sending them back
    (600,000 rows at 100,000 keywords x 6 metrics, each decoded into a tuple)."""
    statement, params = _keyword_values_upsert_sql(columns, now=now)
    return sql.execute(statement, params)


def _keyword_values_upsert_sql(columns: KeywordValueColumns, *, now) -> tuple[str, list]:
    table = _table(KeywordMetricValue)
    if sql.is_postgresql():
        # One array per column: a statement with a placeholder per cell (16,000 for a
        # chunk) cost the driver more to parse than PostgreSQL to run it (recompute_metrics
        # spent half its time splitting the query text: bench/recompute.py --large). The
        # arrays go bound in binary (%b), not quoted into the text: a third of the time.
        source = ("SELECT r.keyword_id, r.metric_id, r.value, r.lower, r.upper, r.exact,"
                  " r.version, CAST(%b AS TIMESTAMP WITH TIME ZONE) FROM UNNEST("
                  "CAST(%b AS BIGINT[]), CAST(%b AS BIGINT[]), CAST(%b AS DOUBLE PRECISION[]),"
                  " CAST(%b AS DOUBLE PRECISION[]), CAST(%b AS DOUBLE PRECISION[]),"
                  " CAST(%b AS BOOLEAN[]), CAST(%b AS INTEGER[]))"
                  " AS r (keyword_id, metric_id, value, lower, upper, exact, version)")
        params = [now, *columns]
    else:
        params = [value for row in zip(*columns, strict=True) for value in (*row, now)]
        source = ("VALUES "
                  f"{', '.join(['(%s, %s, %s, %s, %s, %s, %s, %s)'] * columns.row_count)}")
    return (
        f"INSERT INTO {table} (keyword_id, metric_id, value, lower, upper, bounds_exact,"
        f" computed_version, updated_at) {source}"
        " ON CONFLICT (keyword_id, metric_id) DO UPDATE SET value = excluded.value,"
        " lower = excluded.lower, upper = excluded.upper,"
        " bounds_exact = excluded.bounds_exact,"
        " computed_version = excluded.computed_version, updated_at = excluded.updated_at"
        f" WHERE {table}.computed_version <= excluded.computed_version", params)


def keyword_values_analyze() -> None:
    """Refresh PostgreSQL's statistics of the keyword values (SQLite's planner keeps none
    that a rewrite leaves stale)."""
    if sql.is_postgresql():
        _write(f"ANALYZE {_table(KeywordMetricValue)}", [])


def keyword_queue_widths_store(*, keyword_ids: list[int]) -> None:
    """Derive the keywords' KeywordQueueWidth from their stored bounds of their evaluation's
    first metric (null or not stored: UNKNOWN_WIDTH, or 0 when no slot is left to grade),
    so the decisive queue reads the bounds as the recompute stored them; run after each
    keyword_values_upsert. (Two runs of one keyword racing may leave the older width until
    the next run: it only orders the queue.)"""
    if not keyword_ids:
        return
    metric = (f"(SELECT em.id FROM {_table(EvaluationMetric)} em"
              " WHERE em.evaluation_id = k.evaluation_id ORDER BY em.position, em.id LIMIT 1)")
    _run(
        f"INSERT INTO {_table(KeywordQueueWidth)} (keyword_id, evaluation_id, keyword_position,"
        " width)"
        f" SELECT k.id, k.evaluation_id, k.position, COALESCE((SELECT v.upper - v.lower"
        f" FROM {_table(KeywordMetricValue)} v WHERE v.keyword_id = k.id"
        f" AND v.metric_id = {metric}),"
        # No bounds: widest while a slot is left to grade; with none (no results), 0, or
        # such keywords would stay candidates with nothing to hand out.
        f" CASE WHEN EXISTS (SELECT 1 FROM {_table(FeedbackSlot)} f WHERE f.keyword_id = k.id"
        f" AND f.grade IS NULL) THEN {UNKNOWN_WIDTH} ELSE 0.0 END)"
        f" FROM {_table(Keyword)} k WHERE k.id IN ({_marks(keyword_ids)})"
        " ON CONFLICT (keyword_id) DO UPDATE SET width = excluded.width,"
        " keyword_position = excluded.keyword_position",
        list(keyword_ids),
    )


def evaluation_lock(*, evaluation_id: int) -> bool:
    """Lock the evaluation's row until the transaction ends (PostgreSQL), so refreshes of
    one evaluation run one after the other; whether the evaluation exists."""
    lock = " FOR UPDATE" if connection.features.has_select_for_update else ""
    return bool(_run(f"SELECT 1 FROM {_table(Evaluation)} WHERE id = %s{lock}",
                     [evaluation_id]))


class ConfigValues(NamedTuple):
    """A config's stored mean and keyword count, and its keywords' non-null values, lower
    and upper bounds, and whether every keyword's bounds are exact."""

    pk: int
    mean: float | None
    keyword_count: int
    present: list[float]
    lowers: list[float]
    uppers: list[float]
    bounds_exact: bool
    # How many keywords' bounds are not exact.
    inexact_count: int = 0


def metric_config_values(*, evaluation_id: int, metric_ids: list[int] | None = None
                         ) -> list[ConfigValues]:
    """ConfigValues of each config of the evaluation.

    The means refresh averages the values with core.mean_over_keywords, exact whatever the
    row order, where SQL's AVG was not. It runs once per recompute run, so on PostgreSQL
    it is one statement whose values come as one binary float array per config: a row
    per value cost the worker about seven times the CPU to decode (`bench/queries.py`).
    """
    configs, values = _table(EvaluationMetric), _table(KeywordMetricValue)
    means = _table(MetricMean)
    # Only some configs: those whose running sums the means refresh rebuilds.
    only, only_params = ((f" AND m.id IN ({_marks(metric_ids)})", list(metric_ids))
                         if metric_ids is not None else ("", []))
    if sql.is_postgresql():
        return [ConfigValues(pk, mean, count, present or [], lowers or [], uppers or [],
                             exact is not False, inexact)
                for pk, mean, count, present, lowers, uppers, exact, inexact in _rows(
            f"SELECT m.id, s.value, COALESCE(s.keyword_count, 0),"
            " ARRAY_AGG(v.value) FILTER (WHERE v.value IS NOT NULL),"
            " ARRAY_AGG(v.lower) FILTER (WHERE v.lower IS NOT NULL),"
            " ARRAY_AGG(v.upper) FILTER (WHERE v.upper IS NOT NULL),"
            " BOOL_AND(v.bounds_exact), COUNT(v.metric_id) FILTER (WHERE NOT v.bounds_exact)"
            f" FROM {configs} m LEFT JOIN {means} s ON s.metric_id = m.id"
            f" LEFT JOIN {values} v ON v.metric_id = m.id"
            f" WHERE m.evaluation_id = %s{only} GROUP BY m.id, s.value, s.keyword_count",
            [evaluation_id, *only_params], binary=True)]
    by_config: dict[int, tuple[list[float], list[float], list[float], list[bool]]] = {}
    for pk, value, lower, upper, exact in _run(
            f"SELECT v.metric_id, v.value, v.lower, v.upper, v.bounds_exact"
            f" FROM {values} v JOIN {configs} m ON m.id = v.metric_id"
            f" WHERE m.evaluation_id = %s{only}", [evaluation_id, *only_params]):
        present, lowers, uppers, exacts = by_config.setdefault(pk, ([], [], [], []))
        for column, item in ((present, value), (lowers, lower), (uppers, upper)):
            if item is not None:
                column.append(item)
        exacts.append(bool(exact))
    empty: tuple = ([], [], [], [])
    return [ConfigValues(pk, mean, count, *by_config.get(pk, empty)[:3],
                         all(by_config.get(pk, empty)[3]),
                         by_config.get(pk, empty)[3].count(False))
            for pk, mean, count in _run(
        f"SELECT m.id, s.value, COALESCE(s.keyword_count, 0) FROM {configs} m"
        f" LEFT JOIN {means} s ON s.metric_id = m.id WHERE m.evaluation_id = %s{only}",
        [evaluation_id, *only_params])]


class Sums(NamedTuple):
    """A config's MetricSums, totals as ints (metrics_engine.exact_sum)."""

    value_total: int
    value_count: int
    lower_total: int
    lower_count: int
    upper_total: int
    upper_count: int
    inexact_count: int


_SUMS_COLUMNS = ("value_total, value_count, lower_total, lower_count, upper_total,"
                 " upper_count, inexact_count")


def _sums(row: tuple) -> Sums:
    return Sums(total_decode(row[0]), row[1], total_decode(row[2]), row[3],
                total_decode(row[4]), row[5], row[6])


class ConfigMean(NamedTuple):
    """A config's stored mean and keyword count, its running sums (None: not known) and
    whether its segment sums are known (their plain every-keyword row exists)."""

    pk: int
    mean: float | None
    keyword_count: int
    sums: Sums | None
    segments_known: bool = False


def metric_config_means(*, evaluation_id: int) -> list[ConfigMean]:
    """ConfigMean of each config of the evaluation, in one statement."""
    rows = _rows(
        f"SELECT m.id, s.value, COALESCE(s.keyword_count, 0),"
        f" EXISTS (SELECT 1 FROM {_table(SegmentSums)} g WHERE g.metric_id = m.id"
        " AND g.segment = '' AND g.weighted = %s), t.metric_id IS NOT NULL,"
        f" {', '.join(f't.{c.strip()}' for c in _SUMS_COLUMNS.split(','))}"
        f" FROM {_table(EvaluationMetric)} m LEFT JOIN {_table(MetricMean)} s"
        f" ON s.metric_id = m.id LEFT JOIN {_table(MetricSums)} t ON t.metric_id = m.id"
        " WHERE m.evaluation_id = %s ORDER BY m.id", [False, evaluation_id])
    return [ConfigMean(pk, mean, count, _sums(sums) if known else None, bool(segments))
            for pk, mean, count, segments, known, *sums in rows]


def metric_sums_read(*, metric_ids: list[int]) -> dict[int, Sums]:
    """The running sums of these configs that have them, locked until the transaction
    ends (PostgreSQL): the writers of one evaluation's values hold its lock already; this
    lock also orders them against a deletion of the rows (metrics.receivers)."""
    lock = " FOR UPDATE" if connection.features.has_select_for_update else ""
    return {row[0]: _sums(row[1:]) for row in _run(
        f"SELECT metric_id, {_SUMS_COLUMNS} FROM {_table(MetricSums)}"
        f" WHERE metric_id IN ({_marks(metric_ids)}) ORDER BY metric_id{lock}",
        list(metric_ids))}


def metric_sums_store(sums: dict[int, Sums]) -> None:
    """Write the configs' running sums (insert or replace), in one statement."""
    if not sums:
        return
    params: list = []
    for pk, row in sorted(sums.items()):
        params += [pk, total_encode(row.value_total), row.value_count,
                   total_encode(row.lower_total), row.lower_count,
                   total_encode(row.upper_total), row.upper_count, row.inexact_count]
    _run(
        f"INSERT INTO {_table(MetricSums)} (metric_id, {_SUMS_COLUMNS})"
        f" VALUES {', '.join(['(%s, %s, %s, %s, %s, %s, %s, %s)'] * len(sums))}"
        " ON CONFLICT (metric_id) DO UPDATE SET value_total = excluded.value_total,"
        " value_count = excluded.value_count, lower_total = excluded.lower_total,"
        " lower_count = excluded.lower_count, upper_total = excluded.upper_total,"
        " upper_count = excluded.upper_count, inexact_count = excluded.inexact_count",
        params,
    )


def metric_sums_forget(*, evaluation_id: int | None = None,
                       metric_ids: list[int] | None = None) -> None:
    """Delete the running sums of the evaluation's configs (or of these configs), and their
    segment sums with them, which the value writes move only while the plain sums are
    known: the next means refresh rebuilds both from the stored values."""
    for table in (_table(MetricSums), _table(SegmentSums)):
        if metric_ids is not None:
            if metric_ids:
                _run(f"DELETE FROM {table} WHERE metric_id IN ({_marks(metric_ids)})",
                     list(metric_ids))
            continue
        _run(f"DELETE FROM {table} WHERE metric_id IN"
             f" (SELECT id FROM {_table(EvaluationMetric)} WHERE evaluation_id = %s)",
             [evaluation_id])


def _cases(column: str, pairs: list[tuple[int, object]], cast: str) -> tuple[str, list]:
    """`CASE column WHEN key THEN CAST(value AS cast) ... END` and its parameters."""
    whens = " ".join([f"WHEN %s THEN CAST(%s AS {cast})"] * len(pairs))
    return f"CASE {column} {whens} END", [item for pair in pairs for item in pair]


class StoredMean(NamedTuple):
    pk: int
    mean: float | None
    keyword_count: int
    lower: float | None
    upper: float | None
    bounds_exact: bool


def metric_means_store(means: list[StoredMean], *, now) -> None:
    """Set each config's mean, keyword count, bounds and updated_at in one statement."""
    params: list = []
    for row in means:
        params += [row.pk, row.mean, row.keyword_count, row.lower, row.upper, row.bounds_exact,
                   sql.time_param(now)]
    double = "CAST(%s AS DOUBLE PRECISION)"
    _run(
        f"INSERT INTO {_table(MetricMean)} (metric_id, value, keyword_count, lower, upper,"
        " bounds_exact, updated_at)"
        f" VALUES {', '.join([f'(%s, {double}, %s, {double}, {double}, %s, %s)'] * len(means))}"
        " ON CONFLICT (metric_id) DO UPDATE SET value = excluded.value,"
        " keyword_count = excluded.keyword_count, lower = excluded.lower,"
        " upper = excluded.upper, bounds_exact = excluded.bounds_exact,"
        " updated_at = excluded.updated_at",
        params,
    )


def history_latest_points_follow(means: list[tuple[int, float | None, int]], *,
                                 since: datetime) -> set[int]:
    """Move each config's latest history point, when recorded at or after `since`, to its
    (mean, count); the configs whose point moved."""
    table = _table(MetricHistoryPoint)
    value_case, value_params = _cases(
        "metric_id", [(pk, mean) for pk, mean, _ in means], "DOUBLE PRECISION")
    count_case, count_params = _cases(
        "metric_id", [(pk, count) for pk, _, count in means], "INTEGER")
    ids = [pk for pk, _, _ in means]
    rows = _run(
        f"UPDATE {table} SET value = {value_case}, keyword_count = {count_case}"
        f" WHERE metric_id IN ({_marks(ids)}) AND recorded_at >= %s"
        f" AND recorded_at = (SELECT MAX(latest.recorded_at) FROM {table} latest"
        f" WHERE latest.metric_id = {table}.metric_id) RETURNING metric_id",
        [*value_params, *count_params, *ids, sql.time_param(since)],
    )
    return {metric_id for (metric_id,) in rows}


def evaluation_progress_store(*, evaluation_id: int,
                              slot_counts: tuple[int, int] | None = None) -> float:
    """Store the share of the evaluation's slots that hold a grade (and clear any recompute
    error) in one statement; returns it.

    `slot_counts` (slots, graded slots), when the caller has them, gives the share without
    counting every slot. A share that would finish the evaluation is checked against the
    slots, so a count that lags a fetch cannot finish it: one probe of the slots' index
    (evaluation_all_slots_graded) confirms it; when the probe disagrees the slots are
    counted."""
    share = "CAST(%s AS DOUBLE PRECISION)"
    if slot_counts is not None and slot_counts[1] < slot_counts[0]:
        slots, graded = slot_counts
        params: list = [graded * 100.0 / slots, evaluation_id]
    elif slot_counts is not None and evaluation_all_slots_graded(evaluation_id=evaluation_id):
        # What counting gives when every slot holds a grade: n * 100.0 / n is 100.0 exactly.
        params = [100.0, evaluation_id]
    else:
        share = ("COALESCE((SELECT CAST(COUNT(grade) AS DOUBLE PRECISION) * 100.0"
                 f" / NULLIF(COUNT(*), 0) FROM {_table(FeedbackSlot)}"
                 " WHERE evaluation_id = e.id), 0)")
        params = [evaluation_id]
    rows = _run(
        f"INSERT INTO {_table(EvaluationRecomputeState)} (evaluation_id, recompute_error,"
        f" progress) SELECT e.id, '', {share} FROM {_table(Evaluation)} e WHERE e.id = %s"
        " ON CONFLICT (evaluation_id) DO UPDATE SET recompute_error = excluded.recompute_error,"
        " progress = excluded.progress RETURNING progress",
        params,
    )
    return rows[0][0] if rows else 0.0


def evaluation_all_slots_graded(*, evaluation_id: int) -> bool:
    """Whether the evaluation has slots and every one holds a grade: the first entry of its
    (evaluation, grade) index read from the ungraded end, where an ungraded slot would
    come first. One index probe at any size, where counting reads every slot
    (bench/RESULTS.md)."""
    rows = _rows(
        f"SELECT grade IS NULL FROM {_table(FeedbackSlot)} WHERE evaluation_id = %s"
        " ORDER BY grade DESC NULLS FIRST LIMIT 1", [evaluation_id])
    return bool(rows) and not rows[0][0]


def evaluation_recompute_error_store(*, evaluation_id: int, error: str) -> bool:
    """Record why the evaluation's last recompute failed (a row of its own if it has none).
    True when that is news: the evaluation had no error stored, or another one."""
    previous = EvaluationRecomputeState.objects.filter(evaluation_id=evaluation_id).values_list(
        "recompute_error", flat=True).first()
    _run(
        f"INSERT INTO {_table(EvaluationRecomputeState)} (evaluation_id, recompute_error,"
        f" progress) SELECT id, %s, 0 FROM {_table(Evaluation)} WHERE id = %s"
        " ON CONFLICT (evaluation_id) DO UPDATE SET recompute_error = excluded.recompute_error",
        [error, evaluation_id],
    )
    return previous != error


# --- the keywords' recompute marks (metrics.recompute.marks, their one writer) ---

_MARKS = _table(KeywordRecomputeMark)
# Insert a keyword's first mark, or bump the one it has. A keyword deleted meanwhile
# selects no row, so nothing is inserted for it.
_BUMP_UPSERT = (
    f"INSERT INTO {_MARKS} AS m (keyword_id, evaluation_id, version, computed_version,"
    " dirty_since) SELECT k.id, k.evaluation_id, 1, 0, %s"
    " FROM {source} ON CONFLICT (keyword_id) DO UPDATE SET version = m.version + 1,"
    " dirty_since = COALESCE(m.dirty_since, excluded.dirty_since)")


def keyword_version_bump_if_dirty(*, keyword_id: int) -> bool:
    """Bump the keyword's version if it is dirty already; whether it was."""
    return bool(sql.execute(
        f"UPDATE {_MARKS} SET version = version + 1"
        " WHERE keyword_id = %s AND dirty_since IS NOT NULL", [keyword_id]))


def keywords_version_bump_if_dirty(*, keyword_ids: list[int]) -> list[int]:
    """keyword_version_bump_if_dirty for several keywords in one statement (a judge's store
    of several batches); the ones that were dirty. Their marks are locked in keyword order
    first, as the one-keyword bumps of a loop over sorted ids took them, so two writers
    of overlapping keywords still wait for each other rather than deadlock. Sorted:
    RETURNING gives no order."""
    return sorted(keyword_id for keyword_id, in _run(
        f"WITH locked AS (SELECT keyword_id FROM {_MARKS}"
        f" WHERE keyword_id IN ({_marks(keyword_ids)}) AND dirty_since IS NOT NULL"
        f" ORDER BY keyword_id{sql.for_update()})"
        f" UPDATE {_MARKS} SET version = version + 1"
        " WHERE keyword_id IN (SELECT keyword_id FROM locked) AND dirty_since IS NOT NULL"
        " RETURNING keyword_id", list(keyword_ids)))


def keywords_version_bump(*, keyword_ids: list[int], now) -> None:
    """Bump each keyword's version and mark it dirty since `now` unless it was already."""
    statement = _BUMP_UPSERT.format(
        source=f"{_table(Keyword)} k WHERE k.id IN ({_marks(keyword_ids)})")
    # One keyword is a grade's: prepared on PostgreSQL like the grading requests' other
    # statements; a list of any length would only fill the prepared-statement cache.
    (sql.execute if len(keyword_ids) == 1 else _write)(
        statement, [sql.time_param(now), *keyword_ids])


def evaluation_fetched_keywords_version_bump(*, evaluation_id: int, now) -> int:
    """keywords_version_bump for every fetched keyword of the evaluation; how many."""
    return _write(
        _BUMP_UPSERT.format(source=f"{_table(Keyword)} k WHERE k.evaluation_id = %s"
                                   " AND k.fetch_status = %s"),
        [sql.time_param(now), evaluation_id, Keyword.FetchStatus.FETCHED])


def keyword_version_bump_cte(*, name: str, graded: str) -> str:
    """A `name AS (INSERT ...)` common table expression for PostgreSQL: bump the version of
    the keyword of the `graded` CTE's row when its `changed` column says so; it takes one
    parameter, the time to mark it dirty with, and returns `dirty_since`."""
    return f"{name} AS (" + _BUMP_UPSERT.format(
        source=f"{_table(Keyword)} k JOIN {graded} ON k.id = {graded}.\"keyword_id\""
               f" WHERE {graded}.changed") + " RETURNING m.dirty_since AS \"dirty_since\")"


def keywords_mark_computed(keyword_versions: list[tuple[int, int]]) -> list[tuple[int, object]]:
    """Set computed_version of each (keyword, version) whose stored computed_version is not
    newer, and clear dirty_since where the version is still that one; (id, dirty_since)
    of every keyword it wrote. A keyword with no mark is clean: nothing to write."""
    placeholders = ", ".join(["(%s, %s)"] * len(keyword_versions))
    return _run(
        f"WITH computed (keyword_id, version) AS (VALUES {placeholders})"
        f" UPDATE {_MARKS} SET computed_version = computed.version,"
        f" dirty_since = CASE WHEN {_MARKS}.version = computed.version THEN NULL"
        f" ELSE {_MARKS}.dirty_since END"
        f" FROM computed WHERE {_MARKS}.keyword_id = computed.keyword_id"
        f" AND {_MARKS}.computed_version <= computed.version"
        f" RETURNING {_MARKS}.keyword_id, {_MARKS}.dirty_since",
        [value for pair in keyword_versions for value in pair],
    )


# --- the dashboards ---


def snapshot_grade_patterns(*, evaluation_id: int) -> list[tuple[int, int, int, int, int, int]]:
    """(slots, graded slots, lowest grade, highest grade, sum of grades, number of snapshots)
    for every distinct such tuple of the evaluation's snapshots.

    Written out: the ORM cannot group by a grouped subquery's columns, and grouping per
    snapshot in Python brings every snapshot's row over: at 5,000 keywords (50,000
    snapshots) 262 ms against 181 ms for this statement (`bench/queries.py`, medians on the
    shared 2-core machine), on each uncached refresh of a live dashboard.
    """
    return _run(
        "SELECT total, graded, lo, hi, grade_sum, COUNT(*) FROM ("
        " SELECT COUNT(*) AS total, COUNT(grade) AS graded, MIN(grade) AS lo,"
        " MAX(grade) AS hi, SUM(grade) AS grade_sum"
        f" FROM {_table(FeedbackSlot)} WHERE evaluation_id = %s GROUP BY snapshot_id)"
        " per_snapshot GROUP BY total, graded, lo, hi, grade_sum",
        [evaluation_id],
    )


# --- segments: the keywords carrying a tag ---


def _tagged_sql(tags_sql: str, vendor: str) -> str:
    """SQL that is true when the JSON list of strings `tags_sql` holds the tag given as the
    one parameter that follows: PostgreSQL's jsonb `?` (a string element of the list; it
    read 100,000 keywords a third faster than containment, @>), SQLite's json_each."""
    if vendor == "postgresql":
        return f"{tags_sql} ? %s"
    if vendor == "sqlite":
        return f"EXISTS (SELECT 1 FROM json_each({tags_sql}) AS carried WHERE carried.value = %s)"
    raise NotSupportedError(f"tag filters are written for PostgreSQL and SQLite, not {vendor}")


def segment_histogram_rows(*, evaluation_id: int, metric_id: int, tag: str,
                           inner_edges: list[float]) -> list[tuple[int | None, int, int]]:
    """(bin, keywords, Σ weight) of the metric's non-null values over the evaluation's
    keywords carrying `tag` ("": every keyword), binned as the dashboard's counts are
    (_value_bin; bin -1: a value outside [0, 1]), and a row of bin None for the keywords
    without a value: the rows' keywords add up to the segment's. Grouped here: read value
    by value, a segment of 90,000 keywords cost the dashboard 100 ms more than this
    statement, and the segment's count is the keyword table's (bench/segments.py)."""
    where, params = "", []
    if tag:
        where, params = f" AND {_tagged_sql('k.tags', connection.vendor)}", [tag]
    return [(None if bin_ is None else int(bin_), count, int(weight or 0))
            for bin_, count, weight in _run(
        "SELECT bin, COUNT(*), SUM(weight) FROM (SELECT CASE WHEN v.value IS NULL THEN NULL"
        f" ELSE {_value_bin(inner_edges)} END AS bin, k.weight AS weight FROM {_table(Keyword)} k"
        f" LEFT JOIN {_table(KeywordMetricValue)} v ON v.keyword_id = k.id"
        " AND v.metric_id = %s AND v.value IS NOT NULL"
        f" WHERE k.evaluation_id = %s{where}) binned GROUP BY bin",
        [*inner_edges, metric_id, evaluation_id, *params])]


class Tagged(Func):
    """A filter on Keyword (or on a model that reaches it `through` a relation,
    "keyword__"): the keyword's tags hold `tag` (_tagged_sql). Django's JSONField
    `contains` does not run on SQLite, and its `has_key` reads a list's elements as keys
    there. A filter like any other: keyword_table sorts and pages over it, the counts count
    through it."""

    output_field = BooleanField()

    def __init__(self, tag: str, *, through: str = "") -> None:
        super().__init__(F(f"{through}tags"))
        self.tag = tag

    def as_sql(self, compiler, connection, **extra):
        tags_sql, tags_params = compiler.compile(self.source_expressions[0])
        return _tagged_sql(tags_sql, connection.vendor), [*tags_params, self.tag]


# --- the evaluation's run mark (metrics.recompute.scheduling) ---


def recompute_due_upsert(*, evaluation_id: int, due_at: datetime | None) -> None:
    """Set the evaluation's RecomputeDue mark, creating its row: one statement, race-free.
    bulk_create(update_conflicts=True) says the same inside BEGIN ... COMMIT, two more
    round trips twice a recompute run. Raises IntegrityError when the evaluation is gone."""
    table = _table(RecomputeDue)
    _run(f"INSERT INTO {table} (evaluation_id, due_at) VALUES (%s, %s)"
         " ON CONFLICT (evaluation_id) DO UPDATE SET due_at = excluded.due_at",
         [evaluation_id, sql.time_param(due_at)])


# --- the dashboard's counts (metrics.recompute.aggregates) ---


def _share_parts(*, slot_filter: str, value_filter: str, inner_edges: list[float]) -> str:
    """SQL of (keyword_id, key, n): what each keyword adds to the dashboard counts
    (metrics.recompute.aggregates, which documents the keys): its snapshots by grade
    pattern, and its metric values by bin ([0, 1] cut at `inner_edges`: a value's bin is
    how many of them it reaches, numpy.histogram's rule; 1.0 is in the last bin, a value
    outside [0, 1] in bin -1). The filters name the rows of the slot and value
    tables. Parameters in order: the slot filter's, the inner edges, the value filter's."""
    def text(expression: str) -> str:  # an empty field for null, as parse_pattern reads it
        return f"COALESCE(CAST({expression} AS TEXT), '')"

    return (
        "SELECT keyword_id, key, COUNT(*) AS n FROM ("
        "SELECT keyword_id, 'p:' || " + " || ':' || ".join(
            text(column) for column in ("COUNT(*)", "COUNT(grade)", "MIN(grade)",
                                        "MAX(grade)", "SUM(grade)")) +
        f" AS key FROM {_table(FeedbackSlot)} WHERE {slot_filter}"
        " GROUP BY keyword_id, snapshot_id) patterns GROUP BY keyword_id, key"
        " UNION ALL SELECT keyword_id, key, COUNT(*) FROM ("
        "SELECT v.keyword_id, 'b:' || CAST(v.metric_id AS TEXT) || ':' || CAST("
        f"{_value_bin(inner_edges)} AS TEXT) AS key"
        f" FROM {_table(KeywordMetricValue)} v WHERE v.value IS NOT NULL AND {value_filter}"
        ") bins GROUP BY keyword_id, key")


def _value_bin(inner_edges: list[float]) -> str:
    """SQL of the bin of the value `v.value` in [0, 1] cut at `inner_edges` (one parameter
    each, in order): how many of them it reaches, numpy.histogram's rule; 1.0 in the last
    bin, a value outside [0, 1] in bin -1."""
    reached = " + ".join(["CASE WHEN v.value >= %s THEN 1 ELSE 0 END"] * len(inner_edges))
    return ("CASE WHEN v.value < 0 OR v.value > 1 THEN -1"
            f" WHEN v.value = 1 THEN {len(inner_edges)} ELSE {reached} END")


def dashboard_share_rows(*, keyword_ids: list[int], inner_edges: list[float]) -> list[tuple]:
    """(keyword, key, count) of each key of the keywords' dashboard shares (_share_parts)."""
    marks = _marks(keyword_ids)
    return _run(_share_parts(slot_filter=f"keyword_id IN ({marks})",
                             value_filter=f"v.keyword_id IN ({marks})",
                             inner_edges=inner_edges),
                [*keyword_ids, *inner_edges, *keyword_ids])


def dashboard_shares_rebuild(*, evaluation_id: int, inner_edges: list[float],
                             built_key: str) -> None:
    """Replace every share of the evaluation and its counts by what its slots and values
    give now, in the database: no row of the 3M slots of 100,000 keywords comes to Python.
    A keyword with neither slots nor values keeps no share."""
    shares, counts = _table(KeywordDashboardShare), _table(DashboardCount)
    parts = _share_parts(
        slot_filter="evaluation_id = %s",
        value_filter=(f"v.metric_id IN (SELECT id FROM {_table(EvaluationMetric)}"
                      " WHERE evaluation_id = %s)"), inner_edges=inner_edges)
    if connection.vendor == "postgresql":
        as_object, each = "jsonb_object_agg(key, n)", "jsonb_each_text(s.counts)"
    else:
        as_object, each = "json_group_object(key, n)", "json_each(s.counts)"
    _write(f"DELETE FROM {shares} WHERE evaluation_id = %s", [evaluation_id])
    _write(f"INSERT INTO {shares} (keyword_id, evaluation_id, counts)"
           f" SELECT keyword_id, %s, {as_object} FROM ({parts}) parts GROUP BY keyword_id",
           [evaluation_id, evaluation_id, *inner_edges, evaluation_id])
    _write(f"DELETE FROM {counts} WHERE evaluation_id = %s", [evaluation_id])
    _write(f"INSERT INTO {counts} (evaluation_id, key, count)"
           f" SELECT %s, e.key, SUM(CAST(e.value AS BIGINT)) FROM {shares} s, {each} e"
           " WHERE s.evaluation_id = %s GROUP BY e.key"
           " UNION ALL SELECT %s, %s, 1", [evaluation_id, evaluation_id, evaluation_id,
                                            built_key])


def keyword_evaluation_lock(*, keyword_id: int, built_key: str) -> tuple[int, bool] | None:
    """The keyword's evaluation, its row locked until the transaction ends, and whether it
    has the DashboardCount row `built_key`; None for no such keyword."""
    # SQLite has no row locks: its one writer at a time does the same.
    lock = " FOR NO KEY UPDATE OF e" if connection.vendor == "postgresql" else ""
    rows = _run(
        f"SELECT e.id, EXISTS (SELECT 1 FROM {_table(DashboardCount)} c"
        " WHERE c.evaluation_id = e.id AND c.key = %s)"
        f" FROM {_table(Evaluation)} e JOIN {_table(Keyword)} k ON k.evaluation_id = e.id"
        f" WHERE k.id = %s{lock}", [built_key, keyword_id])
    return None if not rows else (rows[0][0], bool(rows[0][1]))


def dashboard_counts_add(*, evaluation_id: int, delta: dict[str, int]) -> None:
    """Move the evaluation's counts by `delta` (key: change), a missing row from 0."""
    with connection.cursor() as cursor:
        cursor.executemany(
            f"INSERT INTO {_table(DashboardCount)} (evaluation_id, key, count)"
            " VALUES (%s, %s, %s) ON CONFLICT (evaluation_id, key) DO UPDATE"
            f" SET count = {_table(DashboardCount)}.count + excluded.count",
            [(evaluation_id, key, n) for key, n in sorted(delta.items())])
