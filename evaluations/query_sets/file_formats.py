"""A query-set file recognised, said with the reason, and read into keywords.

The kinds (KINDS; "auto" recognises one of them from the file's first content):
- `text`: one keyword a line (evaluations.services.keyword_input, the one reader);
- `csv`: `keyword[,weight][,tags]` rows, a header naming the columns (the same reader:
  docs/decisions/0008 for weights and tags);
- `quepid_csv`: Quepid's basic export (`query,docid,rating`, a query with no rating as
  `query,,`): its queries, each once, in the order of their first row; ratings are left
  out (they are judgments: the pool import reads this file as such);
- `workbench`: an OpenSearch Search Relevance Workbench query set, as NDJSON lines
  `{"queryText": "laptop", "referenceAnswer": "…"}` or as the create body's object with
  `querySetQueries`; fields other than queryText are left out.

A file that could be two of them is refused with the reason rather than guessed at: lines
holding commas with no header row, in a file not named .csv or .txt, may be CSV rows or
keywords with commas; a first line that is only `keyword` or `query` may be a header or a
keyword. Every problem names its line and, where the line has fields, the field; one
problem refuses the whole file (ValidationError on `keywords_file`, its first message
saying what the file was read as). Reading stops at the keyword past `max_keywords`.
"""

import csv
import json
from dataclasses import dataclass, field

from django.conf import settings
from django.core.exceptions import ValidationError

from evaluations.models import Keyword
from evaluations.services.keyword_input import keyword_lines, keywords_from_upload
from evaluations.services.keywords import (
    MAX_KEYWORD_LENGTH,
    KeywordEntry,
    errors_capped,
    keyword_text_clean,
    keyword_text_problem,
)
from searchtweak.csv_cells import csv_cell_read

KINDS = {
    "auto": "Recognise the format (recommended)",
    "text": "Plain text: one keyword a line",
    "csv": "CSV: keyword[,weight][,tags] with a header row",
    "quepid_csv": "Quepid basic CSV (query,docid,rating): its queries",
    "workbench": "OpenSearch Search Relevance Workbench query set (NDJSON queryText lines)",
}
NAMES = {"text": "Plain text", "csv": "SearchTweak CSV", "quepid_csv": "Quepid basic CSV",
         "workbench": "OpenSearch Workbench query set"}
QUEPID_HEADERS = (["query", "docid", "rating"], ["query", "doc_id", "rating"])
_KEYWORD_COLUMNS = {"keyword", "keywords", "query", "queries"}
_OTHER_COLUMNS = {"weight", "frequency", "tags"}
_FIELD = "keywords_file"


@dataclass(frozen=True)
class QuerySetFile:
    """What a file was read as, why, and its keywords (not yet cleaned: the services'
    keywords_clean does, as for typed ones)."""

    kind: str
    name: str
    reason: str
    entries: list[KeywordEntry] = field(default_factory=list)
    note: str = ""

    @property
    def keyword_count(self) -> int:
        return len(self.entries)

    def summary(self) -> str:
        count = len(self.entries)
        text = (f"Read as {self.name} ({self.reason}): {count} "
                f"keyword{'' if count == 1 else 's'}.")
        return f"{text} {self.note}" if self.note else text


def _refuse(messages: list[str], *, read_as: str = "") -> None:
    raise ValidationError({_FIELD: errors_capped([read_as, *messages] if read_as else messages)})


def _text_lines(content: bytes) -> list[str]:
    """The file's lines, each decoded on its own; a line that is not UTF-8 refuses the file
    naming it."""
    raw = content.removeprefix(b"\xef\xbb\xbf").decode("latin-1")
    lines, errors = [], []
    for number, line in enumerate(keyword_lines(raw), start=1):
        try:
            lines.append(line.encode("latin-1").decode("utf-8"))
        except UnicodeDecodeError as error:
            errors.append(f"line {number}: not UTF-8 text (byte 0x"
                          f"{line.encode('latin-1')[error.start]:02x} at column {error.start + 1})")
            lines.append("")
    if errors:
        _refuse(errors)
    return lines


def _first(lines: list[str]) -> tuple[int, str]:
    return next(((number, line) for number, line in enumerate(lines, start=1) if line.strip()),
                (0, ""))


def _header_of(line: str) -> list[str]:
    try:
        cells = next(csv.reader([line]), [])
    except csv.Error:
        cells = [line]
    return [cell.strip().lower() for cell in cells]


# The first content line is looked for in this much of the file; the rest is only scanned
# for commas, so a text or CSV file is held once (its bytes), not again as lines.
_HEAD_BYTES = 1024 * 1024


