"""What every judgment import shares, and SearchTweak's own CSV formats.

Pure functions over bytes: every problem is reported with its line number ("line 7: grade
5 is outside Graded (0..3)") or, in JSON, its item path ("judgmentRatings[0].ratings[2].
rating: ..."), and nothing here writes; `pool.pool_judgments_import` stores a parse only
when it has no error at all (all-or-nothing). The other tools' formats, TREC qrels and the
recogniser that names what a file is live in judgments/formats/ (one module a format).

SearchTweak's CSV formats
- Per-slot CSV, the lossless one (judgments.exports.SLOT_COLUMNS, what "CSV per grader"
  exports): the header line `keyword,doc_id,grade,grader,grader_kind,reason,unsure,note,
  position,graded_at`, then one grade a row. Every column is stored with the pool row and
  exported back unchanged; quoted cells may span lines (a note of two lines).
- CSV: one judgment per line, `keyword,doc_id,grade`, RFC 4180 quoting; an optional first
  line `keyword,doc_id,grade` is a header. Up to three more columns (`grader,grader_kind,
  reason`, as the per-grader export wrote them before it had more) are allowed and
  ignored. A grade must be an integer: the averaged CSV export's means (2.6667) are
  refused with a pointer to the per-slot export.
  A (keyword, doc) pair may repeat. With `duplicates="all"` each line is one more grade
  for it, aggregated like a snapshot's slots; with `duplicates="newest"` only the newest
  line of the pair is kept (latest `graded_at`, else the later line). `describe_repeats`
  says which in words for the preview.
Each line is decoded as UTF-8 on its own, so a file mixing encodings names every line
that is not UTF-8. Blank lines are skipped.

Limits: at most MAX_JUDGMENTS judgments a file (a larger file is refused whole: split
it). A line that repeats an earlier judgment is skipped and counted (`duplicate_count`):
in a CSV that names graders, the same (keyword, doc_id, grader), and in the per-slot
format the same (keyword, doc_id, position, grader) (one person grades a result once).
The same key with another grade there is an error naming both lines. `(import)` and
unnamed graders are no person: their lines stay separate grades, as in a CSV without a
grader column.
"""

import csv
import json
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime

from evaluations.models import Keyword
from judgments.scales import GradeScale
from searchtweak.csv_cells import csv_cell_read

MAX_FILE_BYTES = 20 * 1024 * 1024
# Enough to fix a file; a file of garbage would otherwise answer with megabytes of errors.
MAX_ERRORS = 50
MAX_TEXT = 500
# A team's pool for one file; a 200,000-line file of one repeated line stored 200,000 rows.
MAX_JUDGMENTS = 100_000
CSV_HEADER = ["keyword", "doc_id", "grade"]
# The per-slot export's header (judgments.exports.SLOT_COLUMNS, spelled here too so this
# module stays free of the exports' imports; a test holds them equal).
SLOT_HEADER = ["keyword", "doc_id", "grade", "grader", "grader_kind", "reason", "unsure",
               "note", "position", "graded_at"]
IMPORT_GRADER = "(import)"
GRADER_KINDS = ("", "person", "judge")
DUPLICATE_POLICIES = {
    "all": "Keep all: each line is a separate grade",
    "newest": "Keep the newest line of each keyword and document only",
}
# The API's one name for this choice set (settings.SPECTACULAR_SETTINGS), which two
# serializers use under different field names.
DUPLICATE_POLICY_CHOICES = list(DUPLICATE_POLICIES)


@dataclass(frozen=True)
class ParsedJudgment:
    line: int
    text: str
    doc_id: str
    grade: int
    # The per-slot format's other columns; the defaults for the other formats.
    grader: str = ""
    grader_kind: str = ""
    unsure: bool = False
    note: str = ""
    reason: str = ""
    position: int | None = None
    graded_at: datetime | None = None


