"""Rows built once per test process and put back for every test that wants them.

`seed_demo` makes the demo through the real paths (it fetches 50 keywords through the
fetch service and recomputes each): seconds, and some twenty browser tests need the
same demo. The first test in a process builds it and copies every table's rows into
memory; each later one inserts the copy back, with the same primary keys, in a fraction
of that. Only for transactional tests: their tables are empty at the start (the last one
emptied them), as they were when the copy was built.

Content types, permissions and migrations are left out: migrating made them, and no test
changes them (tests.emptied_tables). SQLite's virtual tables are copied too, though no model
names them: the demo catalog's full-text index (evaluations.demo) holds a row per product,
keyed by the product's key, and a copy of the products without it would be searched through
the index of whichever catalog was made last (other keys: deleting rows resets no sequence),
finding nothing.
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
    # A virtual table: its rows replace those a test left, which no emptying deleted.
    replaces: bool = False


Built = TypeVar("Built")

_copies: dict[str, tuple[list[TableRows], object]] = {}


def _virtual_tables() -> list[str]:
    """SQLite's virtual tables (FTS5 indexes): the emptied tables leave their rows, and a
    copy puts them back whole, its rows replacing those left (empty ones too)."""
    if connection.vendor != "sqlite":
        return []  # PostgreSQL's full-text index is an index of the products' own table
    with connection.cursor() as cursor:
        cursor.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                       "AND sql LIKE 'CREATE VIRTUAL TABLE%' ORDER BY name")
        return [name for (name,) in cursor.fetchall()]


def _written_columns(cursor, table: str) -> list[str]:
    """The columns an INSERT may name; empty for "all of them". PostgreSQL refuses a value
    for a generated column (the demo catalog's stored text vectors: evaluations migration
    0020), which it computes again from the copied row."""
    if connection.vendor != "postgresql":
        return []
    cursor.execute("SELECT column_name FROM information_schema.columns WHERE table_name = %s "
                   "AND table_schema = current_schema() AND is_generated = 'NEVER' "
                   "ORDER BY ordinal_position", [table])
    return [name for (name,) in cursor.fetchall()]


def _read(tables: list[str], virtual: list[str]) -> list[TableRows]:
    copied = []
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        for table in tables:
            columns = _written_columns(cursor, table)
            cursor.execute(f"SELECT {', '.join(map(quote, columns))} FROM {quote(table)}"
                           if columns else f"SELECT * FROM {quote(table)}")
            rows = cursor.fetchall()
            if rows:
                copied.append(TableRows(table, tuple(col[0] for col in cursor.description),
                                        rows))
        for table in virtual:
            # The rowid is the key the index shares with its table's rows; * leaves it out.
            cursor.execute(f"SELECT rowid, * FROM {quote(table)}")
            copied.append(TableRows(table, tuple(col[0] for col in cursor.description),
                                    cursor.fetchall(), replaces=True))
    return copied


def _write(copied: list[TableRows]) -> None:
    quote = connection.ops.quote_name
    # Foreign keys are checked once every table is back (PostgreSQL's are deferred to the
    # commit; SQLite is told to defer them), so the order of the tables does not matter.
    with transaction.atomic(), connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("PRAGMA defer_foreign_keys = ON")
        for copy in copied:
            if copy.replaces:
                cursor.execute(f"DELETE FROM {quote(copy.table)}")
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
    _copies[name] = (_read(project_tables(), _virtual_tables()), answer)
    return answer
