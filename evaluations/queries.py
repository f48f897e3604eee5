"""The evaluations app's hand-written SQL statements: the writes of a keyword's recompute
bookkeeping, which every grade and every recompute run makes (bench/grading.py,
bench/recompute.py), so they are written out.

Only evaluations.recompute_marks imports this module (a scan in
tests/evaluations/test_recompute_marks.py holds it to that): those columns keep one
writer. Table and column names come from the model's `_meta`; each statement is tested
against the ORM in tests/evaluations/test_queries.py. The demo engine's full-text search
stays in evaluations.demo (see its docstring).
"""

from django.db import connection

from evaluations.models import Keyword
from searchtweak import sql

_q = connection.ops.quote_name
KEYWORD_TABLE = _q(Keyword._meta.db_table)
_ID = _q(Keyword._meta.pk.column)
_VERSION = _q(Keyword._meta.get_field("version").column)
_COMPUTED = _q(Keyword._meta.get_field("computed_version").column)
_DIRTY = _q(Keyword._meta.get_field("dirty_since").column)

_BUMP_IF_DIRTY_SQL = (
    f"UPDATE {KEYWORD_TABLE} SET {_VERSION} = {_VERSION} + 1"
    f" WHERE {_ID} = %s AND {_DIRTY} IS NOT NULL")
_BUMP_SQL = (
    f"UPDATE {KEYWORD_TABLE} SET {_VERSION} = {_VERSION} + 1,"
    f" {_DIRTY} = COALESCE({_DIRTY}, %s) WHERE {_ID} = %s")


def keyword_version_bump_if_dirty(*, keyword_id: int) -> bool:
    """Bump the keyword's version if it is dirty already; whether it was."""
    return bool(sql.execute(_BUMP_IF_DIRTY_SQL, [keyword_id]))


def keyword_version_bump(*, keyword_id: int, now) -> None:
    """Bump the keyword's version and mark it dirty since `now` unless it was already."""
    sql.execute(_BUMP_SQL, [sql.time_param(now), keyword_id])


def keyword_version_bump_cte(*, name: str, graded: str) -> str:
    """A `name AS (UPDATE ...)` common table expression for PostgreSQL: bump the version of
    the keyword of the `graded` CTE's row when its `changed` column says so; it takes one
    parameter, the time to mark it dirty with, and returns `dirty_since`."""
    return (
        f"{name} AS (UPDATE {KEYWORD_TABLE} k"
        f" SET {_VERSION} = k.{_VERSION} + 1, {_DIRTY} = COALESCE(k.{_DIRTY}, %s)"
        f" FROM {graded} WHERE k.{_ID} = {graded}.\"keyword_id\" AND {graded}.changed"
        f" RETURNING k.{_DIRTY} AS \"dirty_since\")")


def keywords_mark_computed(keyword_versions: list[tuple[int, int]]) -> list[tuple[int, object]]:
    """Set computed_version of each (keyword, version) whose stored computed_version is not
    newer, and clear dirty_since where the version is still that one; (id, dirty_since)
    of every keyword it wrote."""
    table = KEYWORD_TABLE
    placeholders = ", ".join(["(%s, %s)"] * len(keyword_versions))
    with connection.cursor() as cursor:
        cursor.execute(
            f"WITH computed (keyword_id, version) AS (VALUES {placeholders})"
            f" UPDATE {table} SET {_COMPUTED} = computed.version,"
            f" {_DIRTY} = CASE WHEN {table}.{_VERSION} = computed.version THEN NULL"
            f" ELSE {table}.{_DIRTY} END"
            f" FROM computed WHERE {table}.{_ID} = computed.keyword_id"
            f" AND {table}.{_COMPUTED} <= computed.version"
            f" RETURNING {table}.{_ID}, {table}.{_DIRTY}",
            [value for pair in keyword_versions for value in pair],
        )
        return cursor.fetchall()
