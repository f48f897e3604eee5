"""Every write of a keyword's recompute bookkeeping (docs/ARCHITECTURE.md, the recompute
pipeline): `version`, `computed_version` and `dirty_since` on evaluations.Keyword.

Grades (judgments) bump the version and set the dirty mark; a recompute (metrics) records
the version it read and clears the mark only if no newer grade arrived meanwhile. Both
apps write these columns through this module alone, so the compare-and-set rules live in
one place; reads stay with their selectors. Its statements are written out in
evaluations.queries, which only this module imports.

It sits in evaluations, below both writers, since a lower app never imports a higher one.
"""

from collections.abc import Iterable

from django.db import transaction
from django.db.models import F, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from evaluations import queries
from evaluations.models import Keyword

# Rows per statement: far below SQLite's 32,766 bound parameters.
_WRITE_CHUNK = 2000


def keywords_version_bump(*, keyword_ids: Iterable[int]) -> list[int]:
    """Bump each keyword's version and mark it dirty; the keywords that were clean before.

    Must run inside the transaction that changed the grades, so the bump commits or rolls
    back with them.
    """
    now = timezone.now()
    newly_dirty = []
    for keyword_id in sorted(set(keyword_ids)):
        # Most grades land on a keyword that is dirty already (its recompute is queued or
        # running): one UPDATE. Only a clean keyword needs a run queued for it, so the
        # caller learns which ones turned dirty here.
        if queries.keyword_version_bump_if_dirty(keyword_id=keyword_id):
            continue
        queries.keyword_version_bump(keyword_id=keyword_id, now=now)
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


def evaluation_keywords_version_bump(*, evaluation_id: int) -> int:
    """keywords_version_bump for every keyword of the evaluation, in one statement, when
    something all its values depend on changed (its metric configuration); how many.

    Must run inside the transaction that made the change: a lost or failed run then leaves
    the keywords dirty for the sweep, and a run that read the old configuration cannot
    clear them (it read an older version). Only fetched keywords hold values that a
    configuration changes; one never fetched (or failed) has none, so it is not marked: an
    evaluation's creation leaves its keywords clean and their first grades recompute at
    once."""
    return Keyword.objects.filter(
        evaluation_id=evaluation_id, fetch_status=Keyword.FetchStatus.FETCHED).update(
        version=F("version") + 1,
        dirty_since=Coalesce(F("dirty_since"), Value(timezone.now())),
    )


def keyword_version_bump_cte(*, name: str, graded: str) -> str:
    """A `name AS (UPDATE ...)` common table expression for PostgreSQL's one-statement
    grade (judgments.grading): bump the version of the keyword of the `graded` CTE's row
    when its `changed` column says so; it takes one parameter, the time to mark it dirty
    with, and returns `dirty_since`, equal to that time exactly when this statement
    turned the keyword dirty."""
    return queries.keyword_version_bump_cte(name=name, graded=graded)


def keywords_mark_computed(keyword_versions: list[tuple[int, int]]) -> list[int]:
    """Record that each keyword's values reflect `version`; clear its dirty mark only if no
    newer grade arrived meanwhile (compare-and-set on the version). Returns the keywords it
    left dirty: a newer grade arrived, and the caller queues the run that reads it."""
    left_dirty = []
    for start in range(0, len(keyword_versions), _WRITE_CHUNK):
        written = queries.keywords_mark_computed(
            sorted(keyword_versions[start:start + _WRITE_CHUNK]))
        left_dirty += [pk for pk, dirty_since in written if dirty_since is not None]
    return sorted(left_dirty)
