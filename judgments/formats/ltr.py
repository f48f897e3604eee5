"""The learning-to-rank judgment list (RankLib's and Elasticsearch LTR's text format), as
Quepid exports it ("Export ratings: LTR"): a line `grade qid:N # docid query text`. The
query's text follows the document id after the `#`; `qid` only groups a query's lines and
must name one query text throughout. Lines starting with `#` alone are comments.
"""

import re
from collections.abc import Iterable, Iterator

from evaluations.models import Keyword
from judgments.imports import ParsedJudgment, ParseResult, decoded_lines, grade_from, text_ok
from judgments.scales import GradeScale

NAME = "LTR judgment list (RankLib text)"
LINE = re.compile(r"\s*(?P<grade>\S+)\s+qid:(?P<qid>\S+)(?:\s+(?P<rest>.*))?")


def looks_like_ltr(line: str) -> bool:
    return LINE.fullmatch(line) is not None


def parse_ltr(content: bytes, *, scale: GradeScale) -> ParseResult:
    result = ParseResult()
    queries: dict[str, tuple[str, int]] = {}
    for number, text in decoded_lines(content, result):
        if not text.strip() or text.lstrip().startswith("#"):
            continue
        where = f"line {number}"
        match = LINE.fullmatch(text)
        rest = (match["rest"] or "") if match else ""
        comment = rest.partition("#")[2].split(None, 1) if "#" in rest else []
        if match is None or len(comment) != 2:
            result.error(f"{where}: expected `grade qid:N # docid query text`")
            continue
        doc_id, query = comment[0].strip(), comment[1].strip()
        grade = grade_from(match["grade"], scale, where, result)
        first = queries.setdefault(match["qid"], (query, number))
        if Keyword.normalize(first[0]) != Keyword.normalize(query):
            result.error(f"{where}: qid:{match['qid']} is the query {first[0]!r} on line "
                         f"{first[1]}, here {query!r}")
            continue
        if (grade is None or not text_ok(query, "query", where, result)
                or not text_ok(doc_id, "docid", where, result)):
            continue
        result.add(ParsedJudgment(number, query, doc_id, grade), key=None, what="")
        if result.full:
            break
    return result


def write_ltr(rows: Iterable[tuple[str, str, int]]) -> Iterator[str]:
    """Lines of (query, docid, grade) rows; qids number the queries from 1 in first-seen
    order. Whitespace in a document id becomes `_` (the id ends at a space)."""
    qids: dict[str, int] = {}
    for query, doc_id, grade in rows:
        qid = qids.setdefault(query, len(qids) + 1)
        yield f"{grade} qid:{qid} # {'_'.join(doc_id.split()) or '_'} {' '.join(query.split())}\n"
