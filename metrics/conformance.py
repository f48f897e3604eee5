"""``python -m metrics.conformance``: docs/METRICS.md's JSON Lines interface to the engine.

Reads one JSON object per line on stdin and writes, in order and flushed line by line,
``{"id", "value"}`` (a full-precision float or null) or ``{"id", "error"}`` (a message that
names the field). ``"weights"`` beside ``keywords`` makes the mean weighted; a line with
``"segments": "traffic"`` gets each keyword's traffic segment instead of a value
(docs/METRICS.md, "Weighted means and segments"). A line with ``"bounds": true`` also gets
``"lower"`` and ``"upper"``: the exact extremes over every completion of its ungraded
slots (docs/METRICS.md, "Bounds under missing grades"). Exits 0 even when lines are errors,
malformed JSON included. Unknown keys (``why``, ``expect``, ...) are ignored. No Django:
this runs on the core alone.
"""

from __future__ import annotations

import itertools
import json
import math
import re
import sys
from collections.abc import Hashable
from dataclasses import dataclass
from typing import IO, Any

from metrics_engine import (
    KeywordBounds,
    MetricInputError,
    Scale,
    bounds_mean,
    evaluate_keywords,
    metric_spec,
    rbo,
    resolve_scale,
)
from metrics_engine.weighted import (
    DEFAULT_CUTS,
    traffic_segments,
    validate_cuts,
    validate_weights,
    weighted_mean,
)

_ID_PATTERN = re.compile(r'"id"\s*:\s*("(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?)')
# Exact bounds enumerate every completion of a keyword's ungraded slots; past this many the
# line is an error rather than a stream that stalls for minutes.
MAX_COMPLETIONS = 1 << 20
# Completions are evaluated as one batch of "keywords" this many at a time.
_COMPLETION_CHUNK = 4096


@dataclass(frozen=True)
class Answer:
    """A case's value and, when ``"bounds": true`` asked for them, its bounds."""

    value: float | None
    lower: float | None = None
    upper: float | None = None


def evaluate_line(line: str) -> dict[str, Any]:
    """The output object for one input line."""
    try:
        case = json.loads(line)
    except ValueError as error:
        return {"id": _salvage_id(line), "error": f"line: not valid JSON ({error})"}
    if not isinstance(case, dict):
        return {"id": None, "error": "line: must be a JSON object"}
    case_id = case.get("id")
    if "segments" in case:
        try:
            return {"id": case_id, "segments": _segments_case(case)}
        except MetricInputError as error:
            return {"id": case_id, "error": str(error)}
    try:
        answer = evaluate_case_with_bounds(case)
    except MetricInputError as error:
        return {"id": case_id, "error": str(error)}
    except Exception as error:  # a bug must not stop the stream; say which line hit it
        return {"id": case_id, "error": f"internal error: {type(error).__name__}: {error}"}
    output: dict[str, Any] = {"id": case_id, "value": _null(answer.value)}
    if case.get("bounds") is True:
        output.update(lower=_null(answer.lower), upper=_null(answer.upper))
    return output


def _null(value: float | None) -> float | None:
    return None if value is None or math.isnan(value) else float(value)


def evaluate_case(case: dict[str, Any]) -> float | None:
    """The value of one parsed case: a keyword, a mean over keywords, or RBO."""
    return evaluate_case_with_bounds({**case, "bounds": False}).value


def evaluate_case_with_bounds(case: dict[str, Any]) -> Answer:
    """The value of one parsed case and, when it says ``"bounds": true``, its bounds."""
    if "metric" not in case:
        raise MetricInputError("metric", "required")
    wants_bounds = case.get("bounds", False)
    if not isinstance(wants_bounds, bool):
        raise MetricInputError("bounds", "must be true or false")
    if case["metric"] == "rbo":
        if wants_bounds:
            raise MetricInputError("bounds", "RBO compares rankings; it has no grades to bound")
        return Answer(_rbo_case(case))
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
        weights = validate_weights(case.get("weights", [1] * len(parsed)), len(parsed))
    else:
        if "weights" in case:
            raise MetricInputError("weights", "weights a mean: give keywords")
        parsed = [_results(case["results"], "results")]
        pools = [_results(_list(case.get("pool", []), "pool"), "pool")]
    def evaluate(
        keywords: list[list[tuple[Hashable, Any]]],
        keyword_pools: list[list[tuple[Hashable, Any]]] | None,
    ) -> Any:
        return evaluate_keywords(
            spec.code,
            [[grades for _doc, grades in results] for results in keywords],
            k=case["k"],
            scale=scale,
            params=case.get("params"),
            transformers=case.get("transformers"),
            pools=keyword_pools,
            doc_ids=[[doc for doc, _grades in results] for results in keywords],
        )

    values = evaluate(parsed, pools)
    value = weighted_mean(values, weights) if has_keywords else _null(float(values[0]))
    if not wants_bounds:
        return Answer(value)
    keyword_bounds = [
        _keyword_bounds(results, [] if pools is None else pools[index], scale, evaluate)
        for index, results in enumerate(parsed)
    ]
    if not has_keywords:
        return Answer(value, *keyword_bounds[0])
    mean = bounds_mean((KeywordBounds(lower, upper, True) for lower, upper in keyword_bounds),
                       weights)
    return Answer(value, mean.lower, mean.upper)


def _segments_case(case: dict[str, Any]) -> list[str]:
    if case["segments"] != "traffic":
        raise MetricInputError("segments", "the one kind is \"traffic\"")
    weights = _list(case.get("weights"), "weights")
    cuts = validate_cuts(case.get("cuts", list(DEFAULT_CUTS)))
    return traffic_segments(validate_weights(weights, len(weights)), cuts)


def _keyword_bounds(
    results: list[tuple[Hashable, Any]],
    pool: list[tuple[Hashable, Any]],
    scale: Scale,
    evaluate: Any,
) -> tuple[float | None, float | None]:
    """Min and max of the keyword's value over every completion of its null slots.

    Every null slot of the results and of the pool takes each grade of the scale on its own
    (slots are never added or removed); completions whose value is null are left out.
    """
    entries = [(doc, grades) for doc, grades in results] + [(doc, grades) for doc, grades in pool]
    holes = [
        (entry, slot)
        for entry, (_doc, grades) in enumerate(entries)
        if isinstance(grades, list)
        for slot, grade in enumerate(grades)
        if grade is None
    ]
    grade_values = list(range(scale.lo, scale.hi + 1))
    completion_count = len(grade_values) ** len(holes)
    if completion_count > MAX_COMPLETIONS:
        raise MetricInputError(
            "bounds",
            f"{len(holes)} ungraded slots on a scale of {len(grade_values)} grades are "
            f"{completion_count} completions, more than the {MAX_COMPLETIONS} this command "
            "enumerates exactly",
        )
    completions = itertools.product(grade_values, repeat=len(holes))
    lower = upper = None
    while chunk := list(itertools.islice(completions, _COMPLETION_CHUNK)):
        keywords, keyword_pools = [], []
        for completion in chunk:
            filled = [(doc, list(grades) if isinstance(grades, list) else grades)
                      for doc, grades in entries]
            for (entry, slot), grade in zip(holes, completion, strict=True):
                filled[entry][1][slot] = grade
            keywords.append(filled[: len(results)])
            keyword_pools.append(filled[len(results):])
        for completed in evaluate(keywords, keyword_pools):
            if math.isnan(completed):
                continue
            lower = completed if lower is None else min(lower, completed)
            upper = completed if upper is None else max(upper, completed)
    return _null(lower), _null(upper)


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
