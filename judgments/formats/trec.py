"""TREC qrels: `qid iteration docid relevance`, whitespace separated (the iteration column
is ignored), lines starting with `#` skipped.

A topic id is a query's id with a mapping file of `qid<TAB>keyword` lines (the
`trec_mapping` export), or, without one, the query's text itself (`laptop 0 d1 2`). Topic
ids that are all numbers name queries by id: without the mapping such a file is refused
(which query "1" is cannot be known).
"""

from evaluations.models import Keyword
from judgments.imports import (
    MAX_TEXT,
    ParsedJudgment,
    ParseResult,
    decoded_lines,
    grade_from,
    text_ok,
)
from judgments.scales import GradeScale

NEEDS_MAPPING = "TREC qrels need the mapping file (qid<TAB>keyword lines)"


def parse_trec_mapping(content: bytes, result: ParseResult) -> dict[str, str]:
    """qid → keyword from `qid<TAB>keyword` lines; errors say "mapping line N"."""
    mapping: dict[str, str] = {}
    for number, text in decoded_lines(content, result, prefix="mapping line"):
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


def _rows(content: bytes, result: ParseResult):
    """(line number, the four columns) of each qrels line; wrong lines are errors."""
    for number, text in decoded_lines(content, result):
        if not text.strip() or text.lstrip().startswith("#"):
            continue
        row = text.split()
        if len(row) != 4:
            result.error(f"line {number}: expected 4 columns (qid 0 docid grade), "
                         f"found {len(row)}")
            continue
        yield number, row


def parse_trec(content: bytes, *, mapping: bytes | None, scale: GradeScale) -> ParseResult:
    """Qrels with `mapping` (qid → keyword), or without it the topic ids as query text."""
    result = ParseResult()
    qids = None if mapping is None else parse_trec_mapping(mapping, result)
    rows = list(_rows(content, result))
    if qids is None and rows and all(row[0].isdigit() for _, row in rows):
        result.error(f"{NEEDS_MAPPING}: the topic ids are numbers (line {rows[0][0]}: "
                     f"{rows[0][1][0]}), which name queries by id, not by their text")
        return result
    for number, (qid, _iteration, doc_id, raw_grade) in rows:
        grade = grade_from(raw_grade, scale, f"line {number}", result)
        keyword = qid if qids is None else qids.get(qid)
        if keyword is None:
            result.error(f"line {number}: qid {qid} is not in the mapping file")
            continue
        if (grade is None or not text_ok(keyword, "keyword", f"line {number}", result)
                or not text_ok(doc_id, "docid", f"line {number}", result)):
            continue
        result.add(ParsedJudgment(number, keyword, doc_id, grade),
                   key=(Keyword.normalize(keyword), doc_id), what=f"qid {qid} docid {doc_id}")
        if result.full:
            break
    return result
