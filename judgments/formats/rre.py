"""Rated Ranking Evaluator's ratings file (`ratings.json`), as Quepid exports it ("Export
ratings: RRE"): an object with `queries`, each query naming its text in
`placeholders["$query"]` and its documents in `relevant_documents`, grouped by grade
(`{"3": ["doc1", "doc2"], "1": ["doc3"]}`). RRE's other spelling, a document to its gain
(`{"doc1": {"gain": 3}}`), is read too. Errors name the item's path
(`queries[2].relevant_documents["3"][0]`).
"""

import json
from collections.abc import Iterable, Iterator
from itertools import groupby

from judgments.imports import ParsedJudgment, ParseResult, grade_from, read_json, text_ok
from judgments.scales import GradeScale

NAME = "RRE ratings JSON"
QUERY_PLACEHOLDER = "$query"


def looks_like_rre(document: object) -> bool:
    return (isinstance(document, dict) and isinstance(document.get("queries"), list)
            and "judgmentRatings" not in document)


def _pairs(relevant: dict, path: str, result: ParseResult) -> Iterator[tuple[str, str, str]]:
    """(item path, doc id, grade text) of a query's `relevant_documents`."""
    for key, value in relevant.items():
        here = f"{path}[{json.dumps(key)}]"
        if isinstance(value, list):
            for index, doc_id in enumerate(value):
                if not isinstance(doc_id, str | int) or isinstance(doc_id, bool):
                    result.error(f"{here}[{index}]: a document id must be text")
                    continue
                yield f"{here}[{index}]", str(doc_id).strip(), key
        elif isinstance(value, dict) and "gain" in value:
            yield here, key.strip(), str(value["gain"])
        else:
            result.error(f"{here}: expected a list of document ids or {{\"gain\": grade}}")


def parse_rre(content: bytes, *, scale: GradeScale) -> ParseResult:
    result = ParseResult()
    document = read_json(content, result)
    if document is None:
        return result
    if not looks_like_rre(document):
        result.error("expected an object with a `queries` list (RRE ratings.json)")
        return result
    item = 0
    for index, query in enumerate(document["queries"]):
        path = f"queries[{index}]"
        placeholders = query.get("placeholders") if isinstance(query, dict) else None
        text = placeholders.get(QUERY_PLACEHOLDER) if isinstance(placeholders, dict) else None
        if not isinstance(text, str):
            result.error(f'{path}.placeholders: expected "{QUERY_PLACEHOLDER}" with the query '
                         "text")
            continue
        relevant = query.get("relevant_documents", {})
        if not isinstance(relevant, dict):
            result.error(f"{path}.relevant_documents: expected an object")
            continue
        if not relevant:
            result.skipped_count += 1
        for where, doc_id, raw_grade in _pairs(relevant, f"{path}.relevant_documents", result):
            item += 1
            grade = grade_from(raw_grade, scale, where, result)
            if (grade is None or not text_ok(text.strip(), "query", where, result)
                    or not text_ok(doc_id, "document id", where, result)):
                continue
            result.add(ParsedJudgment(item, text.strip(), doc_id, grade), key=None, what="")
            if result.full:
                return result
    if result.skipped_count:
        result.skipped_note = (f"{result.skipped_count} quer"
                               f"{'ies have' if result.skipped_count != 1 else 'y has'} no "
                               "rated documents: skipped.")
    return result


def write_rre(rows: Iterable[tuple[str, str, int]], *, index: str) -> Iterator[str]:
    """ratings.json of (query, doc id, grade) rows, a query a line: each run of rows of one
    query is one entry, its documents grouped by grade from the highest, in their order.
    `index` names the collection. Written a query at a time."""
    yield "{" + _compact({"index": index, "id_field": "id"})[1:-1] + ',"queries":[\n'
    for number, (query, group) in enumerate(groupby(rows, key=lambda row: row[0])):
        grades: dict[int, list[str]] = {}
        for _, doc_id, grade in group:
            grades.setdefault(grade, []).append(doc_id)
        entry = {"placeholders": {QUERY_PLACEHOLDER: query}, "relevant_documents": {
            str(grade): docs for grade, docs in sorted(grades.items(), reverse=True)}}
        yield ("," if number else "") + _compact(entry) + "\n"
    yield "]}\n"


def _compact(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
