"""``python -m metrics.conformance``: docs/METRICS.md's JSON Lines interface to the engine.

Reads one JSON object per line on stdin and writes, in order and flushed line by line,
``{"id", "value"}`` (a full-precision float or null) or ``{"id", "error"}`` (a message that
names the field). Exits 0 even when lines are errors, malformed JSON included. Unknown
keys (``why``, ``expect``, ...) are ignored. No Django: this runs on the core alone.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Hashable
from typing import IO, Any

from metrics.core import (
    MetricInputError,
    evaluate_keywords,
    mean_over_keywords,
    metric_spec,
    rbo,
    resolve_scale,
)

_ID_PATTERN = re.compile(r'"id"\s*:\s*("(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?)')


def evaluate_line(line: str) -> dict[str, Any]:
    """The output object for one input line."""
    try:
        case = json.loads(line)
    except ValueError as error:
        return {"id": _salvage_id(line), "error": f"line: not valid JSON ({error})"}
    if not isinstance(case, dict):
        return {"id": None, "error": "line: must be a JSON object"}
    case_id = case.get("id")
    try:
        value = evaluate_case(case)
    except MetricInputError as error:
        return {"id": case_id, "error": str(error)}
    except Exception as error:  # a bug must not stop the stream; say which line hit it
        return {"id": case_id, "error": f"internal error: {type(error).__name__}: {error}"}
    return {"id": case_id, "value": None if value is None or math.isnan(value) else value}


def evaluate_case(case: dict[str, Any]) -> float | None:
    """The value of one parsed case: a keyword, a mean over keywords, or RBO."""
    if "metric" not in case:
        raise MetricInputError("metric", "required")
    if case["metric"] == "rbo":
        return _rbo_case(case)
    spec = metric_spec(case["metric"])
    if "k" not in case:
        raise MetricInputError("k", "required")
    if "scale" not in case:
        raise MetricInputError("scale", "required")
    scale = resolve_scale(case["scale"])
    has_results, has_keywords = "results" in case, "keywords" in case
    if has_results == has_keywords:
        raise MetricInputError("results", "give either results or keywords")
    if has_keywords:
        if "pool" in case:
            raise MetricInputError("pool", "not allowed with keywords")
        keywords = _list(case["keywords"], "keywords")
        parsed = [_results(results, "keywords") for results in keywords]
        pools = None
    else:
        parsed = [_results(case["results"], "results")]
        pools = [_results(_list(case.get("pool", []), "pool"), "pool")]
    values = evaluate_keywords(
        spec.code,
        [[grades for _doc, grades in results] for results in parsed],
        k=case["k"],
        scale=scale,
        params=case.get("params"),
        transformers=case.get("transformers"),
        pools=pools,
        doc_ids=[[doc for doc, _grades in results] for results in parsed],
    )
    if has_keywords:
        return mean_over_keywords(values)[0]
    return float(values[0])


def _rbo_case(case: dict[str, Any]) -> float:
    if "k" not in case:
        raise MetricInputError("k", "required")
    lists = []
    for name in ("a", "b"):
        if name not in case:
            raise MetricInputError(name, "required")
        items = _list(case[name], name)
        for item in items:
            if isinstance(item, bool) or not isinstance(item, str | int):
                raise MetricInputError(name, f"document id {item!r} is not a string")
        lists.append(items)
    return rbo(lists[0], lists[1], k=case["k"], p=case.get("p", 0.9))


def _list(value: Any, field: str) -> list[Any]:
    if not isinstance(value, list):
        raise MetricInputError(field, "must be a list")
    return value


def _results(value: Any, field: str) -> list[tuple[Hashable, Any]]:
    """[{"doc", "grades"}, ...] → [(doc, grades)]; a missing doc is a document of its own."""
    entries = []
    for position, entry in enumerate(_list(value, field)):
        if not isinstance(entry, dict):
            raise MetricInputError(field, f"entry {position + 1} is not an object")
        if "grades" not in entry:
            raise MetricInputError("grades", f"{field} entry {position + 1} has no grades")
        doc = entry.get("doc", ("position", field, position))
        if isinstance(doc, bool) or not isinstance(doc, str | int | tuple):
            raise MetricInputError(f"{field}.doc", f"{doc!r} is not a document id")
        entries.append((doc, entry["grades"]))
    return entries


def _salvage_id(line: str) -> Any:
    match = _ID_PATTERN.search(line)
    if not match:
        return None
    try:
        return json.loads(match.group(1))
    except ValueError:
        return None


def run(stdin: IO[str], stdout: IO[str]) -> int:
    """Answer every line of ``stdin`` on ``stdout``; always 0."""
    for line in stdin:
        output = evaluate_line(line.rstrip("\r\n")) if line.strip() else {
            "id": None, "error": "line: empty"
        }
        stdout.write(json.dumps(output, allow_nan=False) + "\n")
        stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(run(sys.stdin, sys.stdout))
