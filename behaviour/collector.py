"""The collector: batches of UBI queries and events from a search front end, folded into a
collector source's per-day sums, the same sums the importers write (docs/decisions/0020,
0023).

A batch is `{"queries": [...], "events": [...]}`, each item a UBI object as the importer
reads it (behaviour.importing), an event also carrying its own `event_id`. The batch is
stored whole or not at all: every item is checked first, a bad one is named with its list,
index and field, all are counted, and a batch with any is refused (400) before a row is
written.

**Idempotent.** A query is counted once per `query_id`, an event once per `event_id`: the
source remembers what it counted (CollectedQuery, CollectedEvent) while events may still
name the search, COLLECTOR_RETENTION after it. A re-sent batch adds nothing. A query older
than that is refused (it might have been counted and forgotten), and so is an event whose
search the source does not hold, so nothing is ever counted twice; what remains is bounded
by the traffic of the retention period.

**The importer's counting**, one batch at a time: a result is shown once per search (the
query's hit ids, or the first impression or click naming it), clicked once per search (its
longest dwell kept), and a search's first click is its highest-placed click: a later
event placing one higher moves it. Events count on the day of their search.

Batches of one source are stored one at a time (the source row is locked), so two
batches sending the same event cannot both count it. The rollup the pages read is rebuilt
for the batch's keywords and days in the batch's transaction (behaviour.rollup), their
rows of the last 7 and 30 days too; a batch bringing a new last day leaves every
keyword's of those to a task (docs/decisions/0033).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from functools import partial

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from behaviour.importing import (
    MAX_NAMED_ERRORS,
    BadLine,
    ubi_event_row,
    ubi_identifier,
    ubi_query,
)
from behaviour.models import (
    BehaviourCount,
    BehaviourSearches,
    BehaviourSource,
    CollectedEvent,
    CollectedQuery,
)
from behaviour.rollup import keyword_days_rebuild, last_days_follow
from behaviour.tasks import last_days_dispatch

CHUNK = 500
"""Ids per IN list (SQLite's bound-variable limit)."""
FUTURE_SKEW = timedelta(hours=1)
"""How far ahead of the server's clock a search's timestamp may be (clocks drift)."""


def retention() -> timedelta:
    return timedelta(hours=settings.BEHAVIOUR_COLLECTOR_RETENTION_HOURS)


@dataclass
class BatchErrors:
    named: list[str] = field(default_factory=list)
    count: int = 0

    def add(self, where: str, field_name: str, why: str) -> None:
        self.count += 1
        if len(self.named) < MAX_NAMED_ERRORS:
            self.named.append(f"{where}, {field_name}: {why}")

    def messages(self) -> list[str]:
        more = self.count - len(self.named)
        tail = [f"... and {more} more bad item{'s' if more != 1 else ''}"] if more else []
        return [*self.named, *tail, f"{self.count} bad item{'s' if self.count != 1 else ''} "
                                    "in the batch; nothing was stored."]


@dataclass(frozen=True)
class BatchResult:
    queries_added: int
    queries_repeated: int
    events_added: int
    events_repeated: int


@dataclass
class _Query:
    """A search as the batch sees it: stored before (row) or new in this batch."""

    query_id: str
    keyword: str
    day: date
    searched_at: datetime
    hit_ids: list[str]
    first_click: int | None
    row: CollectedQuery | None = None
    shown: set[tuple[str, int]] = field(default_factory=set)
    clicked: dict[tuple[str, int], float | None] = field(default_factory=dict)
    changed: bool = False


@dataclass(frozen=True)
class _Event:
    event_id: str
    query_id: str | None
    row: tuple | None
    """ubi_event_row's (query_id, object_id, position, clicked, dwell, _) or None."""


def _parse(items: object, name: str, errors: BatchErrors, parse) -> list:
    if items is None:
        return []
    if not isinstance(items, list):
        errors.add(name, name, "a list is needed")
        return []
    parsed = []
    for index, found in enumerate(items):
        where = f"{name}[{index}]"
        if not isinstance(found, dict):
            errors.add(where, "item", "not a JSON object")
            continue
        try:
            parsed.append(parse(found))
        except BadLine as bad:
            errors.add(where, bad.field_name, bad.why)
    return parsed


def _event(found: dict) -> _Event:
    event_id = ubi_identifier(found.get("event_id"), "event_id")
    row = ubi_event_row(found, None)
    query_id = found.get("query_id")
    return _Event(event_id, row[0] if row else (query_id if isinstance(query_id, str)
                                                 and query_id else None), row)


def _chunks(values: list) -> list[list]:
    return [values[start:start + CHUNK] for start in range(0, len(values), CHUNK)]


def _prune(source: BehaviourSource, now: datetime) -> None:
    horizon = now - retention()
    CollectedEvent.objects.filter(source=source, query__searched_at__lt=horizon).delete()
    CollectedEvent.objects.filter(source=source, query=None, received_at__lt=horizon).delete()
    CollectedQuery.objects.filter(source=source, searched_at__lt=horizon).delete()


def _known_queries(source: BehaviourSource, query_ids: list[str]) -> dict[str, _Query]:
    known: dict[str, _Query] = {}
    for chunk in _chunks(query_ids):
        for row in CollectedQuery.objects.filter(source=source, query_id__in=chunk):
            known[row.query_id] = _Query(
                row.query_id, row.keyword, row.searched_at.astimezone(UTC).date(),
                row.searched_at, row.hit_ids, row.first_click, row=row,
                shown={(doc, index) for index, doc in enumerate(row.hit_ids, start=1)})
    rows = {query.row.pk: query for query in known.values()}
    for chunk in _chunks(list(rows)):
        for query_pk, doc_id, position, clicked, dwell in CollectedEvent.objects.filter(
                query_id__in=chunk, position__isnull=False).values_list(
                "query_id", "doc_id", "position", "clicked", "dwell_seconds"):
            query = rows[query_pk]
            query.shown.add((doc_id, position))
            if clicked:
                query.clicked[(doc_id, position)] = dwell
    return known


def _repeated_event_ids(source: BehaviourSource, event_ids: list[str]) -> set[str]:
    found: set[str] = set()
    for chunk in _chunks(event_ids):
        found.update(CollectedEvent.objects.filter(source=source, event_id__in=chunk)
                     .values_list("event_id", flat=True))
    return found


class _Sums:
    """The batch's additions to the source's sums, keyed as they are stored."""

    def __init__(self) -> None:
        # (keyword, doc, position, day) -> [impressions, clicks, dwell sum, dwell count]
        self.counts: dict[tuple, list] = defaultdict(lambda: [0, 0, 0.0, 0])
        # (keyword, day) -> [searches, {position: first clicks added (may be negative)}]
        self.searches: dict[tuple, list] = defaultdict(lambda: [0, defaultdict(int)])

    def search(self, query: _Query) -> None:
        self.searches[(query.keyword, query.day)][0] += 1
        for position, doc in enumerate(query.hit_ids, start=1):
            if (doc, position) not in query.shown:
                query.shown.add((doc, position))
                self.counts[(query.keyword, doc, position, query.day)][0] += 1

    def event(self, query: _Query, doc: str, position: int, clicked: bool,
              dwell: float | None) -> None:
        count = self.counts[(query.keyword, doc, position, query.day)]
        if (doc, position) not in query.shown:
            query.shown.add((doc, position))
            count[0] += 1
        if not clicked:
            return
        if (doc, position) not in query.clicked:
            query.clicked[(doc, position)] = dwell
            count[1] += 1
            if dwell is not None:
                count[2] += dwell
                count[3] += 1
        else:
            before = query.clicked[(doc, position)]
            if dwell is not None and (before is None or dwell > before):
                query.clicked[(doc, position)] = dwell
                count[2] += dwell - (before or 0.0)
                count[3] += 1 if before is None else 0
        if query.first_click is None or position < query.first_click:
            moves = self.searches[(query.keyword, query.day)][1]
            if query.first_click is not None:
                moves[query.first_click] -= 1
            moves[position] += 1
            query.first_click = position
            query.changed = True


def _store_sums(source: BehaviourSource, sums: _Sums) -> tuple[list[str], set[date]]:
    """Add the batch's sums to the source's and make their rollup again; the keywords
    and days changed."""
    keywords = sorted({key[0] for key in sums.counts} | {key[0] for key in sums.searches})
    existing_counts, existing_searches = {}, {}
    for chunk in _chunks(keywords):
        for row in BehaviourCount.objects.filter(source=source, keyword__in=chunk,
                                                 day__isnull=False):
            key = (row.keyword, row.doc_id, row.position, row.day)
            if key in sums.counts:
                existing_counts[key] = row
        for row in BehaviourSearches.objects.filter(source=source, keyword__in=chunk,
                                                    day__isnull=False):
            if (row.keyword, row.day) in sums.searches:
                existing_searches[(row.keyword, row.day)] = row
    new_counts, changed_counts = [], []
    for key, (shown, clicks, dwell_sum, dwell_count) in sums.counts.items():
        row = existing_counts.get(key) or BehaviourCount(
            source=source, keyword=key[0], doc_id=key[1], position=key[2], day=key[3],
            impressions=0, clicks=0)
        row.impressions += shown
        row.clicks += clicks
        row.dwell_seconds_sum += dwell_sum
        row.dwell_count += dwell_count
        (changed_counts if row.pk else new_counts).append(row)
    BehaviourCount.objects.bulk_create(new_counts, batch_size=CHUNK)
    BehaviourCount.objects.bulk_update(
        changed_counts, ["impressions", "clicks", "dwell_seconds_sum", "dwell_count"],
        batch_size=CHUNK)
    new_searches, changed_searches = [], []
    for key, (count, moves) in sums.searches.items():
        row = existing_searches.get(key) or BehaviourSearches(
            source=source, keyword=key[0], day=key[1], search_count=0, first_clicks=[])
        row.search_count += count
        firsts = list(row.first_clicks)
        for position, change in moves.items():
            firsts.extend([0] * (position - len(firsts)))
            firsts[position - 1] += change
        while firsts and firsts[-1] == 0:
            firsts.pop()
        row.first_clicks = firsts
        (changed_searches if row.pk else new_searches).append(row)
    BehaviourSearches.objects.bulk_create(new_searches, batch_size=CHUNK)
    BehaviourSearches.objects.bulk_update(changed_searches, ["search_count", "first_clicks"],
                                          batch_size=CHUNK)
    days = {key[-1] for key in sums.counts} | {key[1] for key in sums.searches}
    keyword_days_rebuild(source_id=source.pk, keywords=keywords, days=days)
    return keywords, days


def collector_batch_store(*, source: BehaviourSource, queries: object, events: object,
                          now: datetime | None = None) -> BatchResult:
    """Fold a batch into a collector source's sums, whole or not at all.

    Raises ValidationError on `source` (not a collector's), `queries` or `events` (the
    bad items named, all counted); nothing is written then. Items already counted (by
    query_id, event_id) are repeats and add nothing."""
    if source.kind != BehaviourSource.Kind.COLLECTOR:
        raise ValidationError({"source": "Only a collector source takes batches; this one "
                                         "was imported from a file."})
    now = now or timezone.now()
    query_errors, event_errors = BatchErrors(), BatchErrors()
    parsed_queries = _parse(queries, "queries", query_errors, ubi_query)
    parsed_events = _parse(events, "events", event_errors, _event)
    oldest = now - retention()
    for index, (query_id, _keyword, moment, _hits) in enumerate(parsed_queries):
        if moment < oldest:
            query_errors.add(f"queries[{index}] ({query_id!r})", "timestamp",
                             f"older than the collector keeps searches "
                       f"({settings.BEHAVIOUR_COLLECTOR_RETENTION_HOURS} hours): import it "
                       "as a file instead")
        elif moment > now + FUTURE_SKEW:
            query_errors.add(f"queries[{index}] ({query_id!r})", "timestamp",
                             "in the future")
    _refuse(query_errors, event_errors)
    with transaction.atomic():
        source = BehaviourSource.objects.select_for_update().get(pk=source.pk)
        _prune(source, now)
        named = sorted({q[0] for q in parsed_queries}
                       | {e.query_id for e in parsed_events if e.query_id})
        known = _known_queries(source, named)
        repeated_events = _repeated_event_ids(source, sorted({e.event_id for e in parsed_events}))
        sums = _Sums()
        added: dict[str, _Query] = {}
        queries_repeated = 0
        for query_id, keyword, moment, hits in parsed_queries:
            if query_id in known:
                queries_repeated += 1
                continue
            query = _Query(query_id, keyword, moment.date(), moment, hits, None)
            known[query_id] = added[query_id] = query
            sums.search(query)
        events_taken: list[tuple[_Event, _Query | None]] = []
        seen_events: set[str] = set()
        for index, found in enumerate(parsed_events):
            if found.event_id in repeated_events or found.event_id in seen_events:
                continue
            query = known.get(found.query_id) if found.query_id else None
            if found.row is not None and query is None:
                event_errors.add(f"events[{index}] ({found.event_id!r})", "query_id",
                           f"{found.query_id!r} is not among this source's searches (send "
                           "the query first or in the same batch; searches older than "
                           f"{settings.BEHAVIOUR_COLLECTOR_RETENTION_HOURS} hours are "
                           "forgotten)")
                continue
            seen_events.add(found.event_id)
            events_taken.append((found, query))
        _refuse(query_errors, event_errors)
        for found, query in events_taken:
            if found.row is not None:
                _qid, doc, position, clicked, dwell, _n = found.row
                sums.event(query, doc, position, bool(clicked), dwell)
        changed_keywords, changed_days = _store_sums(source, sums)
        CollectedQuery.objects.bulk_create(
            [CollectedQuery(source=source, query_id=q.query_id, keyword=q.keyword,
                            searched_at=q.searched_at, hit_ids=q.hit_ids,
                            first_click=q.first_click) for q in added.values()],
            batch_size=CHUNK)
        rows = {row.query_id: row for chunk in _chunks(list(added))
                for row in CollectedQuery.objects.filter(source=source, query_id__in=chunk)}
        changed = []
        for query in known.values():
            if query.row is not None:
                rows[query.query_id] = query.row
                if query.changed:
                    query.row.first_click = query.first_click
                    changed.append(query.row)
        CollectedQuery.objects.bulk_update(changed, ["first_click"], batch_size=CHUNK)
        CollectedEvent.objects.bulk_create(
            [CollectedEvent(
                source=source, event_id=found.event_id, received_at=now,
                query=rows.get(query.query_id) if query else None,
                doc_id=found.row[1] if found.row else "",
                position=found.row[2] if found.row else None,
                clicked=bool(found.row and found.row[3]),
                dwell_seconds=found.row[4] if found.row else None)
             for found, query in events_taken], batch_size=CHUNK)
        _widen(source, [q.searched_at for q in added.values()], len(added),
               len(events_taken))
        if last_days_follow(source=source, keywords=changed_keywords, days=changed_days):
            transaction.on_commit(partial(last_days_dispatch, source.pk))
    return BatchResult(queries_added=len(added), queries_repeated=queries_repeated,
                       events_added=len(events_taken),
                       events_repeated=len(parsed_events) - len(events_taken))


def _refuse(query_errors: BatchErrors, event_errors: BatchErrors) -> None:
    refused = {name: errors.messages() for name, errors in
               (("queries", query_errors), ("events", event_errors)) if errors.count}
    if refused:
        raise ValidationError(refused)


def _widen(source: BehaviourSource, moments: list[datetime], searches: int,
           events: int) -> None:
    if not searches and not events:
        return
    if moments:
        first, last = min(moments), max(moments)
        if source.window_start_at is None or first < source.window_start_at:
            source.window_start_at = first
        if source.window_end_at is None or last > source.window_end_at:
            source.window_end_at = last
    source.search_count += searches
    source.event_count += events
    source.save(update_fields=["window_start_at", "window_end_at", "search_count",
                               "event_count"])
