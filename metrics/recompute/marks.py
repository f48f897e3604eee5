"""Every write of a keyword's recompute bookkeeping (docs/ARCHITECTURE.md, the recompute
pipeline): `version`, `computed_version` and `dirty_since` of metrics.KeywordRecomputeMark.

A grade change bumps the version and sets the dirty mark: judgments announces the change
inside the grade's transaction (judgments.signals.grades_written) and metrics.receivers
calls this module, or PostgreSQL's one-statement grade embeds keyword_version_bump_cte,
which metrics supplies to judgments at start-up. A recompute records the version it read
and clears the mark only if no newer grade arrived meanwhile. Nothing else writes these
rows, so the compare-and-set rules live in one place; reads stay with the selectors. The
statements are written out in metrics.queries.

A keyword with no row is at version 0 and clean: rows are created by the first bump.
"""

from collections.abc import Iterable

from django.utils import timezone

from metrics import queries

# Rows per statement: far below SQLite's 32,766 bound parameters.
_WRITE_CHUNK = 2000


def keywords_version_bump(*, keyword_ids: Iterable[int]) -> list[int]:
    """Bump each keyword's version and mark it dirty; the keywords that were clean before.

    Must run inside the transaction that changed the grades, so the bump commits or rolls
    back with them.
    """
    now = timezone.now()
    ids = sorted(set(keyword_ids))
    if len(ids) > 1:
        # Several keywords (a judge's store of several batches): two statements, not one
        # or two a keyword.
        dirty = set(queries.keywords_version_bump_if_dirty(keyword_ids=ids))
        newly_dirty = [keyword_id for keyword_id in ids if keyword_id not in dirty]
        if newly_dirty:
            queries.keywords_version_bump(keyword_ids=newly_dirty, now=now)
        return newly_dirty
    newly_dirty = []
    for keyword_id in ids:
        # Most grades land on a keyword that is dirty already (its recompute is queued or
        # running): one UPDATE. Only a clean keyword needs a run queued for it, so the
        # caller learns which ones turned dirty here.
        if queries.keyword_version_bump_if_dirty(keyword_id=keyword_id):
            continue
        queries.keywords_version_bump(keyword_ids=[keyword_id], now=now)
        newly_dirty.append(keyword_id)
    return newly_dirty


def keywords_version_bump_all(*, keyword_ids: Iterable[int]) -> None:
    """keywords_version_bump in one statement, when nobody needs to know which keywords
    were clean (the pool siblings of graded keywords)."""
    ids = sorted(set(keyword_ids))
    for start in range(0, len(ids), _WRITE_CHUNK):
        queries.keywords_version_bump(keyword_ids=ids[start:start + _WRITE_CHUNK],
                                      now=timezone.now())


def evaluation_keywords_version_bump(*, evaluation_id: int) -> int:
    """keywords_version_bump for every keyword of the evaluation, in one statement, when
    something all its values depend on changed (its metric configuration); how many.

    Must run inside the transaction that made the change: a lost or failed run then leaves
    the keywords dirty for the sweep, and a run that read the old configuration cannot
    clear them (it read an older version). Only fetched keywords hold values that a
    configuration changes; one never fetched (or failed) has none, so it is not marked: an
    evaluation's creation leaves its keywords clean and their first grades recompute at
    once."""
    return queries.evaluation_fetched_keywords_version_bump(
        evaluation_id=evaluation_id, now=timezone.now())


def keyword_version_bump_cte(*, name: str, graded: str) -> str:
    """A `name AS (INSERT ... ON CONFLICT DO UPDATE ...)` common table expression for
    PostgreSQL's one-statement grade (judgments.grading, registered at start-up by
    metrics.apps): bump the version of the keyword of the `graded` CTE's row when its
    `changed` column says so; it takes one parameter, the time to mark it dirty with, and
    returns `dirty_since`, equal to that time exactly when this statement turned the
    keyword dirty."""
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
