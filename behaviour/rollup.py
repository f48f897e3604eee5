"""The rollup a source's online figures are read from (BehaviourKeywordDay,
docs/decisions/0028): per (keyword, day) and per keyword over the whole log, its sums
(BehaviourCount, BehaviourSearches) added up over documents, position by position up to
ROLLUP_DEPTH.

It is rebuilt from the sums, never patched with a batch's increments, so it is their
function whatever wrote them: the importers rebuild a new source whole, the collector the
keywords and days a batch touched, each in the transaction that wrote the sums; the
migration that brought the rollup in rebuilt every source. A day row is dropped and made
again; a keyword's whole row is then the sum of its day rows (a CSV's sums have no day:
they make its whole rows directly).

Two INSERT ... SELECT statements do it in the database (a source's sums never come to
Python: an import's millions of count rows take seconds, not minutes); their names come
from the models' _meta, and the only vendor difference is how a first-clicks JSON list is
read. Tested against the sums' own figures on SQLite and PostgreSQL (tests/behaviour/
test_rollup.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, timedelta

from django.db import connection, transaction
from django.db.models import Model, QuerySet

from behaviour.models import LAST_DAYS, ROLLUP_DEPTH, last_day_of

CHUNK = 500
"""Keywords per IN list (SQLite's bound-variable limit)."""
POSITIONS = range(1, ROLLUP_DEPTH + 1)
SUMMED = ("searches", "dwell_seconds_sum", "dwell_count",
          *(f"{name}_{position}" for position in POSITIONS
            for name in ("impressions", "clicks", "first_clicks")))
DEEPEST = ("count_depth", "first_click_depth")


@dataclass(frozen=True)
class RollupModels:
    """The models the rollup reads and writes: the app's, or a migration's (one made
    before the last-days rows existed names none: they are then not made)."""

    count: type[Model]
    searches: type[Model]
    keyword_day: type[Model]
    last_days: type[Model] | None = None
    source: type[Model] | None = None


def _app_models() -> RollupModels:
    from behaviour.models import (
        BehaviourCount,
        BehaviourKeywordDay,
        BehaviourKeywordLastDays,
        BehaviourSearches,
        BehaviourSource,
    )
    return RollupModels(BehaviourCount, BehaviourSearches, BehaviourKeywordDay,
                        BehaviourKeywordLastDays, BehaviourSource)


def _column(model: type[Model], name: str) -> str:
    return connection.ops.quote_name(model._meta.get_field(name).column)


def _first_click(index: int | None) -> str:
    """A searches row's first clicks at list index `index`, or the list's length."""
    if connection.vendor == "postgresql":
        return ("jsonb_array_length(s.first_clicks)" if index is None
                else f"(s.first_clicks ->> {index})::bigint")
    return ("json_array_length(s.first_clicks)" if index is None
            else f"json_extract(s.first_clicks, '$[{index}]')")


def _filters(keywords: list[str] | None, days: list[date] | None) -> tuple[str, list]:
    sql, params = "", []
    if keywords is not None:
        sql += f" AND keyword IN ({', '.join(['%s'] * len(keywords))})"
        params += keywords
    if days is not None:
        sql += f" AND day IN ({', '.join(['%s'] * len(days))})"
        params += [connection.ops.adapt_datefield_value(day) for day in days]
    return sql, params


def _insert_days(found: RollupModels, source_id: int, keywords: list[str] | None,
                 days: list[date] | None) -> None:
    """The day rows of these keywords and days from the sums; a CSV's dayless sums as
    whole rows."""
    rollup, count, searches = (found.keyword_day._meta.db_table, found.count._meta.db_table,
                               found.searches._meta.db_table)
    where, params = _filters(keywords, days)
    per_position = ", ".join(
        f"SUM(CASE WHEN position = {p} THEN impressions ELSE 0 END) AS i{p}, "
        f"SUM(CASE WHEN position = {p} THEN clicks ELSE 0 END) AS c{p}" for p in POSITIONS)
    columns = ["source", "keyword", "day", "whole", "searches", "dwell_seconds_sum",
               "dwell_count", "count_depth", "first_click_depth"]
    values = ["%s", "COALESCE(c.keyword, s.keyword)", "COALESCE(c.day, s.day)",
              "COALESCE(c.day, s.day) IS NULL", "COALESCE(s.search_count, 0)",
              "COALESCE(c.dwell_sum, 0)", "COALESCE(c.dwell_count, 0)",
              "COALESCE(c.depth, 0)", f"COALESCE({_first_click(None)}, 0)"]
    for p in POSITIONS:
        columns += [f"impressions_{p}", f"clicks_{p}", f"first_clicks_{p}"]
        values += [f"COALESCE(c.i{p}, 0)", f"COALESCE(c.c{p}, 0)",
                   f"COALESCE({_first_click(p - 1)}, 0)"]
    statement = (
        f"INSERT INTO {rollup} ({', '.join(_column(found.keyword_day, c) for c in columns)})"
        f" SELECT {', '.join(values)} FROM"
        " (SELECT keyword, day, SUM(dwell_seconds_sum) AS dwell_sum,"
        f" SUM(dwell_count) AS dwell_count, MAX(position) AS depth, {per_position}"
        f" FROM {count} WHERE source_id = %s{where} GROUP BY keyword, day) c"
        " FULL OUTER JOIN (SELECT keyword, day, search_count, first_clicks"
        f" FROM {searches} WHERE source_id = %s{where}) s"
        " ON s.keyword = c.keyword AND s.day = c.day")
    with connection.cursor() as cursor:
        cursor.execute(statement, [source_id, source_id, *params, source_id, *params])


def _insert_wholes(found: RollupModels, source_id: int, keywords: list[str] | None) -> None:
    """The whole rows of these keywords: the sums of their day rows."""
    model = found.keyword_day
    where, params = _filters(keywords, None)
    columns = ["source", "keyword", "day", "whole", *SUMMED, *DEEPEST]
    values = ["%s", "keyword", "NULL", "TRUE",
              *(f"SUM({_column(model, name)})" for name in SUMMED),
              *(f"MAX({_column(model, name)})" for name in DEEPEST)]
    statement = (
        f"INSERT INTO {model._meta.db_table} ({', '.join(_column(model, c) for c in columns)})"
        f" SELECT {', '.join(values)} FROM {model._meta.db_table}"
        f" WHERE source_id = %s AND whole = FALSE{where} GROUP BY keyword")
    with connection.cursor() as cursor:
        cursor.execute(statement, [source_id, source_id, *params])


def keyword_days_rebuild(*, source_id: int, keywords: Iterable[str] | None = None,
                         days: Iterable[date] | None = None,
                         models: RollupModels | None = None) -> None:
    """Make the rollup of some of a source's keywords on some days (`days` only with
    `keywords`) again from its sums, and those keywords' whole rows; without `keywords`,
    the whole source's. Run it in the transaction that changed the sums."""
    found = models or _app_models()
    rows = found.keyword_day.objects.filter(source_id=source_id)
    if keywords is None:
        if days is not None:
            raise ValueError("days are rebuilt for named keywords only")
        rows.delete()
        _insert_days(found, source_id, None, None)
        _insert_wholes(found, source_id, None)
        if found.last_days is not None:
            source = found.source.objects.get(pk=source_id)
            _last_days_make(found, source_id, _last_on(source))
        return
    wanted = sorted(set(keywords))
    on_days = sorted(set(days)) if days is not None else None
    for start in range(0, len(wanted), CHUNK):
        chunk = wanted[start:start + CHUNK]
        stale = rows.filter(keyword__in=chunk)
        if on_days is not None:
            stale = stale.filter(whole=True) | stale.filter(whole=False, day__in=on_days)
        stale.delete()
        _insert_days(found, source_id, chunk, on_days)
        _insert_wholes(found, source_id, chunk)


def _last_on(source: Model) -> date | None:
    """The day the presets end on: the last of the source's window, as the panel counts
    back from it (behaviour.panels); None for a CSV, whose sums have no day."""
    return None if source.kind == "csv" else last_day_of(source.window_end_at)


def _behind(source: Model) -> bool:
    """Whether the source's last-days rows do not end on the day they should (a CSV and
    a source without a window have none, and so never are)."""
    return source.last_days_on != _last_on(source)


def _insert_last_days(found: RollupModels, source_id: int, keywords: list[str] | None,
                      last_on: date) -> None:
    """The last-days rows of these keywords (all: None) ending on `last_on`, one
    statement a preset: the sums of their day rows on those days."""
    model, day_model = found.last_days, found.keyword_day
    where, params = _filters(keywords, None)
    columns = ["source", "keyword", "days", *SUMMED, *DEEPEST]
    values = ["%s", "keyword", "%s", *(f"SUM({_column(day_model, name)})" for name in SUMMED),
              *(f"MAX({_column(day_model, name)})" for name in DEEPEST)]
    statement = (
        f"INSERT INTO {model._meta.db_table} ({', '.join(_column(model, c) for c in columns)})"
        f" SELECT {', '.join(values)} FROM {day_model._meta.db_table}"
        f" WHERE source_id = %s AND whole = FALSE AND day >= %s AND day <= %s{where}"
        " GROUP BY keyword")
    with connection.cursor() as cursor:
        for days in LAST_DAYS:
            first_on = last_on - timedelta(days=days - 1)
            cursor.execute(statement, [source_id, days, source_id,
                                       connection.ops.adapt_datefield_value(first_on),
                                       connection.ops.adapt_datefield_value(last_on),
                                       *params])


def _last_days_make(found: RollupModels, source_id: int, last_on: date | None) -> None:
    found.last_days.objects.filter(source_id=source_id).delete()
    if last_on is not None:
        _insert_last_days(found, source_id, None, last_on)
    found.source.objects.filter(pk=source_id).update(last_days_on=last_on)


def last_days_follow(*, source: Model, keywords: Iterable[str], days: Iterable[date]
                     ) -> bool:
    """Keep the last-days rows as a collector's batch changes the day rows of
    `keywords` on `days` (in the batch's transaction, the source locked and its window
    widened). While they end on the window's last day, the batch's keywords' rows are
    made again if it touched one of their days. True when they do not (the batch brought
    a new last day, or they never did): every keyword's must be made again, which
    last_days_catch_up does (in a task: at 100,000 keywords it adds up millions of day
    rows, too long for the batch's request); until then the presets read the day rows."""
    last_on = _last_on(source)
    if _behind(source):
        if source.last_days_on is not None:
            source.last_days_on = None
            source.save(update_fields=["last_days_on"])
        return last_on is not None
    if last_on is None:
        return False
    first_on = last_on - timedelta(days=max(LAST_DAYS) - 1)
    if any(first_on <= day <= last_on for day in days):
        found = _app_models()
        wanted = sorted(set(keywords))
        for start in range(0, len(wanted), CHUNK):
            chunk = wanted[start:start + CHUNK]
            found.last_days.objects.filter(source_id=source.pk, keyword__in=chunk).delete()
            _insert_last_days(found, source.pk, chunk, last_on)
    return False


def last_days_catch_up(*, source_id: int, models: RollupModels | None = None) -> bool:
    """Make every last-days row of the source again if they do not end on its window's
    last day; True if they were made. Holds the source's row lock meanwhile, so a
    collector's batches wait and none changes the day rows being added up."""
    found = models or _app_models()
    with transaction.atomic():
        source = found.source.objects.select_for_update().filter(pk=source_id).first()
        if source is None or not _behind(source):
            return False
        _last_days_make(found, source_id, _last_on(source))
        return True


def last_days_behind() -> list[int]:
    """The sources whose last-days rows do not end on their window's last day: those a
    batch left to a task that was lost or failed. Every source is looked at (a team has
    a few), by four of its fields."""
    sources = _app_models().source.objects.order_by("pk").only(
        "pk", "kind", "window_end_at", "last_days_on")
    return [source.pk for source in sources if _behind(source)]


def first_clicks_by_position(searches: QuerySet) -> dict[int, int]:
    """{position: searches whose first click was there}, summed in the database over the
    JSON lists (one statement; the lists never come to Python)."""
    inner, params = searches.values("id").query.sql_with_params()
    table = _app_models().searches._meta.db_table
    if connection.vendor == "postgresql":
        statement = (f"SELECT e.position, SUM(e.value::bigint) FROM {table} s, "
                     "jsonb_array_elements_text(s.first_clicks) WITH ORDINALITY "
                     f"AS e(value, position) WHERE s.id IN ({inner}) GROUP BY e.position")
    else:
        statement = (f"SELECT e.key + 1, SUM(e.value) FROM {table} s, json_each(s.first_clicks)"
                     f" AS e WHERE s.id IN ({inner}) GROUP BY e.key")
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        return {int(position): int(total or 0) for position, total in cursor.fetchall()}


@contextmanager
def planner_settings(**settings: str) -> Iterator[None]:
    """Run the block in a transaction (one of its own unless the caller's) with these
    PostgreSQL settings for that transaction only (one statement first); on SQLite, as
    it is."""
    if connection.vendor != "postgresql":
        yield
        return
    names = sorted(settings)
    with transaction.atomic(savepoint=False):
        with connection.cursor() as cursor:
            cursor.execute("SELECT " + ", ".join(["set_config(%s, %s, true)"] * len(names)),
                           [value for name in names for value in (name, settings[name])])
        yield


INDEX_READ = {"enable_seqscan": "off"}
"""PostgreSQL's settings for reading a row per keyword (whole or last-days rows): a
source's such rows are written together, so they sit in a few pages, but the planner
prices a scan of their index as if they were spread over the table and, once the table
holds a few times as many day rows, reads all of it instead (bench/RESULTS.md)."""

WINDOW_WORK_MEM = "64MB"
"""PostgreSQL's work_mem for the window statement: the mean over keywords groups 100,000
keywords' rows in memory (about 32 MB) instead of sorting them through disk."""


def window_sums(*, source_id: int, keyword_texts: QuerySet, k: int,
                start_on: date | None, end_on: date | None) -> dict:
    """The day rows of these keywords in the window (days both included, either open),
    added up in one statement: {name: sum} for SUMMED, {name: max} for DEEPEST, and
    `keywords` (those with count rows) and `mean` (the mean over them of CTR@k, a
    keyword's clicks over impressions at positions up to k; None where none is shown).

    The pooled sums are one aggregate over the rows; the mean groups the rows by keyword
    carrying only what CTR@k needs. On PostgreSQL the statement runs with
    WINDOW_WORK_MEM, so the grouping is a hash in memory, and without JIT, whose
    compiling costs more than the statement saves (bench/RESULTS.md): both set for its
    transaction only."""
    model = _app_models().keyword_day
    inner, params = keyword_texts.query.sql_with_params()
    where, window = "", []
    if start_on is not None:
        where += " AND day >= %s"
        window.append(connection.ops.adapt_datefield_value(start_on))
    if end_on is not None:
        where += " AND day <= %s"
        window.append(connection.ops.adapt_datefield_value(end_on))
    rows = (f"FROM {model._meta.db_table} WHERE source_id = %s AND whole = FALSE{where}"
            f" AND keyword IN ({inner})")
    top = range(1, min(k, ROLLUP_DEPTH) + 1)
    shown = " + ".join(_column(model, f"impressions_{p}") for p in top)
    clicked = " + ".join(_column(model, f"clicks_{p}") for p in top)
    pooled = ", ".join([*(f"SUM({_column(model, name)})" for name in SUMMED),
                        *(f"MAX({_column(model, name)})" for name in DEEPEST)])
    statement = (
        f"SELECT * FROM (SELECT {pooled} {rows}) pooled CROSS JOIN"
        " (SELECT COUNT(*), AVG(CAST(clicked AS DOUBLE PRECISION)"
        " / NULLIF(CAST(shown AS DOUBLE PRECISION), 0)) FROM"
        f" (SELECT {_column(model, 'keyword')}, MAX({_column(model, 'count_depth')}) AS deepest,"
        f" SUM({shown}) AS shown, SUM({clicked}) AS clicked {rows}"
        " GROUP BY keyword) per_keyword WHERE deepest > 0) mean")
    with planner_settings(work_mem=WINDOW_WORK_MEM, jit="off"), connection.cursor() as cursor:
        cursor.execute(statement, [source_id, *window, *params] * 2)
        found = cursor.fetchone()
    return dict(zip([*SUMMED, *DEEPEST, "keywords", "mean"], found, strict=True))
