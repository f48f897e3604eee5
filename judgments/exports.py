"""An evaluation's judgments and results in the formats the field uses.

- `json`: one object per feedback slot (keyword, doc, position, grader, grade, graded_at,
  ..., grader_kind, reason).
- `csv`: `keyword,doc_id,grade`, one line per (keyword, document) with the slots'
  grades aggregated on the evaluation's scale exactly as the metrics aggregate them
  (metrics.core stage 1: a majority vote on the binary scale, the arithmetic mean on the
  others). A pair whose aggregate is null (nothing graded yet, or a binary tie) is left
  out, since no grade can stand for it. Means are written as they are (2.3333).
- `csv` with `per_grader`: `keyword,doc_id,grade,grader,grader_kind,reason`, one line per
  graded slot; a grade copied from the team's imported judgments names the grader
  `(import)`.
- `grader_kind` says who gave a grade: `person`, or `judge` for an LLM judge's account
  (User.is_judge); empty (null in JSON) when no account holds the slot (an imported
  grade, an empty slot). `reason` is the judge's reason, empty for a person. Both come
  last, after the columns earlier exports had, so readers of those keep working.
- `trec` (qrels): `qid 0 docid grade`, the aggregate rounded half up to an integer
  (trec_eval reads integer relevance), null aggregates left out. `qid` is the keyword's
  position in the evaluation; `trec_mapping` lists `qid<TAB>keyword` for every keyword.
- `trec_run`: `qid Q0 docid rank score tag` for every fetched result, score = number of
  results - rank + 1 (higher is better, as trec_eval sorts by score), tag `searchtweak-<id>`.
Documents whose id contains whitespace cannot be written in the TREC formats faithfully;
such characters are replaced by `_` there (CSV and JSON keep them). A CSV cell that a
spreadsheet would run as a formula (`=...`, `+...`, `@...`) starts with an apostrophe
(searchtweak.csv_cells); the CSV import takes it off again.

Each download is named for what it holds (`filename`), so several exports of several
evaluations can sit side by side in a downloads folder.
"""

import math
from collections import defaultdict
from dataclasses import dataclass
from datetime import date

import numpy as np
from django.utils import timezone
from django.utils.text import slugify

from evaluations.models import Evaluation, Keyword, Snapshot
from judgments import scales as scale_lookup
from judgments.models import FeedbackSlot
from metrics import core
from metrics.core.aggregate import Aggregation
from searchtweak.csv_cells import csv_text

FORMATS = ("json", "csv", "trec", "trec_mapping", "trec_run")


# What each format's file is called after "searchtweak-<evaluation>-", and its extension.
_FILE_PARTS = {
    "json": ("judgments", "json"),
    "csv": ("judgments", "csv"),
    "trec": ("judgments", "trec"),
    "trec_mapping": ("qid-mapping", "tsv"),
    "trec_run": ("run", "run"),
}


def filename(evaluation: Evaluation, kind: str, *, per_grader: bool = False,
             on: date | None = None) -> str:
    """`searchtweak-<slug of the name, else the id>-<what>-<YYYYMMDD>.<ext>`, e.g.
    `searchtweak-shoes-q3-judgments-20260105.csv`; the date is the day of the export."""
    what, extension = _FILE_PARTS[kind]
    if kind == "csv" and per_grader:
        what = "judgments-per-grader"
    name = slugify(evaluation.name)[:60].strip("-") or str(evaluation.pk)
    day = (on or timezone.localdate()).strftime("%Y%m%d")
    return f"searchtweak-{name}-{what}-{day}.{extension}"


def is_partial(evaluation: Evaluation) -> bool:
    """Judgments of an evaluation that is not finished may still change."""
    return evaluation.status != Evaluation.Status.FINISHED


def _slots(evaluation: Evaluation):
    return (
        FeedbackSlot.objects.filter(evaluation=evaluation)
        .select_related("keyword", "snapshot", "user")
        .order_by("keyword__position", "snapshot__position", "index")
    )


# The grader named for a grade copied from the team's imported judgments: they have no
# person. Parentheses cannot occur in a username, so it never names a real grader.
IMPORT_GRADER = "(import)"


def grader_name(slot: FeedbackSlot) -> str | None:
    if slot.user is not None:
        return slot.user.username
    return IMPORT_GRADER if slot.reused_from_pool_id is not None else None


def grader_kind(slot: FeedbackSlot) -> str | None:
    return slot.user.grader_kind if slot.user is not None else None


