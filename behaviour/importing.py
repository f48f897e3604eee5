"""Reading behaviour files into the sums a BehaviourSource keeps: UBI query and event logs
(NDJSON) here, a plain CSV of per-position counts in behaviour.importing_csv. No database
writes here: services.py stores what these return, after every line has been read and
found good.

Memory stays bounded whatever the log's size. A UBI log is staged line by line in a
throw-away SQLite file (one row per query, its hit ids as one JSON list, and one per event
read) and summed there with GROUP BY; Python holds one batch of lines at a time.

**UBI** (User Behavior Insights 1.x, o19s/ubi's schema, as OpenSearch's UBI plugin writes
its `ubi_queries` and `ubi_events` indices), one JSON object a line:
- a query: `query_id`, `user_query` (the keyword), `timestamp` (ISO 8601; without a zone
  it is read as UTC), `query_response_hit_ids` (the results shown, in order) and
  `client_id` (optional here, as in the schema).
- an event: `action_name`, `query_id`, `timestamp`, and for the actions read here
  `event_attributes.object.object_id` and `event_attributes.position.ordinal` (from 1).
  `click` and `click_through` are clicks, `impression` an impression; other actions
  (`add_to_cart`, `purchase`, ...) are counted and left out of the sums. A click's dwell
  time, where given, is `event_attributes.dwell_time` in seconds (UBI names no field for
  it; this is the one read).
A result is shown in a search at a position when the query's hit ids list it there, or an
impression or click event names it there; it is clicked once however many click events
name it (so clicks ≤ impressions, as click models need), its dwell the longest given.

A bad line is named (file, line number, field, why) and counted; the first
MAX_NAMED_ERRORS are named, all are counted, and a file with any stores nothing.
"""

from __future__ import annotations

import json
import math
import sqlite3
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import NamedTuple, TypeVar

import orjson

from evaluations.models.keywords import Keyword

MAX_NAMED_ERRORS = 20
TEXT_LIMIT = 500
CLICK_ACTIONS = frozenset({"click", "click_through"})
IMPRESSION_ACTIONS = frozenset({"impression"})
BATCH_LINES = 10_000
T = TypeVar("T")


@dataclass
class LineErrors:
    """Bad lines of one file: the first few named, all counted."""

    file: str
    named: list[str] = field(default_factory=list)
    count: int = 0

    def add(self, line: int, field_name: str, why: str) -> None:
        self.count += 1
        if len(self.named) < MAX_NAMED_ERRORS:
            self.named.append(f"{self.file} line {line}, {field_name}: {why}")

    def messages(self) -> list[str]:
        if not self.count:
            return []
        more = self.count - len(self.named)
        tail = [f"... and {more} more bad line{'s' if more != 1 else ''}"] if more else []
        return [*self.named, *tail,
                f"{self.count} bad line{'s' if self.count != 1 else ''} in the {self.file}; "
                "nothing was stored."]


class BadLine(Exception):
    def __init__(self, field_name: str, why: str):
        super().__init__(why)
        self.field_name, self.why = field_name, why


class CountRow(NamedTuple):
    """One stored sum; its fields are BehaviourCount's, in the order they are copied."""

    keyword: str
    doc_id: str
    position: int
    day: date | None
    impressions: int
    clicks: int
    dwell_seconds_sum: float
    dwell_count: int


class SearchesRow(NamedTuple):
    """One stored searches row; its fields are BehaviourSearches'."""

    keyword: str
    day: date | None
    search_count: int
    first_clicks: list[int]


@dataclass
class Summary:
    search_count: int = 0
    event_count: int = 0
    window_start_at: datetime | None = None
    window_end_at: datetime | None = None


def _read_lines(lines: Iterable[bytes | str], errors: LineErrors,
                read: Callable[[dict, int], T]) -> Iterator[tuple[int, T]]:
    """(line number, read(object, line number)) for each good line of an NDJSON file, in
    order; blank lines skipped, bad ones named in `errors`. orjson parses a line first; a
    line it refuses, or whose object `read` finds bad, is parsed again by the standard json,
    whose reading and messages stand (they differ only where orjson cannot give its object:
    an integer beyond 64 bits becomes a float; NaN, Infinity, lone surrogates; decision
    0031)."""
    for number, raw in enumerate(lines, start=1):
        try:
            found = orjson.loads(raw)
            if type(found) is dict:
                yield number, read(found, number)
                continue
        except (orjson.JSONDecodeError, BadLine):
            pass
        raw = decoded_line(raw, number, errors)
        if raw is None or not raw.strip():
            continue
        try:
            yield number, read(_json_object(raw), number)
        except BadLine as bad:
            errors.add(number, bad.field_name, bad.why)


def decoded_line(raw: bytes | str, number: int, errors: LineErrors) -> str | None:
    """The line as text; None, named in `errors`, when it is not UTF-8."""
    if not isinstance(raw, bytes):
        return raw
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        errors.add(number, "line", "not UTF-8")
        return None


