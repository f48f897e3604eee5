"""Every write of a keyword's recompute bookkeeping (docs/ARCHITECTURE.md, the recompute
pipeline): `version`, `computed_version` and `dirty_since` on evaluations.Keyword.

Grades (judgments) bump the version and set the dirty mark; a recompute (metrics) records
the version it read and clears the mark only if no newer grade arrived meanwhile. Both
apps write these columns through this module alone, so the compare-and-set rules live in
one place; reads stay with their selectors. Table and column names come from the model.

It sits in evaluations, below both writers, since a lower app never imports a higher one.
"""

from collections.abc import Iterable

from django.db import connection, transaction
from django.db.models import F, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from evaluations.models import Keyword
from searchtweak import sql

_q = connection.ops.quote_name
KEYWORD_TABLE = _q(Keyword._meta.db_table)
_ID = _q(Keyword._meta.pk.column)
_VERSION = _q(Keyword._meta.get_field("version").column)
_COMPUTED = _q(Keyword._meta.get_field("computed_version").column)
_DIRTY = _q(Keyword._meta.get_field("dirty_since").column)

# Rows per statement: far below SQLite's 32,766 bound parameters.
_WRITE_CHUNK = 2000

# Written out: every grade runs one of these (searchtweak.sql on the hot path).
_BUMP_IF_DIRTY_SQL = (
    f"UPDATE {KEYWORD_TABLE} SET {_VERSION} = {_VERSION} + 1"
    f" WHERE {_ID} = %s AND {_DIRTY} IS NOT NULL")
_BUMP_SQL = (
    f"UPDATE {KEYWORD_TABLE} SET {_VERSION} = {_VERSION} + 1,"
    f" {_DIRTY} = COALESCE({_DIRTY}, %s) WHERE {_ID} = %s")


def keywords_version_bump(*, keyword_ids: Iterable[int]) -> list[int]:
    """Bump each keyword's version and mark it dirty; the keywords that were clean before.

    Must run inside the transaction that changed the grades, so the bump commits or rolls
    back with them.
    """
    now = sql.time_param(timezone.now())
    newly_dirty = []
    for keyword_id in sorted(set(keyword_ids)):
        # Most grades land on a keyword that is dirty already (its recompute is queued or
        # running): one UPDATE. Only a clean keyword needs a run queued for it, so the
        # caller learns which ones turned dirty here.
        if sql.execute(_BUMP_IF_DIRTY_SQL, [keyword_id]):
            continue
        sql.execute(_BUMP_SQL, [now, keyword_id])
        newly_dirty.append(keyword_id)
    return newly_dirty


def keywords_version_bump_all(*, keyword_ids: Iterable[int]) -> None:
    """keywords_version_bump in one statement, when nobody needs to know which keywords
    were clean (the pool siblings of graded keywords)."""
    ids = sorted(set(keyword_ids))
    if not ids:
        return
    with transaction.atomic():
        Keyword.objects.filter(pk__in=ids).update(
            version=F("version") + 1,
            dirty_since=Coalesce(F("dirty_since"), Value(timezone.now())),
        )


def keyword_version_bump_cte(*, name: str, graded: str) -> str:
    """A `name AS (UPDATE ...)` common table expression for PostgreSQL's one-statement
    grade (judgments.grading): bump the version of the keyword of the `graded` CTE's row
    when its `changed` column says so; it takes one parameter, the time to mark it dirty
    with, and returns `dirty_since`, equal to that time exactly when this statement
    turned the keyword dirty."""
    return (
        f"{name} AS (UPDATE {KEYWORD_TABLE} k"
        f" SET {_VERSION} = k.{_VERSION} + 1, {_DIRTY} = COALESCE(k.{_DIRTY}, %s)"
        f" FROM {graded} WHERE k.{_ID} = {graded}.\"keyword_id\" AND {graded}.changed"
        f" RETURNING k.{_DIRTY} AS \"dirty_since\")")


def keywords_mark_computed(keyword_versions: list[tuple[int, int]]) -> list[int]:
    """Record that each keyword's values reflect `version`; clear its dirty mark only if no
    newer grade arrived meanwhile (compare-and-set on the version). Returns the keywords it
    left dirty: a newer grade arrived, and the caller queues the run that reads it."""
    table = KEYWORD_TABLE
    left_dirty = []
    for start in range(0, len(keyword_versions), _WRITE_CHUNK):
        chunk = sorted(keyword_versions[start:start + _WRITE_CHUNK])
        placeholders = ", ".join(["(%s, %s)"] * len(chunk))
        params = [value for pair in chunk for value in pair]
        with connection.cursor() as cursor:
            cursor.execute(
                f"WITH computed (keyword_id, version) AS (VALUES {placeholders})"
                f" UPDATE {table} SET {_COMPUTED} = computed.version,"
                f" {_DIRTY} = CASE WHEN {table}.{_VERSION} = computed.version THEN NULL"
                f" ELSE {table}.{_DIRTY} END"
                f" FROM computed WHERE {table}.{_ID} = computed.keyword_id"
                f" AND {table}.{_COMPUTED} <= computed.version"
                f" RETURNING {table}.{_ID}, {table}.{_DIRTY}",
                params,
            )
            left_dirty += [pk for pk, dirty_since in cursor.fetchall() if dirty_since is not None]
    return sorted(left_dirty)

