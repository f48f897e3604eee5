"""Quepid's basic CSV ("Export ratings: basic"): a header `query,docid,rating` (older
Quepid wrote `query,doc_id,rating`), then one rating a row. A row `query,,` is a query
with no rating yet: it is skipped and counted, and the preview says so. A rating must be
a whole grade of the chosen scale. The parse keeps those queries, in order with their
line numbers (`ParseResult.unrated`), so that a file read and written again
(`write_quepid_csv` with `(query, "", None)` rows) gives the same bytes.
"""

from collections.abc import Iterable, Iterator

from judgments.imports import ParsedJudgment, ParseResult, csv_cell, csv_rows, grade_from, text_ok
from judgments.scales import GradeScale
from searchtweak.csv_cells import csv_lines

HEADERS = (["query", "docid", "rating"], ["query", "doc_id", "rating"])
NAME = "Quepid basic CSV"


def parse_quepid_csv(content: bytes, *, scale: GradeScale) -> ParseResult:
    result = ParseResult()
    header_seen = False
    for number, row in csv_rows(content, result):
        if not any(cell.strip() for cell in row):
            continue
        if not header_seen:
            header_seen = True
            if [cell.strip().lower() for cell in row] not in HEADERS:
                result.error(f"line {number}: expected the header query,docid,rating, found "
                             f"{','.join(cell.strip() for cell in row)!r}")
                return result
            continue
        if len(row) != 3:
            result.error(f"line {number}: expected 3 columns (query,docid,rating), found "
                         f"{len(row)}")
            continue
        query, doc_id, raw_rating = csv_cell(row[0]), csv_cell(row[1]), row[2].strip()
        where = f"line {number}"
        if not doc_id and not raw_rating:
            # Quepid lists a query that has no rating yet as `query,,`.
            result.skipped_count += 1
            result.unrated.append((number, query))
            continue
        grade = grade_from(raw_rating, scale, where, result)
        if (not text_ok(query, "query", where, result) or not text_ok(doc_id, "docid", where,
                                                                      result) or grade is None):
            continue
        # Several rows of a query and document are several grades (the duplicates policy).
        result.add(ParsedJudgment(number, query, doc_id, grade), key=None, what="")
        if result.full:
            break
    if result.skipped_count:
        many = result.skipped_count != 1
        result.skipped_note = (f"{result.skipped_count} quer{'ies have' if many else 'y has'} "
                               "no rating (rows `query,,`): skipped.")
    return result


def write_quepid_csv(rows: Iterable[tuple[str, str, int | None]]) -> Iterator[str]:
    """The basic CSV of (query, docid, grade) rows, in their order; a row with no grade
    (`(query, "", None)`, a query with no rated result) is written `query,,` as Quepid
    writes it."""
    yield from csv_lines([HEADERS[0]])
    yield from csv_lines([query, doc_id, "" if grade is None else grade]
                         for query, doc_id, grade in rows)


def rows_in_file_order(result: ParseResult) -> list[tuple[str, str, int | None]]:
    """The parse's rows as `write_quepid_csv` takes them: its judgments and its unrated
    queries in the order of their lines."""
    rows = [(item.line, item.text, item.doc_id, item.grade) for item in result.judgments]
    rows += [(line, query, "", None) for line, query in result.unrated]
    return [row[1:] for row in sorted(rows, key=lambda row: row[0])]
