"""Reading a plain CSV of per-position counts into the sums a BehaviourSource keeps
(behaviour.importing reads UBI logs; both name a bad line the same way).

A header `keyword,doc_id,position,impressions,clicks[,dwell_seconds]`; `dwell_seconds` is
the mean dwell time of the row's clicks. Rows repeating a (keyword, doc_id, position) add
up, summed in a dict keyed by them, as large as what is stored.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable, Iterator

from behaviour.importing import (
    BadLine,
    LineErrors,
    Summary,
    decoded_line,
    normalized_keyword,
    ubi_identifier,
)

CSV_FIELDS = ("keyword", "doc_id", "position", "impressions", "clicks")


def read_csv(lines: Iterable[bytes | str]) -> tuple[dict[tuple[str, str, int], list],
                                                    Summary, LineErrors]:
    """{(keyword, doc_id, position): [impressions, clicks, dwell sum, dwell count]}."""
    errors = LineErrors("CSV")
    sums: dict[tuple[str, str, int], list] = {}
    summary = Summary()
    numbered = _text_lines(lines, "CSV", errors)
    header: list[str] | None = None
    for row in _csv_rows(numbered):
        number, cells = row
        if header is None:
            header = [cell.strip().lower() for cell in cells]
            if tuple(header[:5]) != CSV_FIELDS or header[5:] not in ([], ["dwell_seconds"]):
                errors.add(number, "header",
                           "expected keyword,doc_id,position,impressions,clicks"
                           "[,dwell_seconds]")
                return sums, summary, errors
            continue
        if not any(cell.strip() for cell in cells):
            continue
        try:
            key, counts = _csv_counts(cells, header)
        except BadLine as bad:
            errors.add(number, bad.field_name, bad.why)
            continue
        summary.event_count += 1
        found = sums.setdefault(key, [0, 0, 0.0, 0])
        for index, value in enumerate(counts):
            found[index] += value
    if header is None:
        errors.add(1, "header", "the file is empty")
    return sums, summary, errors


def _csv_rows(numbered: Iterator[tuple[int, str]]) -> Iterator[tuple[int, list[str]]]:
    # One physical line a row: a keyword or document id with a newline has no place here.
    for number, text in numbered:
        yield number, next(csv.reader([text.rstrip("\r\n")]), [])


def _count(value: str, field_name: str) -> int:
    try:
        number = int(value.strip())
    except ValueError:
        raise BadLine(field_name, f"{value.strip()[:40]!r} is not a whole number") from None
    if number < 0:
        raise BadLine(field_name, "cannot be negative")
    return number


def _csv_counts(cells: list[str], header: list[str]) -> tuple[tuple[str, str, int], list]:
    if len(cells) != len(header):
        raise BadLine("line", f"{len(cells)} fields where the header has {len(header)}")
    keyword = normalized_keyword(cells[0], "keyword")
    doc_id = ubi_identifier(cells[1], "doc_id")
    position = _count(cells[2], "position")
    if position < 1:
        raise BadLine("position", "positions count from 1")
    impressions, clicks = _count(cells[3], "impressions"), _count(cells[4], "clicks")
    if clicks > impressions:
        raise BadLine("clicks", "more clicks than impressions")
    dwell_sum, dwell_count = 0.0, 0
    if len(header) == 6 and cells[5].strip():
        try:
            dwell = float(cells[5])
        except ValueError:
            raise BadLine("dwell_seconds", f"{cells[5].strip()[:40]!r} is not a number") \
                from None
        if not math.isfinite(dwell) or dwell < 0:
            raise BadLine("dwell_seconds", "seconds, a number from 0, needed")
        dwell_sum, dwell_count = dwell * clicks, clicks
    return (keyword, doc_id, position), [impressions, clicks, dwell_sum, dwell_count]


def _text_lines(lines: Iterable[bytes | str], file: str, errors: LineErrors
                ) -> Iterator[tuple[int, str]]:
    for number, raw in enumerate(lines, start=1):
        if (text := decoded_line(raw, number, errors)) is not None:
            yield number, text