@dataclass
class ParseResult:
    judgments: list[ParsedJudgment] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    error_count: int = 0
    line_count: int = 0
    duplicate_count: int = 0
    # Lines of a (keyword, doc) pair after its first (kept or dropped by the policy), and
    # how many pairs have them; `dropped_count` lines the "newest" policy dropped.
    repeated_lines: int = 0
    repeated_pairs: int = 0
    dropped_count: int = 0
    policy: str = "all"
    # What the file was read as and why ("Quepid basic CSV", "header query,docid,rating"),
    # how its ratings became grades (a rule and its rating → grade rows, when they are not
    # the grades themselves), and lines read but not judgments (a query with no rating).
    format_kind: str = ""
    format_name: str = ""
    format_reason: str = ""
    grade_rule: str = ""
    grade_table: list[tuple[str, int]] = field(default_factory=list)
    skipped_count: int = 0
    skipped_note: str = ""
    # (line, query) of each query listed with no rating (Quepid's `query,,`).
    unrated: list[tuple[int, str]] = field(default_factory=list)
    # Where each judgment that may not repeat was first seen: key -> (line, grade).
    _seen: dict[tuple, tuple[int, int]] = field(default_factory=dict, repr=False)

    def error(self, message: str) -> None:
        self.error_count += 1
        if len(self.errors) < MAX_ERRORS:
            self.errors.append(message)

    def messages(self) -> list[str]:
        """The errors to show: the first MAX_ERRORS and how many more there are."""
        extra = self.error_count - len(self.errors)
        return self.errors + ([f"… and {extra} more errors."] if extra > 0 else [])

    @property
    def ok(self) -> bool:
        return self.error_count == 0

    @property
    def full(self) -> bool:
        """True once the file went past MAX_JUDGMENTS (an error): stop reading it."""
        return len(self.judgments) > MAX_JUDGMENTS

    def add(self, judgment: ParsedJudgment, *, key: tuple | None, what: str) -> None:
        """Keep `judgment` unless `key` repeats an earlier one (skipped, or an error when
        the grade differs); `what` names the pair in that error."""
        if key is not None:
            first = self._seen.get(key)
            if first is not None:
                if first[1] == judgment.grade:
                    self.duplicate_count += 1
                else:
                    self.error(f"line {judgment.line}: {what} was judged {first[1]} on line "
                               f"{first[0]}; one judgment each")
                return
            self._seen[key] = (judgment.line, judgment.grade)
        self.judgments.append(judgment)
        if self.full:
            self.error(f"the file holds more than {MAX_JUDGMENTS:,} judgments; split it "
                       "into smaller files")


def decoded_lines(content: bytes, result: ParseResult, prefix: str = "line", *,
                  keep_cr: bool = False):
    """(line number, text) of every line that decodes as UTF-8; the others are errors.
    `keep_cr` keeps a line's closing carriage return (the CSV reader ends lines itself and
    a quoted note may hold one)."""
    if len(content) > MAX_FILE_BYTES:
        result.error(f"the file is larger than {MAX_FILE_BYTES // (1024 * 1024)} MB")
        return
    if content.startswith(b"\xef\xbb\xbf"):
        content = content[3:]
    raw_lines = content.split(b"\n")
    if raw_lines and raw_lines[-1] == b"":
        raw_lines.pop()
    result.line_count = len(raw_lines)
    for number, raw in enumerate(raw_lines, start=1):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            result.error(f"{prefix} {number}: not UTF-8 text (byte 0x{raw[error.start]:02x} "
                         f"at column {error.start + 1})")
            continue
        if "\x00" in text:
            result.error(f"{prefix} {number}: contains a NUL character")
            continue
        yield number, text if keep_cr else text.rstrip("\r")


def read_json(content: bytes, result: ParseResult) -> object | None:
    """The JSON document in `content`, or None with an error that names its line."""
    if len(content) > MAX_FILE_BYTES:
        result.error(f"the file is larger than {MAX_FILE_BYTES // (1024 * 1024)} MB")
        return None
    try:
        return json.loads(content.decode("utf-8-sig"))
    except UnicodeDecodeError as error:
        result.error(f"not UTF-8 text (byte 0x{content[error.start]:02x} at offset "
                     f"{error.start})")
    except (ValueError, RecursionError) as error:
        where = (f"line {error.lineno} column {error.colno}: "
                 if isinstance(error, json.JSONDecodeError) else "")
        result.error(f"{where}not JSON ({getattr(error, 'msg', 'nested too deeply')})")
    return None