def judgments_json(evaluation: Evaluation) -> dict:
    return {
        "evaluation": evaluation.pk,
        "name": evaluation.name,
        "scale": evaluation.scale,
        "status": evaluation.status,
        "partial": is_partial(evaluation),
        "judgments": [
            {
                "keyword": slot.keyword.text,
                "keyword_position": slot.keyword.position,
                "doc_id": slot.snapshot.doc_id,
                "position": slot.snapshot.position,
                "slot": slot.index,
                "grader": grader_name(slot),
                "grade": slot.grade,
                "graded_at": slot.graded_at.isoformat() if slot.graded_at else None,
                "unsure": slot.unsure,
                "reused": slot.reused_from_id is not None or slot.reused_from_pool_id is not None,
                "grader_kind": grader_kind(slot),
                "reason": slot.reason,
            }
            for slot in _slots(evaluation).iterator(chunk_size=5000)
        ],
    }


@dataclass(frozen=True)
class AggregatedJudgment:
    keyword: Keyword
    doc_id: str
    value: float


def _core_scale(evaluation: Evaluation) -> core.Scale:
    scale = scale_lookup.scale_for_team(team_id=evaluation.team_id, code=evaluation.scale)
    if scale is None:
        raise ValueError(f"unknown scale {evaluation.scale!r}")
    return scale.core_scale()


def aggregated(evaluation: Evaluation) -> list[AggregatedJudgment]:
    """One aggregate per (keyword, document) in keyword then first-position order; a
    document returned twice for a keyword pools the grades of both positions."""
    scale = _core_scale(evaluation)
    aggregation = Aggregation(scale, scale, {grade: grade for grade in scale.grades})
    grades: dict[tuple[int, str], list[float]] = defaultdict(list)
    keywords: dict[int, Keyword] = {}
    for slot in _slots(evaluation).filter(grade__isnull=False).iterator(chunk_size=5000):
        keywords[slot.keyword_id] = slot.keyword
        grades[(slot.keyword_id, slot.snapshot.doc_id)].append(float(slot.grade))
    if not grades:
        return []
    width = max(len(values) for values in grades.values())
    block = np.full((len(grades), width), np.nan)
    for row, values in enumerate(grades.values()):
        block[row, : len(values)] = values
    values = aggregation.aggregate(block)
    return [
        AggregatedJudgment(keywords[keyword_id], doc_id, float(value))
        for ((keyword_id, doc_id), value) in zip(grades, values, strict=True)
        if not math.isnan(value)
    ]


def format_value(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.4f}".rstrip("0")


def judgments_csv(evaluation: Evaluation) -> str:
    return csv_text([["keyword", "doc_id", "grade"]] + [
        [item.keyword.text, item.doc_id, format_value(item.value)]
        for item in aggregated(evaluation)
    ])


def judgments_csv_per_grader(evaluation: Evaluation) -> str:
    return csv_text([["keyword", "doc_id", "grade", "grader", "grader_kind", "reason"]] + [
        [slot.keyword.text, slot.snapshot.doc_id, slot.grade, grader_name(slot) or "",
         grader_kind(slot) or "", slot.reason]
        for slot in _slots(evaluation).filter(grade__isnull=False).iterator(chunk_size=5000)
    ])


def _trec_token(value: str) -> str:
    return "_".join(value.split()) or "_"


def qrels(evaluation: Evaluation) -> str:
    return "".join(
        f"{item.keyword.position} 0 {_trec_token(item.doc_id)} {math.floor(item.value + 0.5)}\n"
        for item in aggregated(evaluation)
    )


def trec_mapping(evaluation: Evaluation) -> str:
    return "".join(
        f"{position}\t{' '.join(text.split())}\n"
        for position, text in evaluation.keywords.order_by("position").values_list(
            "position", "text")
    )


def trec_run(evaluation: Evaluation) -> str:
    tag = f"searchtweak-{evaluation.pk}"
    snapshots = (
        Snapshot.objects.filter(keyword__evaluation=evaluation)
        .order_by("keyword__position", "position")
        .values_list("keyword__position", "position", "doc_id")
    )
    by_keyword: dict[int, list[tuple[int, str]]] = defaultdict(list)
    for keyword_position, position, doc_id in snapshots:
        by_keyword[keyword_position].append((position, doc_id))
    lines = []
    for keyword_position, results in by_keyword.items():
        for rank, (_position, doc_id) in enumerate(results, start=1):
            score = len(results) - rank + 1
            lines.append(f"{keyword_position} Q0 {_trec_token(doc_id)} {rank} {score} {tag}\n")
    return "".join(lines)