def _line_of(content: bytes, index: int) -> int:
    """The number of the line holding byte `index` (line ends: \n, \r\n, \r)."""
    head = content[:index]
    return head.count(b"\n") + head.count(b"\r") - head.count(b"\r\n") + 1


def _comma_line(content: bytes) -> int | None:
    found = [index for index in (content.find(b","), content.find(b'"')) if index >= 0]
    return _line_of(content, min(found)) if found else None


def recognise(*, filename: str, content: bytes) -> QuerySetFile:
    """The kind of the file, its name and the reason; ValidationError when it is ambiguous
    or holds nothing."""
    head = content[:_HEAD_BYTES].removeprefix(b"\xef\xbb\xbf").decode("utf-8", "replace")
    _, line = _first(keyword_lines(head))
    extension = filename.lower().rsplit(".", 1)[-1] if "." in filename else ""
    if not line:
        _refuse(["The file holds no keywords."])
    if line.lstrip().startswith(("{", "[")):
        return _recognise_json(_text_lines(content), line)
    header = _header_of(line)
    shown = ",".join(header)
    if header in QUEPID_HEADERS:
        return QuerySetFile("quepid_csv", NAMES["quepid_csv"], f"header {shown}")
    names = set(header)
    if len(header) > 1 and names & _KEYWORD_COLUMNS:
        others = sorted(names - _KEYWORD_COLUMNS - _OTHER_COLUMNS)
        left = f"; column{'s' if len(others) > 1 else ''} {', '.join(others)} left out" \
            if others else ""
        return QuerySetFile("csv", NAMES["csv"], f"header {shown}{left}")
    if len(header) == 1 and header[0] in _KEYWORD_COLUMNS:
        if extension == "csv":
            return QuerySetFile("csv", NAMES["csv"], f"a .csv file with the header {shown}")
        if extension != "txt":
            _refuse([f"line 1: `{line.strip()}` may be a CSV header or a keyword: name the "
                     "file .csv (a header) or .txt (a keyword), or choose the format."])
    with_commas = _comma_line(content)
    if with_commas is None:
        return QuerySetFile("text", NAMES["text"], "no header, no commas: one keyword a line")
    if extension == "csv":
        return QuerySetFile("csv", NAMES["csv"],
                            "a .csv file without a header: rows keyword,weight,tags")
    if extension == "txt":
        return QuerySetFile("text", NAMES["text"], "a .txt file: one keyword a line, "
                                                   "commas kept in the keyword")
    _refuse([f"line {with_commas}: a comma or double quote, and no header row: these may be "
             "CSV rows (keyword,weight,tags) or keywords holding commas. Add the header "
             "keyword,weight,tags, name the file .csv or .txt, or choose the format."])
    raise AssertionError  # _refuse raised


def _recognise_json(lines: list[str], line: str) -> QuerySetFile:
    try:
        first = json.loads(line)
    except ValueError:
        first = None
    if isinstance(first, dict) and "queryText" in first:
        return QuerySetFile("workbench", NAMES["workbench"],
                            "NDJSON lines holding queryText")
    try:
        document = json.loads("\n".join(lines))
    except ValueError as error:
        _refuse([f"line {error.lineno}: the file starts like JSON but is not "
                 f"({error.msg}); a Workbench query set is NDJSON lines "
                 '{"queryText": …}'])
    if isinstance(document, dict) and "querySetQueries" in document:
        return QuerySetFile("workbench", NAMES["workbench"],
                            "a JSON object with querySetQueries")
    keys = ", ".join(sorted(map(str, document))[:8]) if isinstance(document, dict) else \
        type(document).__name__
    _refuse([f"line 1: JSON that is not a Workbench query set (NDJSON lines with queryText, "
             f"or an object with querySetQueries): it holds {keys or 'nothing'}"])
    raise AssertionError  # _refuse raised


class _Collector:
    """Distinct keywords in order of first appearance, each problem named by its line,
    reading stopped at the keyword past the cap."""

    def __init__(self, max_keywords: int, taker: str) -> None:
        self.entries: list[KeywordEntry] = []
        self.errors: list[str] = []
        self.seen: set[str] = set()
        self.repeated = 0
        self.max_keywords = max_keywords
        self.taker = taker

    def add(self, number: int, field_name: str, text: object) -> bool:
        """False when reading must stop (past the cap)."""
        if not isinstance(text, str) or not text.strip():
            self.errors.append(f"line {number}: {field_name}: expected the query text, "
                               f"found {json.dumps(text)[:40] if text is not None else 'none'}")
            return True
        problem = keyword_text_problem(text)
        cleaned = "" if problem else keyword_text_clean(text)
        if problem or len(cleaned) > MAX_KEYWORD_LENGTH:
            self.errors.append(f"line {number}: {field_name}: " + (
                problem or f"longer than {MAX_KEYWORD_LENGTH} characters ({len(cleaned):,})"))
            return True
        key = Keyword.normalize(cleaned)
        if key in self.seen:
            self.repeated += 1
            return True
        if len(self.seen) == self.max_keywords:
            self.errors.append(f"line {number}: more than {self.max_keywords:,} keywords (the "
                               f"most {self.taker} takes); the file was not read past this "
                               "line.")
            return False
        self.seen.add(key)
        self.entries.append(KeywordEntry(cleaned))
        return True