def grade_from(raw: str, scale: GradeScale, where: str, result: ParseResult) -> int | None:
    """`raw` as a grade of `scale`, or None with an error that starts with `where` ("line
    7", or a JSON item's path)."""
    try:
        value = int(raw.strip())
    except ValueError:
        try:
            float(raw.strip())
        except ValueError:
            result.error(f"{where}: grade {raw.strip()!r} is not an integer")
        else:
            result.error(f"{where}: grade {raw.strip()!r} is not an integer: a mean "
                         "of several grades (the averaged CSV export) cannot be imported; "
                         "export “CSV per grader”, which has one grade a line, and import "
                         "that")
        return None
    if not scale.contains(value):
        result.error(f"{where}: grade {value} is outside the {scale.name} scale "
                     f"{scale.lo}..{scale.hi}")
        return None
    return value


def text_ok(value: str, what: str, where: str, result: ParseResult) -> bool:
    if not value:
        result.error(f"{where}: the {what} is empty")
        return False
    # The keyword is stored normalized too, and casefolding can lengthen it ("ß" → "ss").
    if len(value) > MAX_TEXT or (what == "keyword" and len(Keyword.normalize(value)) > MAX_TEXT):
        result.error(f"{where}: the {what} is longer than {MAX_TEXT} characters")
        return False
    return True


def csv_cell(value: str) -> str:
    # Our CSV exports protect cells from spreadsheets' formulas: read them back as typed.
    return csv_cell_read(value.strip()).strip()


def csv_rows(content: bytes, result: ParseResult):
    """(first line number, cells) of each CSV row; a quoted cell may span lines."""
    numbers: list[int] = []

    def feed():
        for number, text in decoded_lines(content, result, keep_cr=True):
            numbers.append(number)
            yield text + "\n"

    reader = csv.reader(feed(), strict=True)
    consumed = 0
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as error:
            result.error(f"line {numbers[-1]}: not a CSV row ({error})")
            consumed = len(numbers)
            continue
        start, consumed = numbers[consumed], len(numbers)
        yield start, row


def _slot_fields(row: list[str], number: int, result: ParseResult) -> dict | None:
    """The per-slot columns after the grade, checked; None (and errors) when one is wrong."""
    grader, kind, reason, unsure, note, position, graded_at = row[3:10]
    fields: dict = {"grader": csv_cell_read(grader.strip()), "reason": csv_cell_read(reason),
                    "note": csv_cell_read(note)}
    problems = []
    if len(fields["grader"]) > 150:
        problems.append("the grader is longer than 150 characters")
    fields["grader_kind"] = kind.strip().lower()
    if fields["grader_kind"] not in GRADER_KINDS:
        problems.append(f"grader_kind {kind.strip()!r} is not person, judge or empty")
    flag = unsure.strip().lower()
    if flag not in ("true", "false", "1", "0", ""):
        problems.append(f"unsure {unsure.strip()!r} is not true or false")
    fields["unsure"] = flag in ("true", "1")
    fields["position"] = None
    if position.strip():
        if not position.strip().isdigit() or int(position) < 1:
            problems.append(f"position {position.strip()!r} is not a positive integer")
        else:
            fields["position"] = int(position)
    fields["graded_at"] = None
    if graded_at.strip():
        try:
            moment = datetime.fromisoformat(graded_at.strip())
        except ValueError:
            problems.append(f"graded_at {graded_at.strip()!r} is not an ISO 8601 time")
        else:
            # A time without a zone is read as UTC, the zone the export writes.
            fields["graded_at"] = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    for problem in problems:
        result.error(f"line {number}: {problem}")
    return None if problems else fields


