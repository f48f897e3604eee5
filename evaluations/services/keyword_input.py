"""Keywords as people give them: typed lines and uploaded files (TXT: a keyword a line;
CSV: `keyword,weight,tags`), read into entries (services.keywords.KeywordEntry), and the
entries written back as the lines a person edits.

Typed lines are CSV as an uploaded CSV file is, a row per line:
- `keyword`, `keyword,weight` or `keyword,weight,tags`; the weight blank is 1, tags are
  separated by "|"; a field holding a comma or a double quote is quoted as CSV quotes it
  (`"red, white shoes",120`; inside quotes a double quote is written twice), so a line
  without either is exactly the keyword it was before weights and tags;
- a first row of column names (`keyword,weight,tags`; `query` for keyword, `frequency` for
  weight) is a header: its columns are then read by name, and other columns are left
  out (an uploaded CSV's header may name the keyword column alone, as it always could);
  without a header a row has at most three fields.
Every problem names its line (a quoted field spanning lines is named by its first) and,
for a weight or tags, the field; one problem refuses the whole list: typed ones on
`keywords`, a file's on `keywords_file`.
"""

import csv
import re
from collections.abc import Iterable, Iterator

from django.conf import settings
from django.core.exceptions import ValidationError

from evaluations.models import Keyword
from evaluations.services.keywords import (
    MAX_KEYWORD_LENGTH,
    TAG_SEPARATOR,
    FieldProblem,
    KeywordEntry,
    errors_capped,
    keyword_text_clean,
    keyword_text_problem,
    tags_from_cell,
    weight_from_cell,
)

# The line ends a browser's textarea and editors number (str.splitlines knows more: \x1c,
# \x85, \u2028, which then could not be named by their line).
_LINE_END = re.compile(r"\r\n|\r|\n")


def keyword_lines(text: str) -> list[str]:
    """The lines of a keywords textarea, split where a person sees them break; like
    str.splitlines, a final line end starts no further line."""
    lines = _LINE_END.split(text)
    if lines[-1] == "":
        lines.pop()
    return lines


def keywords_from_text(text: str) -> list[KeywordEntry]:
    """The entries of a keywords textarea (or the API's keywords_text), their text not yet
    cleaned; every problem named by its line in one ValidationError on `keywords`."""
    errors: list[str] = []
    entries: list[KeywordEntry] = []
    for number, entry in _csv_entries(iter(keyword_lines(text)), typed=True, errors=errors):
        problem = keyword_text_problem(entry.text)
        if problem:
            errors.append(f"line {number}: {problem}")
        entries.append(entry)
    if errors:
        raise ValidationError({"keywords": errors_capped(errors)})
    return entries


def keywords_as_text(entries: Iterable[KeywordEntry | str]) -> str:
    """The lines keywords_from_text reads back as these entries: the keyword alone when its
    weight is 1 and it has no tags, else `keyword,weight[,tags]`, quoted where CSV needs."""
    lines = []
    for entry in entries:
        if isinstance(entry, str):
            entry = KeywordEntry(entry)
        fields = [entry.text]
        if entry.weight != 1 or entry.tags:
            fields.append(str(entry.weight))
        if entry.tags:
            fields.append(TAG_SEPARATOR.join(entry.tags))
        lines.append(_csv_line(fields))
    return "\n".join(lines)


class _Line(list):
    """csv.writer's target: keeps the one line written."""

    def write(self, text: str) -> None:
        self.append(text)


def _csv_line(fields: list[str]) -> str:
    line = _Line()
    csv.writer(line, lineterminator="").writerow(fields)
    return "".join(line)


def keyword_upload_size_problem(*, filename: str, size: int) -> str | None:
    """Why a keyword file of `size` bytes is refused before it is read, or None: past
    KEYWORD_UPLOAD_MAX_BYTES it cannot be a valid list (MAX_KEYWORDS keywords of 500
    characters and their line ends)."""
    limit = settings.KEYWORD_UPLOAD_MAX_BYTES
    if size <= limit:
        return None
    return (f"{filename} is {_megabytes(size)}; a keyword file may be at most "
            f"{_megabytes(limit)}. Nothing was read from it; what you typed is kept.")