def _text(value: str, field_name: str) -> str:
    # The standard json reads "\ud800" as a lone surrogate, which no database stores.
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise BadLine(field_name, "holds a lone surrogate, which is not text") from None
    return value


def normalized_keyword(value: object, field_name: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise BadLine(field_name, "a non-empty string is needed")
    _text(value, field_name)
    normalized = Keyword.normalize(value)
    if len(normalized) > TEXT_LIMIT:
        raise BadLine(field_name, f"longer than {TEXT_LIMIT} characters")
    return normalized


def ubi_identifier(value: object, field_name: str) -> str:
    if type(value) is str:  # the common case, first
        text = value.strip()
        if not text or len(text) > TEXT_LIMIT:
            raise BadLine(field_name, f"empty or longer than {TEXT_LIMIT} characters")
        return _text(text, field_name)
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise BadLine(field_name, "a string or an integer is needed")
    text = str(value).strip()
    if not text or len(text) > TEXT_LIMIT:
        raise BadLine(field_name, f"empty or longer than {TEXT_LIMIT} characters")
    return text


def _timestamp(value: object) -> datetime:
    if not isinstance(value, str):
        raise BadLine("timestamp", "an ISO 8601 date-time string is needed")
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise BadLine("timestamp", f"{value[:40]!r} is not an ISO 8601 date-time") from None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _position(value: object, field_name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise BadLine(field_name, "a whole number from 1 is needed")
    return value


def _json_object(text: str) -> dict:
    try:
        found = json.loads(text)
    except json.JSONDecodeError as error:
        raise BadLine("line", f"not JSON ({error.msg})") from None
    if not isinstance(found, dict):
        raise BadLine("line", "not a JSON object")
    return found


def ubi_query(found: dict) -> tuple[str, str, datetime, list[str]]:
    """A query's (query_id, normalised keyword, timestamp, hit ids shown); BadLine names
    what is wrong."""
    query_id = ubi_identifier(found.get("query_id"), "query_id")
    keyword = normalized_keyword(found.get("user_query"), "user_query")
    moment = _timestamp(found.get("timestamp"))
    hits = found.get("query_response_hit_ids") or []
    if not isinstance(hits, list):
        raise BadLine("query_response_hit_ids", "a list of ids is needed")
    return query_id, keyword, moment, [ubi_identifier(hit, "query_response_hit_ids")
                                       for hit in hits]


def ubi_event_row(found: dict, number: int | None) -> tuple | None:
    """An event's staged row (query_id, object_id, position, clicked, dwell, number), or
    None for an action left out of the sums; BadLine names what is wrong. Shared with the
    collector (behaviour.collector), which reads the same events one batch at a time."""
    action = found.get("action_name")
    if not isinstance(action, str) or not action.strip():
        raise BadLine("action_name", "a non-empty string is needed")
    _timestamp(found.get("timestamp"))
    if action not in CLICK_ACTIONS and action not in IMPRESSION_ACTIONS:
        return None
    query_id = ubi_identifier(found.get("query_id"), "query_id")
    attributes = found.get("event_attributes")
    if not isinstance(attributes, dict):
        raise BadLine("event_attributes", "an object is needed")
    thing = attributes.get("object")
    if not isinstance(thing, dict):
        raise BadLine("event_attributes.object", "an object is needed")
    object_id = ubi_identifier(thing.get("object_id"), "event_attributes.object.object_id")
    where = attributes.get("position")
    if not isinstance(where, dict):
        raise BadLine("event_attributes.position", "an object with an ordinal is needed")
    position = where.get("ordinal")
    if type(position) is not int or position < 1:  # the common case checked first
        position = _position(position, "event_attributes.position.ordinal")
    dwell = attributes.get("dwell_time")
    if dwell is not None and not (type(dwell) is float and 0 <= dwell < math.inf) and (
            isinstance(dwell, bool) or not isinstance(dwell, int | float)
            or not math.isfinite(dwell) or dwell < 0):
        raise BadLine("event_attributes.dwell_time", "seconds, a number from 0, needed")
    if action in CLICK_ACTIONS:
        return (query_id, object_id, position, 1,
                None if dwell is None else float(dwell), number)
    return (query_id, object_id, position, 0, None, number)


class UbiLog:
    """A UBI log staged in a throw-away SQLite file; use as a context manager."""

    def __init__(self) -> None:
        self._directory = tempfile.TemporaryDirectory(prefix="behaviour-")
        self.db = sqlite3.connect(Path(self._directory.name) / "stage.sqlite3")
        self.db.executescript("""
            PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA cache_size = -32000;
            PRAGMA temp_store = FILE;
            CREATE TABLE query (query_id TEXT PRIMARY KEY, keyword TEXT NOT NULL,
                                day TEXT NOT NULL, line INTEGER NOT NULL) WITHOUT ROWID;
            CREATE TABLE shown (query_id TEXT NOT NULL, hit_ids TEXT NOT NULL);
            CREATE TABLE seen (query_id TEXT NOT NULL, object_id TEXT NOT NULL,
                               position INTEGER NOT NULL, clicked INTEGER NOT NULL,
                               dwell REAL, line INTEGER);
        """)
        self.summary = Summary()

    def __enter__(self) -> UbiLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.db.close()
        self._directory.cleanup()

    def _widen(self, moment: datetime) -> None:
        summary = self.summary
        if summary.window_start_at is None or moment < summary.window_start_at:
            summary.window_start_at = moment
        if summary.window_end_at is None or moment > summary.window_end_at:
            summary.window_end_at = moment

    def read_queries(self, lines: Iterable[bytes | str]) -> LineErrors:
        errors = LineErrors("queries")
        shown: list[tuple] = []
        for number, (query_id, keyword, moment, hit_ids) in _read_lines(
                lines, errors, lambda found, _: ubi_query(found)):
            try:
                self.db.execute("INSERT INTO query VALUES (?, ?, ?, ?)",
                                (query_id, keyword, moment.date().isoformat(), number))
            except sqlite3.IntegrityError:
                first = self.db.execute("SELECT line FROM query WHERE query_id = ?",
                                        (query_id,)).fetchone()[0]
                errors.add(number, "query_id", f"{query_id!r} is on line {first} already")
                continue
            self.summary.search_count += 1
            self._widen(moment)
            if hit_ids:
                # One row a query, not one a hit: staging a row costs more than SQLite's
                # json_each takes to list the hits again when they are summed.
                shown.append((query_id, orjson.dumps(hit_ids).decode()))
            if len(shown) >= BATCH_LINES:
                self._show(shown)
        self._show(shown)
        return errors

    def _show(self, rows: list[tuple]) -> None:
        self.db.executemany("INSERT INTO shown VALUES (?, ?)", rows)
        rows.clear()

    def _stage(self, rows: list[tuple]) -> None:
        self.db.executemany("INSERT INTO seen VALUES (?, ?, ?, ?, ?, ?)", rows)
        rows.clear()

    def read_events(self, lines: Iterable[bytes | str]) -> LineErrors:
        errors = LineErrors("events")
        staged: list[tuple] = []
        for _, row in _read_lines(lines, errors, ubi_event_row):
            self.summary.event_count += 1
            if row is not None:
                staged.append(row)
            if len(staged) >= BATCH_LINES:
                self._stage(staged)
        self._stage(staged)
        # Events of searches the queries file lacks: named by their own lines.
        orphans = self.db.execute(
            "SELECT line, query_id FROM seen WHERE line IS NOT NULL AND query_id NOT IN "
            "(SELECT query_id FROM query) ORDER BY line")
        for line, query_id in orphans:
            errors.add(line, "query_id", f"{query_id!r} is not among the queries")
        return errors

    def count_rows(self) -> Iterator[CountRow]:
        """The sums per (keyword, document, position, day). They are made here, before
        this returns (SQLite steps a statement to its first row, which a GROUP BY reaches
        after reading all it groups); the iterator only hands them out."""
        rows = self.db.execute("""
            WITH result AS (
                SELECT query_id, object_id, position, max(clicked) AS clicked,
                       max(dwell) AS dwell
                FROM (SELECT query_id, object_id, position, clicked, dwell FROM seen
                      UNION ALL
                      SELECT s.query_id, h.value, h.key + 1, 0, NULL
                      FROM shown s, json_each(s.hit_ids) h)
                GROUP BY query_id, object_id, position)
            SELECT q.keyword, r.object_id, r.position, q.day, count(*), sum(r.clicked),
                   total(CASE WHEN r.clicked = 1 THEN r.dwell END),
                   count(CASE WHEN r.clicked = 1 THEN r.dwell END)
            FROM result r JOIN query q ON q.query_id = r.query_id
            GROUP BY q.keyword, r.object_id, r.position, q.day""")
        return (CountRow(keyword, doc_id, position, date.fromisoformat(day), shown, clicks,
                         dwell_sum, dwell_count)
                for keyword, doc_id, position, day, shown, clicks, dwell_sum, dwell_count
                in rows)

    def searches_rows(self) -> Iterator[SearchesRow]:
        firsts: dict[tuple[str, str], list[int]] = {}
        for keyword, day, position, count in self.db.execute("""
                SELECT q.keyword, q.day, f.position, count(*)
                FROM (SELECT query_id, min(position) AS position FROM seen WHERE clicked = 1
                      GROUP BY query_id) f JOIN query q ON q.query_id = f.query_id
                GROUP BY q.keyword, q.day, f.position"""):
            counts = firsts.setdefault((keyword, day), [])
            counts.extend([0] * (position - len(counts)))
            counts[position - 1] = count
        for keyword, day, count in self.db.execute(
                "SELECT keyword, day, count(*) FROM query GROUP BY keyword, day"):
            yield SearchesRow(keyword, date.fromisoformat(day), count,
                              firsts.get((keyword, day), []))