def parse_csv(content: bytes, *, scale: GradeScale) -> ParseResult:
    result = ParseResult()
    first = True
    slots = False
    for number, row in csv_rows(content, result):
        if not any(cell.strip() for cell in row):
            continue
        header = [cell.strip().lower() for cell in row]
        if first and header == SLOT_HEADER:
            first, slots = False, True
            continue
        if first and header[:3] == CSV_HEADER:
            first = False
            continue
        first = False
        if slots and len(row) != len(SLOT_HEADER):
            result.error(f"line {number}: expected {len(SLOT_HEADER)} columns "
                         f"({','.join(SLOT_HEADER)}), found {len(row)}")
            continue
        if not slots and not 3 <= len(row) <= 6:
            result.error(f"line {number}: expected 3 columns (keyword,doc_id,grade), "
                         f"found {len(row)}")
            continue
        keyword, doc_id, raw_grade = csv_cell(row[0]), csv_cell(row[1]), row[2]
        grade = grade_from(raw_grade, scale, f"line {number}", result)
        extra = _slot_fields(row, number, result) if slots else {}
        names_ok = (text_ok(keyword, "keyword", f"line {number}", result)
                    and text_ok(doc_id, "doc_id", f"line {number}", result))
        if not names_ok or grade is None or extra is None:
            continue
        grader = extra["grader"] if slots else (csv_cell(row[3]) if len(row) > 3 else "")
        person = grader and grader != IMPORT_GRADER
        key = (Keyword.normalize(keyword), doc_id, extra.get("position"), grader)
        result.add(ParsedJudgment(number, keyword, doc_id, grade, **extra),
                   key=key if person else None,
                   what=f"{keyword!r} {doc_id!r} by {grader!r}")
        if result.full:
            break
    return result


def apply_duplicates(result: ParseResult, policy: str) -> ParseResult:
    """Count the (keyword, doc) pairs on several lines and, with `policy` "newest", keep
    the newest line of each: the latest `graded_at` (a line without one is older than any
    with one), between equals the later line. "all" keeps every line."""
    if policy not in DUPLICATE_POLICIES:
        raise ValueError(f"unknown duplicates policy {policy!r}")
    result.policy = policy
    pairs = Counter((Keyword.normalize(item.text), item.doc_id) for item in result.judgments)
    result.repeated_pairs = sum(1 for count in pairs.values() if count > 1)
    result.repeated_lines = sum(count - 1 for count in pairs.values())
    if policy == "newest" and result.repeated_lines:
        oldest = datetime.min.replace(tzinfo=UTC)
        newest: dict[tuple[str, str], ParsedJudgment] = {}
        for item in result.judgments:
            pair = (Keyword.normalize(item.text), item.doc_id)
            kept = newest.get(pair)
            if kept is None or (item.graded_at or oldest) >= (kept.graded_at or oldest):
                newest[pair] = item
        chosen = {id(item) for item in newest.values()}
        result.judgments = [item for item in result.judgments if id(item) in chosen]
        result.dropped_count = result.repeated_lines
    return result


def describe_repeats(result: ParseResult) -> str:
    """What the import does with the file's repeated (keyword, document) pairs, in words."""
    if not result.repeated_pairs:
        return "Every keyword and document appears on one line only."
    extra = result.repeated_lines
    pairs = (f"{result.repeated_pairs} keyword/document pair"
             f"{'s appear' if result.repeated_pairs != 1 else ' appears'} on more than one "
             f"line ({extra} extra line{'s' if extra != 1 else ''})")
    if result.policy == "newest":
        return (f"{pairs}: only the newest line of each pair is imported (latest graded_at, "
                f"else the later line); {result.dropped_count} line"
                f"{'s are' if result.dropped_count != 1 else ' is'} dropped.")
    return (f"{pairs}: every line is imported as a separate grade, and the grades of a pair "
            "are aggregated like a result's slots (majority on binary, mean otherwise).")


def preview(result: ParseResult, *, rows: int = 20) -> dict:
    """What a dry run answers: the counts, every error, the first rows."""
    return {
        "dry_run": True,
        "valid": result.ok,
        "would_import": len(result.judgments) if result.ok else 0,
        "keywords": len({Keyword.normalize(item.text) for item in result.judgments}),
        "duplicates": result.duplicate_count,
        "duplicate_policy": result.policy,
        "repeated_pairs": result.repeated_pairs,
        "repeated_lines": result.repeated_lines,
        "dropped": result.dropped_count,
        "repeats": describe_repeats(result),
        "errors": result.messages(),
        "format": result.format_name,
        "format_reason": result.format_reason,
        "grade_rule": result.grade_rule,
        "grade_table": [{"rating": rating, "grade": grade}
                        for rating, grade in result.grade_table],
        "skipped": result.skipped_count,
        "skipped_note": result.skipped_note,
        "preview": [
            {"line": item.line, "keyword": item.text, "doc_id": item.doc_id,
             "grade": item.grade, "grader": item.grader, "grader_kind": item.grader_kind,
             "unsure": item.unsure, "note": item.note}
            for item in result.judgments[:rows]
        ],
    }
