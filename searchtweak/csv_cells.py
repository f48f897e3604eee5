"""CSV files a person opens in a spreadsheet: every CSV export writes through `csv_text`.

A cell starting with =, +, -, @, a tab or a carriage return is read as a formula by
Excel, LibreOffice and Google Sheets (`=HYPERLINK(...)`, `+cmd|...`, `@SUM(1)`): a keyword,
document id or judge's reason typed by anyone in a team would run on the reader's machine.
As OWASP recommends, such a cell is written with a leading apostrophe, which spreadsheets
show as text and do not display; numbers ("-0.5") are left as numbers. Only CSV files do
this: pages, JSON and TREC exports keep the text as typed, and the CSV import
(`csv_cell_read`) takes the apostrophe off again, so an export imports back unchanged.
"""

import csv
import io
import re
from collections.abc import Iterable, Iterator
from typing import Any

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def csv_cell(value: Any) -> Any:
    """`value` as a CSV cell that no spreadsheet runs as a formula. Text already starting
    with apostrophes before a formula character gets one more, so that `csv_cell_read`
    gives back exactly what was typed."""
    if not isinstance(value, str) or _NUMBER.fullmatch(value):
        return value
    if value.lstrip("'").startswith(FORMULA_STARTS):
        return "'" + value
    return value


def csv_cell_read(value: str) -> str:
    """A cell of an imported CSV file as typed before `csv_cell` protected it."""
    if value.startswith("'") and csv_cell(value[1:]) == value:
        return value[1:]
    return value


def csv_text(rows: Iterable[Iterable[Any]]) -> str:
    """The rows as CSV text, one line each, every cell through `csv_cell`."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerows([csv_cell(cell) for cell in row] for row in rows)
    return out.getvalue()


# About what one write to a client carries: streamed exports join their lines up to this.
STREAM_PIECE_CHARS = 64 * 1024


def csv_lines(rows: Iterable[Iterable[Any]]) -> Iterator[str]:
    """`csv_text` of the rows, given in pieces of about STREAM_PIECE_CHARS: a streamed
    export holds one piece, not the file. The pieces join to exactly `csv_text(rows)`."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for row in rows:
        writer.writerow([csv_cell(cell) for cell in row])
        if out.tell() >= STREAM_PIECE_CHARS:
            yield out.getvalue()
            out.seek(0)
            out.truncate()
    if out.tell():
        yield out.getvalue()


def text_pieces(lines: Iterable[str]) -> Iterator[str]:
    """The lines joined into pieces of about STREAM_PIECE_CHARS (one write each)."""
    piece: list[str] = []
    size = 0
    for line in lines:
        piece.append(line)
        size += len(line)
        if size >= STREAM_PIECE_CHARS:
            yield "".join(piece)
            piece, size = [], 0
    if piece:
        yield "".join(piece)
