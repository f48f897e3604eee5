"""Writes of behaviour data: a source imported whole or not at all.

Every line is read and checked first (behaviour.importing); a file with a bad line raises
ValidationError naming the lines and how many, before any row is written. Only then, in
one transaction, the source and its sums are stored, in batches drawn from the staged
sums, so neither Python nor one statement holds them all, and the rollup the pages read
is made from them (behaviour.rollup).

A UBI import logs each phase as it ends (logger "behaviour.services", INFO): an import of
millions of events takes minutes, and these lines say where it is.
"""

import logging
from collections.abc import Iterable, Iterator
from datetime import datetime
from itertools import islice

from django.core.exceptions import ValidationError
from django.db import transaction

from audit.models import Action
from audit.services import audit_object, fields_of
from behaviour.importing import CountRow, SearchesRow, UbiLog
from behaviour.importing_csv import read_csv
from behaviour.models import BehaviourCount, BehaviourSearches, BehaviourSource
from behaviour.rollup import keyword_days_rebuild
from searchtweak.bulk_insert import bulk_insert_rows
from searchtweak.models import Team, User

BATCH_SIZE = 5000
logger = logging.getLogger(__name__)
Lines = Iterable[bytes | str]


def _clean_name(name: str) -> str:
    name = " ".join(name.split())
    if not name:
        raise ValidationError({"name": "A behaviour source needs a name."})
    if len(name) > BehaviourSource._meta.get_field("name").max_length:
        raise ValidationError({"name": "At most 200 characters."})
    return name


def _batches(rows: Iterator) -> Iterator[list]:
    while batch := list(islice(rows, BATCH_SIZE)):
        yield batch


def _store_counts(source: BehaviourSource, rows: Iterable[CountRow]) -> int:
    # COPY on PostgreSQL (searchtweak.bulk_insert): a UBI log of ten million events is
    # millions of count rows, which bulk_create spent minutes building and sending.
    template = BehaviourCount(source=source)
    return sum(bulk_insert_rows(template, CountRow._fields, batch)
               for batch in _batches(iter(rows)))


def _store_searches(source: BehaviourSource, rows: Iterable[SearchesRow]) -> int:
    template = BehaviourSearches(source=source)
    return sum(bulk_insert_rows(template, SearchesRow._fields, batch)
               for batch in _batches(iter(rows)))


def behaviour_source_import_ubi(*, team: Team, user: User | None, name: str,
                                queries: Lines, events: Lines) -> BehaviourSource:
    """A UBI log (queries and events, NDJSON) as a new source of the team."""
    name = _clean_name(name)
    with UbiLog() as log:
        query_errors = log.read_queries(queries)
        if query_errors.count:
            # The events are not read: which of them are orphans depends on the queries.
            raise ValidationError({"queries": query_errors.messages()})
        logger.info("UBI import %r: read %d searches", name, log.summary.search_count)
        event_errors = log.read_events(events)
        if event_errors.count:
            raise ValidationError({"events": event_errors.messages()})
        summary = log.summary
        logger.info("UBI import %r: read %d event lines", name, summary.event_count)
        with transaction.atomic():
            source = BehaviourSource.objects.create(
                team=team, name=name, kind=BehaviourSource.Kind.UBI, created_by=user,
                window_start_at=summary.window_start_at, window_end_at=summary.window_end_at,
                search_count=summary.search_count, event_count=summary.event_count)
            counts = log.count_rows()
            logger.info("UBI import %r: summed", name)
            stored = _store_counts(source, counts)
            stored_searches = _store_searches(source, log.searches_rows())
            logger.info("UBI import %r: stored %d count rows and %d searches rows", name,
                        stored, stored_searches)
            keyword_days_rebuild(source_id=source.pk)
            logger.info("UBI import %r: rollup made", name)
            _audit_import(source, user)
    return source


def _audit_import(source: BehaviourSource, user: User | None) -> None:
    audit_object(action=Action.BEHAVIOUR_SOURCE_IMPORTED, instance=source,
                 object_type="behaviour_source", actor=user,
                 after=fields_of(source, only=("name", "kind", "window_start_at",
                                               "window_end_at", "search_count",
                                               "event_count")))


def behaviour_source_import_csv(*, team: Team, user: User | None, name: str, lines: Lines,
                                window_start_at: datetime | None = None,
                                window_end_at: datetime | None = None) -> BehaviourSource:
    """A CSV of per-position counts as a new source; its window is what the caller says
    (the file has no timestamps)."""
    name = _clean_name(name)
    if window_start_at and window_end_at and window_start_at > window_end_at:
        raise ValidationError({"window_end_at": "The window ends before it starts."})
    sums, summary, errors = read_csv(lines)
    if errors.count:
        raise ValidationError({"file": errors.messages()})
    rows = (CountRow(keyword, doc_id, position, None, impressions, clicks, dwell_sum,
                     dwell_count)
            for (keyword, doc_id, position), (impressions, clicks, dwell_sum, dwell_count)
            in sums.items())
    with transaction.atomic():
        source = BehaviourSource.objects.create(
            team=team, name=name, kind=BehaviourSource.Kind.CSV, created_by=user,
            window_start_at=window_start_at, window_end_at=window_end_at,
            event_count=summary.event_count)
        _store_counts(source, rows)
        keyword_days_rebuild(source_id=source.pk)
        _audit_import(source, user)
    return source


@transaction.atomic
def behaviour_source_create_collector(*, team: Team, user: User | None, name: str
                                      ) -> BehaviourSource:
    """An empty collector source: it grows as a search front end posts batches to it
    (behaviour.collector)."""
    source = BehaviourSource.objects.create(team=team, name=_clean_name(name),
                                            kind=BehaviourSource.Kind.COLLECTOR,
                                            created_by=user)
    audit_object(action=Action.BEHAVIOUR_SOURCE_CREATED, instance=source,
                 object_type="behaviour_source", actor=user,
                 after=fields_of(source, only=("name", "kind")))
    return source


def behaviour_source_store_sums(*, team: Team, user: User | None, name: str, kind: str,
                                window_start_at: datetime | None,
                                window_end_at: datetime | None, search_count: int,
                                event_count: int, counts: Iterable[CountRow],
                                searches: Iterable[SearchesRow]) -> BehaviourSource:
    """A source from sums already made (the demo's simulated log): stored as an import's
    are, in one transaction."""
    name = _clean_name(name)
    with transaction.atomic():
        source = BehaviourSource.objects.create(
            team=team, name=name, kind=kind, created_by=user, window_start_at=window_start_at,
            window_end_at=window_end_at, search_count=search_count, event_count=event_count)
        _store_counts(source, counts)
        _store_searches(source, searches)
        keyword_days_rebuild(source_id=source.pk)
    return source
