"""Small helpers for the few hand-written SQL statements on the grading hot path.

A grade costs two API requests, and the ORM's query compilation was most of their CPU
(bench/grading.py), so the statements those requests run are written out. These helpers
keep them portable between PostgreSQL and SQLite: parameters and results go through the
backend's own datetime and JSON conventions, as the ORM would.
"""

import json
import time
from contextlib import contextmanager, nullcontext
from datetime import UTC, datetime
from typing import Any

from django.db import connection
from django.utils.dateparse import parse_datetime


def is_postgresql() -> bool:
    return connection.vendor == "postgresql"


def skip_locked() -> str:
    """Row locks for a queue claim: PostgreSQL skips rows another claim holds; SQLite has
    no row locks and serialises writers, so its single UPDATE needs none."""
    return " FOR UPDATE SKIP LOCKED" if is_postgresql() else ""


def for_update() -> str:
    return " FOR UPDATE" if is_postgresql() else ""


def time_param(value: datetime | None) -> Any:
    """A datetime as this backend stores it (naive UTC text on SQLite)."""
    return connection.ops.adapt_datetimefield_value(value)


def time_value(value: Any) -> datetime | None:
    """A datetime column read back: aware UTC on both backends (SQLite's driver hands
    back text, or a naive datetime where it converts the column type itself)."""
    if value is None:
        return None
    parsed = value if isinstance(value, datetime) else parse_datetime(value)
    return parsed if parsed is None or parsed.tzinfo else parsed.replace(tzinfo=UTC)


def json_value(value: Any) -> Any:
    """A JSON column read back (as JSONField does: Django has both drivers return text)."""
    return json.loads(value) if isinstance(value, str) else value


@contextmanager
def _cursor():
    """A cursor for the hot path's statements.

    On PostgreSQL it binds parameters on the server, so psycopg prepares a statement a
    connection runs again (settings: prepare_threshold) and PostgreSQL stops planning it
    each time: planning these statements cost ten times more than running them. Django's
    own cursors bind on the client, never prepared, for the rest of the code. Errors
    surface as Django's (e.g. IntegrityError) and, when queries are logged (DEBUG, tests),
    these are logged too.
    """
    if not is_postgresql():
        with connection.cursor() as cursor:
            yield cursor
        return
    import psycopg

    connection.ensure_connection()
    with connection.wrap_database_errors, psycopg.Cursor(connection.connection) as cursor:
        yield cursor


def _run(cursor, statement: str, params: list | tuple, binary: bool = False) -> None:
    options = {"binary": True} if binary and is_postgresql() else {}
    if not connection.queries_logged or not is_postgresql():
        cursor.execute(statement, params, **options)
        return
    started = time.monotonic()
    try:
        cursor.execute(statement, params, **options)
    finally:
        connection.queries_log.append({
            "sql": f"{statement} -- {list(params)!r}",
            "time": f"{time.monotonic() - started:.3f}"})


def fetch_row(statement: str, params: list | tuple) -> tuple | None:
    with _cursor() as cursor:
        _run(cursor, statement, params)
        return cursor.fetchone()


def fetch_all(statement: str, params: list | tuple, *, binary: bool = False) -> list[tuple]:
    """Every row, as tuples. `binary` asks PostgreSQL for binary results: a float array
    then arrives as its IEEE bits, several times cheaper to decode than as text."""
    with _cursor() as cursor:
        _run(cursor, statement, params, binary)
        return cursor.fetchall()


# A statement's column names, by its text: psycopg builds cursor.description afresh on
# every call, about a twentieth of a grading request's CPU in a profile. Texts vary only
# with the length of an IN list, so the map stays small.
_column_names: dict[str, tuple[str, ...]] = {}


@contextmanager
def _generic_plan(cursor):
    """The statements `cursor` runs inside on PostgreSQL's generic plan of them, once
    prepared.

    A prepared statement is planned for its parameters each time until PostgreSQL judges a
    generic plan cheaper, which for some hot statements it never does: their planning then
    costs as much as their running, on every call. The mode is the session's, so it is put
    back after; other statements keep PostgreSQL's choice. One pipeline sends the three
    statements at once, so the setting costs no round trip; in it they share a transaction
    (or the caller's), and a failure rolls the SET back with it."""
    import psycopg

    with cursor.connection.pipeline(), psycopg.Cursor(cursor.connection) as setting:
        setting.execute("SET plan_cache_mode = force_generic_plan", prepare=False)
        yield
        setting.execute("RESET plan_cache_mode", prepare=False)


def fetch_one(statement: str, params: list | tuple, *, generic_plan: bool = False
              ) -> dict[str, Any] | None:
    """The first row as {column: value}, or None. `generic_plan`: on PostgreSQL's generic
    plan of the statement (_generic_plan), for one whose shape its parameters never
    change."""
    with _cursor() as cursor:
        with _generic_plan(cursor) if generic_plan and is_postgresql() else nullcontext():
            _run(cursor, statement, params)
        row = cursor.fetchone()
        if row is None:
            return None
        names = _column_names.get(statement)
        if names is None:
            if len(_column_names) > 1000:
                _column_names.clear()
            names = _column_names[statement] = tuple(column[0] for column in cursor.description)
        return dict(zip(names, row, strict=True))


def execute(statement: str, params: list | tuple) -> int:
    """Run one statement; the number of rows it changed."""
    with _cursor() as cursor:
        _run(cursor, statement, params)
        return cursor.rowcount


def rows_update(model, *, fields: list[str], rows: list[tuple], constants: dict[str, Any]
                | None = None) -> int:
    """Give each row of `model` its own values in one statement: `rows` are (pk, *values of
    `fields`), `constants` the values every row gets; how many rows changed.

    bulk_update writes a CASE per field and row, and grouping rows by their values costs a
    statement per group: a judge's batch has a grade and a reason per result, so it was a
    statement per result. This joins a VALUES list instead (UPDATE ... FROM, PostgreSQL
    and SQLite 3.33+); on PostgreSQL each value is cast to its column's type, as the
    VALUES list's own types would be guessed from its first row."""
    if not rows:
        return 0
    meta, quote = model._meta, connection.ops.quote_name
    table, pk = quote(meta.db_table), meta.pk
    columns = [pk] + [meta.get_field(name) for name in fields]
    cast = is_postgresql()

    def marker(field) -> str:
        return f"CAST(%s AS {field.db_type(connection)})" if cast else "%s"

    row_sql = "(" + ", ".join(marker(field) for field in columns) + ")"
    names = ", ".join(quote(field.column) for field in columns)
    params: list = []
    for row in rows:
        params += [field.get_db_prep_value(value, connection)
                   for field, value in zip(columns, row, strict=True)]
    assignments = [f"{quote(field.column)} = v.{quote(field.column)}" for field in columns[1:]]
    for name, value in (constants or {}).items():
        field = meta.get_field(name)
        assignments.append(f"{quote(field.column)} = %s")
        params.append(field.get_db_prep_value(value, connection))
    # The constants' parameters come after the VALUES list's, as their markers do.
    statement = (f"WITH v ({names}) AS (VALUES {', '.join([row_sql] * len(rows))}) "
                 f"UPDATE {table} SET {', '.join(assignments)} FROM v "
                 f"WHERE {table}.{quote(pk.column)} = v.{quote(pk.column)}")
    return execute(statement, params)
