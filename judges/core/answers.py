"""A model's answer checked pair by pair: every document of the batch ends up accepted
(id, grade, reason) or rejected with a reason, never silently dropped.

One bad pair never costs the others: a duplicate, missing, out-of-scale or mistyped
entry rejects that pair only; only an answer that cannot be read at all (no JSON object
with a "grades" list) rejects the whole batch, each pair with that reason.

Strict types, as docs/METRICS.md reads grades: a grade is an integer (2, or 2.0, which
JSON does not tell apart from 2); "2", 2.5, true and null are wrong types, not guesses.
Ids are the strings the prompt gave; an entry with another id, or with no string id,
names no pair of the batch and is kept as a stray (the pair it meant is then missing).
A reason is required, as the schema asks: a grade nobody can account for is not stored.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from metrics_engine.scales import is_integer

_FENCE = re.compile(r"```[A-Za-z]*[ \t]*\n?(.*?)```", re.DOTALL)
# Where a model wrapped its JSON in prose, try at most this many "{" as starting points.
MAX_OBJECT_STARTS = 200


class Rejection(StrEnum):
    MALFORMED = "malformed"
    """The whole answer could not be read; every pair of the batch carries it."""
    MISSING = "missing"
    DUPLICATE = "duplicate"
    INCOMPLETE = "incomplete"
    """The entry lacks its grade or its reason."""
    WRONG_TYPE = "wrong_type"
    OUT_OF_SCALE = "out_of_scale"
    UNKNOWN_ID = "unknown_id"
    """Only on strays: an entry that names no document of the batch."""


@dataclass(frozen=True)
class Accepted:
    id: str
    grade: int
    reason: str


@dataclass(frozen=True)
class Rejected:
    id: str
    code: Rejection
    detail: str


@dataclass(frozen=True)
class Stray:
    """An entry that belongs to no pair of the batch, kept for the call log."""

    entry: Any
    code: Rejection
    detail: str


@dataclass(frozen=True)
class Verdict:
    """Every id of the batch is in exactly one of ``accepted`` and ``rejected``, both in
    the batch's order."""

    accepted: tuple[Accepted, ...]
    rejected: tuple[Rejected, ...]
    strays: tuple[Stray, ...] = ()


def extract_json(text: str) -> Any:
    """The JSON a model meant: the whole text, else a ```json fence, else the first object
    in the prose that has "grades" (or the first object at all). Raises ValueError."""
    stripped = text.strip()
    try:
        return json.loads(stripped)
    except ValueError:
        pass
    for fenced in _FENCE.findall(stripped):
        try:
            return json.loads(fenced.strip())
        except ValueError:
            continue
    decoder = json.JSONDecoder()
    first_object = None
    starts = [match.start() for match in re.finditer(r"\{", stripped)][:MAX_OBJECT_STARTS]
    for start in starts:
        try:
            value, _ = decoder.raw_decode(stripped, start)
        except ValueError:
            continue
        if isinstance(value, dict):
            if "grades" in value:
                return value
            first_object = value if first_object is None else first_object
    if first_object is not None:
        return first_object
    raise ValueError("the answer holds no JSON object")


def validate_answer(answer: str | Mapping[str, Any] | Any, *, ids: Sequence[str],
                    grades: Collection[int]) -> Verdict:
    """Check ``answer`` (text, or JSON already parsed) against the batch's ``ids`` and the
    scale's allowed ``grades``."""
    if len(set(ids)) != len(ids):
        raise ValueError("the batch's ids must be unique")
    try:
        data = extract_json(answer) if isinstance(answer, str) else answer
    except ValueError as error:
        return _all_rejected(ids, f"the answer is not JSON: {error}")
    except RecursionError:
        return _all_rejected(ids, "the answer nests its JSON too deeply to read")
    if not isinstance(data, Mapping):
        return _all_rejected(ids, 'the answer is not a JSON object with "grades"')
    entries = data.get("grades")
    if not isinstance(entries, list):
        return _all_rejected(ids, 'the answer has no "grades" list')

    wanted = set(ids)
    by_id: dict[str, list[Any]] = {}
    strays: list[Stray] = []
    for entry in entries:
        entry_id = entry.get("id") if isinstance(entry, Mapping) else None
        if not isinstance(entry, Mapping):
            strays.append(Stray(entry, Rejection.WRONG_TYPE, "an entry is not an object"))
        elif not isinstance(entry_id, str):
            strays.append(Stray(entry, Rejection.WRONG_TYPE,
                                f"id {entry_id!r} is not a string" if "id" in entry
                                else "an entry has no id"))
        elif entry_id not in wanted:
            strays.append(Stray(entry, Rejection.UNKNOWN_ID,
                                f"id {entry_id!r} is not a document of the batch"))
        else:
            by_id.setdefault(entry_id, []).append(entry)

    accepted, rejected = [], []
    for doc_id in ids:
        found = by_id.get(doc_id, [])
        if not found:
            rejected.append(Rejected(doc_id, Rejection.MISSING, "the answer has no grade for it"))
        elif len(found) > 1:
            rejected.append(Rejected(doc_id, Rejection.DUPLICATE,
                                     f"the answer grades it {len(found)} times"))
        else:
            outcome = _check_entry(doc_id, found[0], grades)
            (accepted if isinstance(outcome, Accepted) else rejected).append(outcome)
    return Verdict(tuple(accepted), tuple(rejected), tuple(strays))


def _check_entry(doc_id: str, entry: Mapping[str, Any],
                 grades: Collection[int]) -> Accepted | Rejected:
    absent = [name for name in ("grade", "reason") if name not in entry]
    if absent:
        return Rejected(doc_id, Rejection.INCOMPLETE, f"no {' and no '.join(absent)}")
    grade, reason = entry["grade"], entry["reason"]
    if not is_integer(grade):
        return Rejected(doc_id, Rejection.WRONG_TYPE,
                        f"grade {json.dumps(grade)} is not an integer")
    if int(grade) not in grades:
        allowed = sorted(grades)
        span = f"{allowed[0]}..{allowed[-1]}" if allowed else "none"
        return Rejected(doc_id, Rejection.OUT_OF_SCALE, f"grade {int(grade)} is outside {span}")
    if not isinstance(reason, str):
        return Rejected(doc_id, Rejection.WRONG_TYPE,
                        f"reason {json.dumps(reason)} is not a string")
    return Accepted(doc_id, int(grade), reason)


def _all_rejected(ids: Sequence[str], detail: str) -> Verdict:
    return Verdict((), tuple(Rejected(doc_id, Rejection.MALFORMED, detail) for doc_id in ids))


def rejection_counts(verdict: Verdict) -> Counter[Rejection]:
    """How many pairs each rejection reason cost, for a run's failure figures."""
    return Counter(rejected.code for rejected in verdict.rejected)
