"""Parsing judgment files for the team's pool: CSV `keyword,doc_id,grade` and TREC qrels.

Pure functions over bytes: every problem is reported with its line number ("line 7: grade
5 is outside Graded (0..3)") and nothing here writes; `services.pool_judgments_import`
stores a parse only when it has no error at all (all-or-nothing).

Formats
- CSV: one judgment per line, `keyword,doc_id,grade`, RFC 4180 quoting within a line; an
  optional first line `keyword,doc_id,grade` is a header. Up to three more columns
  (`grader,grader_kind,reason`, as the per-grader export writes them) are allowed and
  ignored: pool judgments have no grader.
  A (keyword, doc) pair may repeat: each line is one more grade for it, aggregated like a
  snapshot's slots.
- TREC qrels: `qid iteration docid relevance`, whitespace separated (the iteration column
  is ignored), with a mapping file of `qid<TAB>keyword` lines (the `trec_mapping` export).
Each line is decoded as UTF-8 on its own, so a file mixing encodings names every line
that is not UTF-8. Blank lines and, in qrels and mappings, lines starting with `#` are
skipped.

Limits: at most MAX_JUDGMENTS judgments a file (a larger file is refused whole: split
it). A line that repeats an earlier judgment is skipped and counted (`duplicate_count`):
in qrels, the same (keyword, docid); in a CSV that names graders, the same (keyword,
doc_id, grader). The same pair judged with another grade there is an error naming both
lines. A CSV without a grader column has no way to tell a repeat from another grader's
grade, so its repeated pairs stay separate grades.
"""

import csv
from dataclasses import dataclass, field

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


@dataclass(frozen=True)
class ParsedJudgment:
    line: int
    text: str
    doc_id: str
    grade: int


@dataclass
class ParseResult:
    judgments: list[ParsedJudgment] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    error_count: int = 0
    line_count: int = 0
    duplicate_count: int = 0
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


def _lines(content: bytes, result: ParseResult, prefix: str = "line"):
    """(line number, text) of every line that decodes as UTF-8; the others are errors."""
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
        yield number, text.rstrip("\r")


def _grade(raw: str, scale: GradeScale, number: int, result: ParseResult) -> int | None:
    try:
        value = int(raw.strip())
    except ValueError:
        result.error(f"line {number}: grade {raw.strip()!r} is not an integer")
        return None
    if not scale.contains(value):
        result.error(f"line {number}: grade {value} is outside the {scale.name} scale "
                     f"{scale.lo}..{scale.hi}")
        return None
    return value


def _text_ok(value: str, what: str, number: int, result: ParseResult) -> bool:
    if not value:
        result.error(f"line {number}: the {what} is empty")
        return False
    # The keyword is stored normalized too, and casefolding can lengthen it ("ß" → "ss").
    if len(value) > MAX_TEXT or (what == "keyword" and len(Keyword.normalize(value)) > MAX_TEXT):
        result.error(f"line {number}: the {what} is longer than {MAX_TEXT} characters")
        return False
    return True


def _cell(value: str) -> str:
    # Our CSV exports protect cells from spreadsheets' formulas: read them back as typed.
    return csv_cell_read(value.strip()).strip()


def parse_csv(content: bytes, *, scale: GradeScale) -> ParseResult:
    result = ParseResult()
    first = True
    for number, text in _lines(content, result):
        if not text.strip():
            continue
        try:
            row = next(csv.reader([text], strict=True))
        except csv.Error as error:
            result.error(f"line {number}: not a CSV row ({error})")
            first = False
            continue
        if first and [cell.strip().lower() for cell in row][:3] == CSV_HEADER:
            first = False
            continue
        first = False
        if not 3 <= len(row) <= 6:
            result.error(f"line {number}: expected 3 columns (keyword,doc_id,grade), "
                         f"found {len(row)}")
            continue
        keyword, doc_id, raw_grade = _cell(row[0]), _cell(row[1]), row[2]
        grade = _grade(raw_grade, scale, number, result)
        if not (_text_ok(keyword, "keyword", number, result)
                and _text_ok(doc_id, "doc_id", number, result)) or grade is None:
            continue
        grader = _cell(row[3]) if len(row) > 3 else ""
        result.add(ParsedJudgment(number, keyword, doc_id, grade),
                   key=(Keyword.normalize(keyword), doc_id, grader) if grader else None,
                   what=f"{keyword!r} {doc_id!r} by {grader!r}")
        if result.full:
            break
    return result


