"""OpenSearch Search Relevance Workbench judgments (the body of `PUT
_plugins/_search_relevance/judgments` with `"type": "IMPORT_JUDGMENT"`): an object whose
`judgmentRatings` is a list of `{"query": text, "ratings": [{"docId": id, "rating":
"0.700"}]}` (older releases: an object of query text → the ratings list).

Ratings are decimals, often as text. How they become grades of the chosen scale is one of
two stated rules, picked from the whole file (the preview says which, with a table):
- every rating a whole number within the scale (`3.000`): the rating is the grade;
- else every rating within 0..1 (click models, LLM judges): grade = lo + round(rating *
  (hi - lo)), halves up, so 0.700 on 0..3 is 2;
- else the file is refused, naming the first rating outside 0..1.
Errors name the item's path (`judgmentRatings[0].ratings[2].rating`).
"""

import json
import math
from collections.abc import Iterable, Iterator
from itertools import groupby

from judgments.imports import ParsedJudgment, ParseResult, read_json, text_ok
from judgments.scales import GradeScale

NAME = "OpenSearch Workbench judgments JSON"
# Enough rating → grade rows to check a rule by eye.
TABLE_ROWS = 20


def looks_like_workbench(document: object) -> bool:
    return isinstance(document, dict) and "judgmentRatings" in document


def _entries(document: dict, result: ParseResult):
    """(path, query, ratings list) of each query of `judgmentRatings`."""
    ratings = document["judgmentRatings"]
    if isinstance(ratings, dict):
        entries = [(f"judgmentRatings[{json.dumps(query)}]", query, items)
                   for query, items in ratings.items()]
    elif isinstance(ratings, list):
        entries = []
        for index, entry in enumerate(ratings):
            path = f"judgmentRatings[{index}]"
            if not isinstance(entry, dict):
                result.error(f"{path}: expected an object with query and ratings")
                continue
            entries.append((f"{path}.ratings", entry.get("query"), entry.get("ratings")))
    else:
        result.error("judgmentRatings: expected a list of {query, ratings}")
        return
    for path, query, items in entries:
        if not isinstance(query, str):
            result.error(f"{path.removesuffix('.ratings')}.query: expected the query text")
        elif not isinstance(items, list):
            result.error(f"{path}: expected a list of {{docId, rating}}")
        else:
            yield path, query.strip(), items


def _rating(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def grade_rule(ratings: list[tuple[str, float]], scale: GradeScale):
    """(the rule in words, rating → grade) for these (path, rating) pairs, or (the reason
    the file is refused, None)."""
    if all(value.is_integer() and scale.contains(int(value)) for _, value in ratings):
        return (f"Every rating is a whole grade of the {scale.name} scale "
                f"{scale.lo}..{scale.hi}: the rating is the grade (3.000 → 3).", int)
    outside = next(((path, value) for path, value in ratings if not 0 <= value <= 1), None)
    if outside is None:
        width = scale.hi - scale.lo
        return (f"Ratings are 0..1, spread over the {scale.name} scale {scale.lo}..{scale.hi}: "
                f"grade = {scale.lo} + round(rating * {width}), halves up.",
                lambda value: scale.lo + math.floor(value * width + 0.5))
    path, value = outside
    return (f"{path}: rating {value:g} is neither a whole grade of the {scale.name} scale "
            f"{scale.lo}..{scale.hi} nor within 0..1; ratings are read as grades when every "
            "one is a whole grade, else as 0..1 when every one is within 0..1", None)


def parse_workbench(content: bytes, *, scale: GradeScale) -> ParseResult:
    result = ParseResult()
    document = read_json(content, result)
    if document is None:
        return result
    if not looks_like_workbench(document):
        result.error("expected an object with judgmentRatings (Search Relevance Workbench)")
        return result
    found: list[tuple[str, str, str, float]] = []
    for path, query, items in _entries(document, result):
        if not items:
            result.skipped_count += 1
        for index, item in enumerate(items):
            here = f"{path}[{index}]"
            doc_id = item.get("docId") if isinstance(item, dict) else None
            rating = _rating(item.get("rating")) if isinstance(item, dict) else None
            if not isinstance(doc_id, str):
                result.error(f"{here}.docId: expected the document id as text")
            elif rating is None:
                result.error(f"{here}.rating: {json.dumps(item.get('rating'))} is not a number")
            elif text_ok(query, "query", here, result) and text_ok(doc_id.strip(), "docId",
                                                                   here, result):
                found.append((here, query, doc_id.strip(), rating))
    if not found or not result.ok:
        return result
    rule, to_grade = grade_rule([(f"{here}.rating", rating) for here, _, _, rating in found],
                                scale)
    if to_grade is None:
        result.error(rule)
        return result
    result.grade_rule = rule
    result.grade_table = [(f"{rating:.3f}", to_grade(rating))
                          for rating in sorted({rating for *_, rating in found})[:TABLE_ROWS]]
    for item, (_, query, doc_id, rating) in enumerate(found, start=1):
        result.add(ParsedJudgment(item, query, doc_id, to_grade(rating)), key=None, what="")
        if result.full:
            break
    if result.skipped_count:
        result.skipped_note = (f"{result.skipped_count} quer"
                               f"{'ies have' if result.skipped_count != 1 else 'y has'} no "
                               "ratings: skipped.")
    return result


def write_workbench(rows: Iterable[tuple[str, str, int]], *, name: str) -> Iterator[str]:
    """The import body of (query, docId, grade) rows, a query a line (each run of rows of
    one query is one entry), ratings written as the Workbench writes them (`"2.000"`),
    which read back as whole grades. Written a query at a time."""
    head = {"name": name, "description": "Exported from SearchTweak", "type": "IMPORT_JUDGMENT"}
    yield "{" + _compact(head)[1:-1] + ',"judgmentRatings":[\n'
    for number, (query, group) in enumerate(groupby(rows, key=lambda row: row[0])):
        entry = {"query": query, "ratings": [{"docId": doc_id, "rating": f"{grade:.3f}"}
                                             for _, doc_id, grade in group]}
        yield ("," if number else "") + _compact(entry) + "\n"
    yield "]}\n"


def _compact(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