def _read_quepid(lines: list[str], collector: _Collector) -> str:
    unrated = 0
    start, _ = _first(lines)
    reader = csv.reader(line + "\n" for line in lines[start:])
    number = start
    try:
        for row in reader:
            number = start + reader.line_num
            if not any(cell.strip() for cell in row):
                continue
            if len(row) != 3:
                collector.errors.append(f"line {number}: {len(row)} fields; a row is "
                                        "query,docid,rating")
                continue
            unrated += not row[1].strip() and not row[2].strip()
            # Our own Quepid export protects formula cells with an apostrophe (csv_cells).
            if not collector.add(number, "query", csv_cell_read(row[0])):
                break
    except csv.Error as error:
        collector.errors.append(f"line {number + 1}: query: {error}")
    note = ("Ratings are left out (import the file on the pool page to keep them); "
            "each query is taken once.")
    if unrated:
        note += f" {unrated} quer{'ies' if unrated > 1 else 'y'} had no rating (`query,,`)."
    return note


def _workbench_items(lines: list[str], collector: _Collector):
    """(line, item) of each query of the file: NDJSON lines, or the object of the create
    body (its queries all named by line 1, where the object starts)."""
    start, line = _first(lines)
    try:
        json.loads(line)
    except ValueError:
        try:
            document = json.loads("\n".join(lines))
        except ValueError as error:
            collector.errors.append(f"line {error.lineno}: not JSON ({error.msg})")
            return
        items = document.get("querySetQueries") if isinstance(document, dict) else None
        if not isinstance(items, list):
            collector.errors.append(f"line {start}: querySetQueries: expected a list of "
                                    '{"queryText": …}')
            return
        yield from ((start, item) for item in items)
        return
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except ValueError as error:
            collector.errors.append(f"line {number}: not a JSON object ({error.msg} at "
                                    f"column {error.colno})")


def _read_workbench(lines: list[str], collector: _Collector) -> str:
    others = set()
    for number, item in _workbench_items(lines, collector):
        if not isinstance(item, dict):
            collector.errors.append(f"line {number}: expected an object "
                                    '{"queryText": …}')
            continue
        others |= set(item) - {"queryText"}
        if not collector.add(number, "queryText", item.get("queryText")):
            break
    return (f"Fields left out: {', '.join(sorted(others))}." if others else "")


def query_set_file_read(*, filename: str, content: bytes, kind: str = "auto",
                        max_keywords: int | None = None,
                        taker: str = "a query set") -> QuerySetFile:
    """The file read as `kind` ("auto": recognised), with what it was read as and why.
    `taker` names what the keywords are for in the cap's message ("an evaluation")."""
    if max_keywords is None:
        max_keywords = settings.MAX_KEYWORDS
    found = recognise(filename=filename, content=content) if kind == "auto" else QuerySetFile(
        kind, NAMES[kind], "chosen on the form")
    read_as = f"Read as {found.name} ({found.reason})."
    if found.kind in ("text", "csv"):
        try:
            entries = keywords_from_upload(
                filename="file.csv" if found.kind == "csv" else "file.txt", content=content,
                max_keywords=max_keywords)
        except ValidationError as error:
            _refuse(error.message_dict[_FIELD], read_as=read_as)
        # Blank lines are no keywords (keywords_clean would drop them too).
        return QuerySetFile(found.kind, found.name, found.reason,
                            [entry for entry in entries if entry.text.strip()])
    lines = _text_lines(content)
    collector = _Collector(max_keywords, taker)
    if found.kind == "quepid_csv":
        start, line = _first(lines)
        if _header_of(line) not in QUEPID_HEADERS:
            _refuse([f"line {start}: expected the header query,docid,rating"], read_as=read_as)
        note = _read_quepid(lines, collector)
    else:
        note = _read_workbench(lines, collector)
    if collector.errors:
        _refuse(collector.errors, read_as=read_as)
    if not collector.entries:
        _refuse(["The file holds no keywords."], read_as=read_as)
    if collector.repeated and found.kind == "workbench":
        note += f" {collector.repeated} repeated quer{'ies' if collector.repeated > 1 else 'y'}" \
                " taken once."
    return QuerySetFile(found.kind, found.name, found.reason, collector.entries, note.strip())