def parse_trec_mapping(content: bytes, result: ParseResult) -> dict[str, str]:
    """qid → keyword from `qid<TAB>keyword` lines; errors say "mapping line N"."""
    mapping: dict[str, str] = {}
    for number, text in _lines(content, result, prefix="mapping line"):
        if not text.strip() or text.lstrip().startswith("#"):
            continue
        qid, sep, keyword = text.partition("\t")
        if not sep:
            parts = text.strip().split(None, 1)
            qid, keyword = (parts[0], parts[1]) if len(parts) == 2 else (text.strip(), "")
        qid, keyword = qid.strip(), keyword.strip()
        if not keyword:
            result.error(f"mapping line {number}: expected `qid<TAB>keyword`")
            continue
        if max(len(keyword), len(Keyword.normalize(keyword))) > MAX_TEXT:
            result.error(f"mapping line {number}: the keyword is longer than {MAX_TEXT} "
                         "characters")
            continue
        if qid in mapping and Keyword.normalize(mapping[qid]) != Keyword.normalize(keyword):
            result.error(f"mapping line {number}: qid {qid} is mapped twice")
            continue
        mapping[qid] = keyword
    return mapping


def parse_trec(content: bytes, *, mapping: bytes, scale: GradeScale) -> ParseResult:
    result = ParseResult()
    qids = parse_trec_mapping(mapping, result)
    for number, text in _lines(content, result):
        if not text.strip() or text.lstrip().startswith("#"):
            continue
        row = text.split()
        if len(row) != 4:
            result.error(f"line {number}: expected 4 columns (qid 0 docid grade), "
                         f"found {len(row)}")
            continue
        qid, _iteration, doc_id, raw_grade = row
        grade = _grade(raw_grade, scale, number, result)
        keyword = qids.get(qid)
        if keyword is None:
            result.error(f"line {number}: qid {qid} is not in the mapping file")
            continue
        if grade is None or not _text_ok(doc_id, "docid", number, result):
            continue
        result.add(ParsedJudgment(number, keyword, doc_id, grade),
                   key=(Keyword.normalize(keyword), doc_id), what=f"qid {qid} docid {doc_id}")
        if result.full:
            break
    return result


def _read(upload, result: ParseResult, what: str) -> bytes:
    if upload.size is not None and upload.size > MAX_FILE_BYTES:
        result.error(f"the {what} is larger than {MAX_FILE_BYTES // (1024 * 1024)} MB")
        return b""
    return upload.read()


def parse_upload(*, kind: str, file, mapping, scale: GradeScale) -> ParseResult:
    """Parse an uploaded file (and its mapping for TREC qrels) of `kind` "csv" or "trec"."""
    result = ParseResult()
    content = _read(file, result, "file")
    if not result.ok:
        return result
    if kind == "csv":
        return parse_csv(content, scale=scale)
    if mapping is None:
        result.error("TREC qrels need the mapping file (qid<TAB>keyword lines)")
        return result
    mapping_content = _read(mapping, result, "mapping file")
    if not result.ok:
        return result
    return parse_trec(content, mapping=mapping_content, scale=scale)


def preview(result: ParseResult, *, rows: int = 20) -> dict:
    """What a dry run answers: the counts, every error, the first rows."""
    return {
        "dry_run": True,
        "valid": result.ok,
        "would_import": len(result.judgments) if result.ok else 0,
        "keywords": len({Keyword.normalize(item.text) for item in result.judgments}),
        "duplicates": result.duplicate_count,
        "errors": result.messages(),
        "preview": [
            {"line": item.line, "keyword": item.text, "doc_id": item.doc_id,
             "grade": item.grade}
            for item in result.judgments[:rows]
        ],
    }
