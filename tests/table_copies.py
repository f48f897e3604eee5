"""Rows built once per test process and put back for every test that wants them.

`seed_demo` makes the demo through the real paths (it fetches 50 keywords through the
fetch service and recomputes each): seconds, and some twenty browser tests need the
same demo. The first test in a process builds it and copies every table's rows into
memory; each later one inserts the copy back, with the same primary keys, in a fraction
of that. Only for transactional tests: their tables are empty at the start (the last one
emptied them), as they were when the copy was built.

Content types, permissions and migrations are left out: migrating made them, and no test
changes them (tests.emptied_tables).
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from django.core.management.color import no_style
from django.db import connection, transaction

from tests.emptied_tables import project_tables, tables_with_rows


@dataclass(frozen=True)
class TableRows:
    table: str
    columns: tuple[str, ...]
    rows: list[tuple]


Built = TypeVar("Built")

_copies: dict[str, tuple[list[TableRows], object]] = {}


def _read(tables: list[str]) -> list[TableRows]:
    copied = []
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        for table in tables:
            cursor.execute(f"SELECT * FROM {quote(table)}")
            rows = cursor.fetchall()
            if rows:
                copied.append(TableRows(table, tuple(col[0] for col in cursor.description),
                                        rows))
    return copied


def _write(copied: list[TableRows]) -> None:
    quote = connection.ops.quote_name
    # Foreign keys are checked once every table is back (PostgreSQL's are deferred to the
    # commit; SQLite is told to defer them), so the order of the tables does not matter.
    with transaction.atomic(), connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("PRAGMA defer_foreign_keys = ON")
        for copy in copied:
            columns = ", ".join(quote(column) for column in copy.columns)
            marks = ", ".join(["%s"] * len(copy.columns))
            cursor.executemany(
                f"INSERT INTO {quote(copy.table)} ({columns}) VALUES ({marks})", copy.rows)
        # The next object made gets a key after the copied ones (SQLite's AUTOINCREMENT
        # follows inserted keys by itself).
        models = _models_of({copy.table for copy in copied})
        for statement in connection.ops.sequence_reset_sql(no_style(), models):
            cursor.execute(statement)


def _models_of(tables: set[str]) -> list:
    from django.apps import apps

    return [model for model in apps.get_models(include_auto_created=True)
            if model._meta.db_table in tables]


def build_once(name: str, build: Callable[[], Built]) -> Built:
    """Run `build` the first time `name` is asked for in this process, and copy the rows
    it made; every later time, put those rows back instead. Either way, answer what the
    first build answered: make it plain values (primary keys), not model instances. The
    database must be empty (a transactional test's is)."""
    if connection.in_atomic_block:
        # Inside a test's transaction the build's on-commit work would not run, and its
        # rows would differ from a transactional test's.
        raise AssertionError(f"build_once({name!r}) is for transactional tests")
    if name in _copies:
        copied, answer = _copies[name]
        _write(copied)
        return answer  # type: ignore[return-value]
    already = tables_with_rows()
    if already:
        raise AssertionError(f"build_once({name!r}) needs an empty database; rows in "
                             f"{already}")
    answer = build()
    _copies[name] = (_read(project_tables()), answer)
    return answer