def _megabytes(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MB"


def keywords_from_upload(
    *, filename: str, content: bytes | Iterable[bytes], max_keywords: int | None = None
) -> list[KeywordEntry]:
    """The entries of a TXT file (a keyword a line) or a CSV file (`keyword,weight,tags`
    rows, read by _csv_entries), their text not yet cleaned (keywords_clean does).

    `content` is the file's bytes or, for an upload, its chunks (`UploadedFile.chunks()`):
    the file is read a chunk at a time, so only the keywords themselves are held, never a
    copy of the file. Each line is decoded as UTF-8 on its own (like judgments' imports), so
    a file mixing encodings names every bad line; every error names its line, and one error
    rejects the whole file. Reading stops at the first line that would be keyword number
    ``max_keywords + 1`` (default settings.MAX_KEYWORDS; duplicates and blanks not
    counted): a file far over the limit is refused after the limit's worth of lines, not
    after parsing all of it.
    """
    if max_keywords is None:
        max_keywords = settings.MAX_KEYWORDS
    chunks = [content] if isinstance(content, bytes | bytearray) else content
    # Reading order: decoding names a bad line as the rows reach it. A file with lines that
    # are not UTF-8 is answered with those alone (its other errors may be their echo).
    errors: list[str] = []
    decode_errors: list[str] = []
    lines = _decoded_lines(_byte_lines(chunks), errors, decode_errors)
    if filename.lower().endswith(".csv"):
        rows = _csv_entries(lines, typed=False, errors=errors)
    else:
        rows = ((number, KeywordEntry(text)) for number, text in enumerate(lines, start=1))
    keywords: list[KeywordEntry] = []
    distinct: set[str] = set()
    for number, entry in rows:
        text = entry.text
        problem = keyword_text_problem(text)
        cleaned = "" if problem else keyword_text_clean(text)
        if problem:
            errors.append(f"line {number}: {problem}")
        elif len(cleaned) > MAX_KEYWORD_LENGTH:
            errors.append(f"line {number}: keyword longer than {MAX_KEYWORD_LENGTH} characters "
                          f"({len(cleaned):,})")
        if cleaned:
            distinct.add(Keyword.normalize(cleaned))
            if len(distinct) > max_keywords:
                _raise_upload_errors([*errors, (
                    f"line {number}: more than {max_keywords:,} keywords (the most an "
                    "evaluation takes); the file was not read past this line."
                )])
        keywords.append(entry)
    if decode_errors:
        _raise_upload_errors(decode_errors)
    if errors:
        _raise_upload_errors(errors)
    return keywords


def _byte_lines(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """The lines of a file given in chunks, without their line ends. Lines break at \n,
    \r\n and \r only, the line ends editors number (bytes.splitlines knows just these; a
    \r\n split between two chunks is one line end); a final line end starts no further
    line. A leading UTF-8 byte order mark is dropped."""
    parts: list[bytes] = []  # the current line's pieces: a line may span chunks
    after_cr = False  # the last chunk ended with \r: a \n opening the next one is its pair
    number = 0
    for chunk in chunks:
        if after_cr and chunk.startswith(b"\n"):
            chunk = chunk[1:]
        after_cr = False
        if not chunk:
            continue
        pieces = chunk.splitlines(keepends=True)
        for piece in pieces:
            parts.append(piece)
            if piece.endswith((b"\n", b"\r")):
                # Joined once per line, not per chunk: a line with no end in sight costs
                # its length, not its length times its chunks.
                number += 1
                yield _line_bytes(parts, first=number == 1)
                parts = []
        after_cr = pieces[-1].endswith(b"\r")
    if parts:
        yield _line_bytes(parts, first=number == 0)


def _line_bytes(parts: list[bytes], *, first: bool) -> bytes:
    line = b"".join(parts).rstrip(b"\r\n")
    return line.removeprefix(b"\xef\xbb\xbf") if first else line


def _decoded_lines(lines: Iterable[bytes], errors: list[str], decode_errors: list[str]
                   ) -> Iterator[str]:
    """The file's lines decoded one by one, lazily; an undecodable line is named in ``errors``
    and read as empty so that later line numbers stay right."""
    for number, raw in enumerate(lines, start=1):
        try:
            yield raw.decode("utf-8")
        except UnicodeDecodeError as error:
            message = (f"line {number}: not UTF-8 text (byte 0x{raw[error.start]:02x} "
                       f"at column {error.start + 1})")
            errors.append(message)
            decode_errors.append(message)
            yield ""


def _raise_upload_errors(errors: list[str]) -> None:
    raise ValidationError({"keywords_file": errors_capped(errors)})


_HEADERS = {"keyword": "keyword", "keywords": "keyword", "query": "keyword",
            "queries": "keyword", "weight": "weight", "frequency": "weight", "tags": "tags"}
_FIELDS = ("keyword", "weight", "tags")


def _csv_rows(lines: Iterator[str], errors: list[str]) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) per CSV row; a quoted field may span lines, so a row is
    numbered by the line it starts on. A row CSV cannot read (a quote not closed, text
    after a closing quote, a field beyond csv's size limit) ends the reading with its
    error in `errors`."""
    # csv keeps a quoted field's line break only if the line still carries it.
    reader = csv.reader((line + "\n" for line in lines), strict=True)
    start = 1
    try:
        for row in reader:
            yield start, row
            start = reader.line_num + 1
    except csv.Error as error:
        errors.append(f"line {start}: {_csv_problem(str(error))}")


def _csv_problem(message: str) -> str:
    if message.startswith("',' expected after"):
        return ("text after a closing double quote (inside a quoted field, write a double "
                'quote as two: """red shoes"" sale")')
    if message.startswith("unexpected end of data"):
        return "a double quote opened here is never closed"
    return message


def _header(row: list[str], *, typed: bool) -> list[int | None] | None:
    """The columns of keyword, weight and tags when `row` is a header, else None. A header
    names the keyword column and holds no number; a typed one has two fields at least, so
    a keyword typed alone ("query") stays a keyword."""
    names = [cell.strip().lower() for cell in row]
    columns = {_HEADERS[name]: index for index, name in reversed(list(enumerate(names)))
               if name in _HEADERS}
    if "keyword" not in columns or (typed and len(names) < 2) or any(map(_is_number, names)):
        return None
    return [columns.get(name) for name in _FIELDS]


def _is_number(text: str) -> bool:
    try:
        weight_from_cell(text)
    except FieldProblem:
        return False
    return bool(text)


def _csv_entries(lines: Iterator[str], *, typed: bool, errors: list[str]
                 ) -> Iterator[tuple[int, KeywordEntry]]:
    """(line number, entry) per row; a weight or tags that break the rule, or too many
    fields, are named in `errors` (the row's keyword still comes, to be checked too)."""
    columns: list[int | None] | None = None
    for number, row in _csv_rows(lines, errors):
        if number == 1:
            columns = _header(row, typed=typed)
            if columns is not None:
                continue
        if columns is not None:
            cells = [row[index] if index is not None and index < len(row) else ""
                     for index in columns]
        elif len(row) > len(_FIELDS):
            errors.append(f"line {number}: {len(row)} fields; a line is keyword,weight,tags "
                          "(quote a keyword or tag that holds a comma)")
            yield number, KeywordEntry(row[0])
            continue
        else:
            cells = row + [""] * (len(_FIELDS) - len(row))
        text, weight_cell, tags_cell = cells
        try:
            yield number, KeywordEntry(text, weight_from_cell(weight_cell),
                                       tags_from_cell(tags_cell))
        except FieldProblem as problem:
            errors.append(problem.at(number))
            yield number, KeywordEntry(text)
