"""Which format a judgment file is, said with the reason, and its parse.

`recognise` looks at the file's first content (a JSON document's keys; else its first line
that is not blank or a `#` comment) and answers the format and why ("Quepid basic CSV:
header query,docid,rating"), or refuses a file it cannot place, with what it saw. The
form's and API's `format` is "auto" (recognise) or a kind of KINDS chosen by hand; either
way the preview names the format.
"""

import csv
from dataclasses import dataclass

from judgments.formats import ltr, quepid_csv, rre, trec, workbench
from judgments.imports import (
    CSV_HEADER,
    MAX_FILE_BYTES,
    SLOT_HEADER,
    ParseResult,
    apply_duplicates,
    parse_csv,
    read_json,
)
from judgments.scales import GradeScale

# The kinds a person or script may choose; "auto" recognises one of them.
KINDS = {
    "auto": "Recognise the format (recommended)",
    "csv": "SearchTweak CSV: per slot (the “CSV per grader” export) or keyword,doc_id,grade",
    "trec": "TREC qrels (qid 0 docid grade), with a mapping file or query text as topic ids",
    "quepid_csv": "Quepid basic CSV (query,docid,rating)",
    "rre": "RRE ratings JSON (Quepid's RRE export)",
    "ltr": "LTR judgment list (grade qid:N # docid query)",
    "workbench": "OpenSearch Search Relevance Workbench judgments JSON",
}
KIND_CHOICES = list(KINDS)
# What the preview calls each kind.
NAMES = {"csv": "SearchTweak CSV", "trec": "TREC qrels", "quepid_csv": quepid_csv.NAME,
         "rre": rre.NAME, "ltr": ltr.NAME, "workbench": workbench.NAME}


@dataclass(frozen=True)
class Recognition:
    kind: str = ""
    name: str = ""
    reason: str = ""
    # Why nothing could be recognised; empty when `kind` is set.
    refusal: str = ""


def _first_line(content: bytes) -> str:
    for raw in content.split(b"\n", 200)[:200]:
        text = raw.decode("utf-8", errors="replace").strip().lstrip("\ufeff")
        if text and not text.startswith("#"):
            return text
    return ""


def _json(content: bytes) -> Recognition:
    problems = ParseResult()
    document = read_json(content, problems)
    if not problems.ok:
        return Recognition(refusal=f"the file starts like JSON but is not: {problems.errors[0]}")
    if workbench.looks_like_workbench(document):
        return Recognition("workbench", workbench.NAME, "a JSON object with judgmentRatings")
    if rre.looks_like_rre(document):
        return Recognition("rre", rre.NAME,
                           "a JSON object with queries (placeholders, relevant_documents)")
    keys = ", ".join(sorted(document)[:8]) if isinstance(document, dict) else type(
        document).__name__
    return Recognition(refusal=f"JSON that is neither Workbench judgments (judgmentRatings) "
                               f"nor RRE ratings (queries): it holds {keys or 'nothing'}")


def recognise(content: bytes, *, has_mapping: bool) -> Recognition:
    if content.lstrip(b"\xef\xbb\xbf \t\r\n")[:1] in (b"{", b"["):
        return _json(content)
    line = _first_line(content)
    if not line:
        return Recognition(refusal="the file holds no judgments")
    try:
        cells = next(csv.reader([line]), [])
    except csv.Error:
        # A carriage return inside the line: no CSV header; the parse names the line.
        cells = [line]
    header = [cell.strip().lower() for cell in cells]
    shown = ",".join(header)
    if header == SLOT_HEADER:
        return Recognition("csv", "SearchTweak per-slot CSV", f"header {shown}")
    if header[:3] == CSV_HEADER:
        return Recognition("csv", "SearchTweak CSV", f"header {shown}")
    if header in quepid_csv.HEADERS:
        return Recognition("quepid_csv", quepid_csv.NAME, f"header {shown}")
    if ltr.looks_like_ltr(line):
        return Recognition("ltr", ltr.NAME, f"lines like `{line[:60]}`")
    columns = line.split()
    if len(cells) == 1 and len(columns) == 4:
        how = ("with the mapping file for topic ids" if has_mapping else
               "no mapping file: the topic ids are read as the queries' text")
        return Recognition("trec", "TREC qrels", f"four columns `{line[:60]}`; {how}")
    if 3 <= len(cells) <= 6 and not any(cell.isalpha() for cell in header[2:3]):
        return Recognition("csv", "SearchTweak CSV",
                           "no header; comma-separated rows read as keyword,doc_id,grade")
    if len(cells) > 1:
        return Recognition(refusal=f"a CSV header {shown!r} of no known format: expected "
                                   "keyword,doc_id,grade (SearchTweak), query,docid,rating "
                                   "(Quepid) or the per-slot header")
    return Recognition(refusal=f"the first line `{line[:60]}` is none of the known formats "
                               "(CSV, TREC qrels, LTR text, Workbench or RRE JSON)")


def _parse(kind: str, content: bytes, mapping: bytes | None, scale: GradeScale) -> ParseResult:
    if kind == "csv":
        return parse_csv(content, scale=scale)
    if kind == "trec":
        return trec.parse_trec(content, mapping=mapping, scale=scale)
    return {"quepid_csv": quepid_csv.parse_quepid_csv, "rre": rre.parse_rre,
            "ltr": ltr.parse_ltr, "workbench": workbench.parse_workbench}[kind](
        content, scale=scale)


def parse_content(*, kind: str, content: bytes, mapping: bytes | None, scale: GradeScale,
                  duplicates: str = "all", result: ParseResult | None = None) -> ParseResult:
    """The file of `kind` ("auto": recognised) parsed, with the `duplicates` policy
    applied (judgments.imports.apply_duplicates) and the format named for the preview."""
    if result is not None and not result.ok:
        return result
    if kind == "auto":
        found = recognise(content, has_mapping=mapping is not None)
        if found.refusal:
            result = ParseResult()
            result.error(f"the format is not recognised: {found.refusal}; choose it on the "
                         "form if it is one of the listed formats")
            return result
        kind, name, reason = found.kind, found.name, found.reason
    else:
        found = recognise(content, has_mapping=mapping is not None)
        name, reason = NAMES[kind], "chosen on the form"
        if found.kind == kind:
            name, reason = found.name, f"{found.reason} (chosen on the form)"
        elif found.kind:
            reason = f"chosen on the form, though it looks like {found.name} ({found.reason})"
    parsed = _parse(kind, content, mapping, scale)
    parsed.format_kind, parsed.format_name, parsed.format_reason = kind, name, reason
    # Only the Workbench's decimals need a rule; every other format writes grades.
    parsed.grade_rule = parsed.grade_rule or (
        f"Ratings are whole grades, kept as they are on the {scale.name} scale "
        f"{scale.lo}..{scale.hi} (one outside it is an error).")
    return apply_duplicates(parsed, duplicates)


def _read(upload, result: ParseResult, what: str) -> bytes:
    if upload.size is not None and upload.size > MAX_FILE_BYTES:
        result.error(f"the {what} is larger than {MAX_FILE_BYTES // (1024 * 1024)} MB")
        return b""
    return upload.read()


def parse_upload(*, kind: str, file, mapping, scale: GradeScale,
                 duplicates: str = "all") -> ParseResult:
    """`parse_content` of an uploaded file (and its mapping for TREC qrels)."""
    result = ParseResult()
    content = _read(file, result, "file")
    if not result.ok:
        return result
    return parse_content(kind=kind, content=content,
                         mapping=None if mapping is None else _read(mapping, result,
                                                                    "mapping file"),
                         scale=scale, duplicates=duplicates, result=result)
