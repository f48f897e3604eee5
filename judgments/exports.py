"""An evaluation's judgments and results in the formats the field uses.

- `json`: one object per feedback slot (keyword, doc, position, grader, grade, graded_at,
  unsure, note, ..., grader_kind, reason).
- `jsonl` (JSON Lines): the same objects as `json`'s `judgments`, one per line (UTF-8,
  compact, keyword then position then slot order), without the envelope: a reader takes a
  line at a time, and the server writes it a line at a time.
- `csv`: `keyword,doc_id,grade`, one line per (keyword, document) with the slots'
  grades aggregated on the evaluation's scale exactly as the metrics aggregate them
  (metrics_engine stage 1: a majority vote on the binary scale, the arithmetic mean on the
  others). A pair whose aggregate is null (nothing graded yet, or a binary tie) is left
  out, since no grade can stand for it. Means are written as they are (2.3333).
  This file is for reading, not for importing back: a mean is not a grade.
- `csv` with `per_grader`: the per-slot format, the one that imports back losslessly
  (judgments.imports): a header line `keyword,doc_id,grade,grader,grader_kind,reason,
  unsure,note,position,graded_at` (SLOT_COLUMNS), then one line per graded slot in
  keyword, position, slot order. A grade copied from the team's imported judgments names
  the grader `(import)`. `unsure` is `true` or `false`, `note` the grader's unsure note,
  `position` the result's position, `graded_at` ISO 8601 in UTC. The team's pool exports
  the same columns (`pool_slots_csv`), so export → pool import → pool export gives the
  same bytes.
- `grader_kind` says who gave a grade: `person`, or `judge` for an LLM judge's account
  (User.is_judge); empty (null in JSON) when no account holds the slot (an imported
  grade, an empty slot). `reason` is the judge's reason, empty for a person. Both come
  last, after the columns earlier exports had, so readers of those keep working.
- `trec` (qrels): `qid 0 docid grade`, the aggregate rounded half up to an integer
  (trec_eval reads integer relevance), null aggregates left out. `qid` is the keyword's
  position in the evaluation; `trec_mapping` lists `qid<TAB>keyword` for every keyword.
- `trec_run`: `qid Q0 docid rank score tag` for every fetched result, score = number of
  results - rank + 1 (higher is better, as trec_eval sorts by score), tag `searchtweak-<id>`.
- `run_jsonl`: the snapshots as an offline model's run reads them back
  (evaluations.offline_runs.parsing): `{"keyword": …, "results": [{"doc_id", "name",
  "image" (when set), …fields}]}` a fetched keyword, in position order; a keyword that
  returned nothing has `"results": []`, so it imports as returning nothing again.
- Other tools' formats (judgments.formats, which the import reads back): `quepid_csv`
  (Quepid basic CSV), `rre` (RRE ratings.json as Quepid exports it), `ltr` (`grade qid:N #
  docid query`), `workbench` (OpenSearch Search Relevance Workbench judgments). They hold
  one grade a (keyword, document): for an evaluation the aggregate rounded half up as in
  `trec`; for the team's pool each imported row, in import order. An evaluation's Quepid
  CSV lists a keyword with no graded result as `keyword,,`, as Quepid does.
Documents whose id contains whitespace cannot be written in the TREC formats faithfully;
such characters are replaced by `_` there (CSV and JSON keep them). A CSV cell that a
spreadsheet would run as a formula (`=...`, `+...`, `@...`) starts with an apostrophe
(searchtweak.csv_cells); the CSV import takes it off again.

Each download is named for what it holds (`filename`), so several exports of several
evaluations can sit side by side in a downloads folder.

Every format is written as a stream (`*_stream`: pieces of text, read from the database
`EXPORT_CHUNK` rows at a time), so exporting a million judgments holds a chunk of rows and
one piece of text, not the file; the string functions join the same pieces.
Aggregates are computed a block of keywords at a time: a (keyword, document) pair's grades
all come from one keyword, and slots arrive in keyword order.
"""

import math
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import NamedTuple

import numpy as np
from django.utils import timezone
from django.utils.text import slugify

import metrics_engine as core
from evaluations.models import Evaluation
from judgments import scales as scale_lookup
from judgments.export_text import EXPORT_CHUNK, compact_json
from judgments.export_text import trec_token as _trec_token
from judgments.formats import write
from judgments.models import FeedbackSlot, PoolJudgment
from judgments.run_exports import run_jsonl_stream, trec_run_stream
from metrics_engine.aggregate import Aggregation
from searchtweak.csv_cells import csv_lines, csv_text, text_pieces
from searchtweak.models import User

FOREIGN_FORMATS = write.KINDS
FORMATS = ("json", "jsonl", "csv", "trec", "trec_mapping", "trec_run", "run_jsonl",
           *FOREIGN_FORMATS)
CONTENT_TYPES = {
    "json": "application/json",
    "jsonl": "application/jsonl; charset=utf-8",
    "csv": "text/csv; charset=utf-8",
    "trec": "text/plain; charset=utf-8",
    "trec_mapping": "text/plain; charset=utf-8",
    "trec_run": "text/plain; charset=utf-8",
    "run_jsonl": "application/jsonl; charset=utf-8",
    "quepid_csv": "text/csv; charset=utf-8",
    "rre": "application/json",
    "ltr": "text/plain; charset=utf-8",
    "workbench": "application/json",
}

# What each format's file is called after "searchtweak-<evaluation>-", and its extension.
_FILE_PARTS = {
    "json": ("judgments", "json"),
    "jsonl": ("judgments", "jsonl"),
    "csv": ("judgments", "csv"),
    "trec": ("judgments", "trec"),
    "trec_mapping": ("qid-mapping", "tsv"),
    "trec_run": ("run", "run"),
    "run_jsonl": ("run", "jsonl"),
    "quepid_csv": ("quepid-ratings", "csv"),
    "rre": ("rre-ratings", "json"),
    "ltr": ("ltr-judgments", "txt"),
    "workbench": ("workbench-judgments", "json"),
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


def pool_filename(*, team_name: str, team_id: int, scale: str, on: date | None = None,
                  kind: str = "csv") -> str:
    """`searchtweak-pool-<team slug>-<scale>-<YYYYMMDD>.csv` (the per-slot CSV), or for
    another tool's format `...-<scale>-<what>-<YYYYMMDD>.<ext>`."""
    name = slugify(team_name)[:60].strip("-") or str(team_id)
    day = (on or timezone.localdate()).strftime("%Y%m%d")
    if kind == "csv":
        return f"searchtweak-pool-{name}-{scale}-{day}.csv"
    what, extension = _FILE_PARTS[kind]
    return f"searchtweak-pool-{name}-{scale}-{what}-{day}.{extension}"


def is_partial(evaluation: Evaluation) -> bool:
    """Judgments of an evaluation that is not finished may still change."""
    return evaluation.status != Evaluation.Status.FINISHED


class SlotRow(NamedTuple):
    """What an export writes of one feedback slot, read as a value row: a million slot
    objects with their keyword, snapshot and user cost several times the rows."""

    keyword: str
    keyword_position: int
    doc_id: str
    position: int
    index: int
    username: str | None
    is_judge: bool | None
    grade: int | None
    graded_at: datetime | None
    unsure: bool
    note: str
    reused_from_id: int | None
    reused_from_pool_id: int | None
    reason: str


_SLOT_FIELDS = ("keyword__text", "keyword__position", "snapshot__doc_id", "snapshot__position",
                "index", "user__username", "user__is_judge", "grade", "graded_at", "unsure",
                "note", "reused_from_id", "reused_from_pool_id", "reason")


def _slot_rows(evaluation: Evaluation, *, graded: bool = False) -> Iterator[SlotRow]:
    """The evaluation's slots (with a grade, if `graded`) in keyword, position, slot order,
    EXPORT_CHUNK rows at a time."""
    slots = FeedbackSlot.objects.filter(evaluation=evaluation)
    if graded:
        slots = slots.filter(grade__isnull=False)
    rows = slots.order_by("keyword__position", "snapshot__position", "index").values_list(
        *_SLOT_FIELDS)
    return (SlotRow(*row) for row in rows.iterator(chunk_size=EXPORT_CHUNK))


# The grader named for a grade copied from the team's imported judgments: they have no
# person. Parentheses cannot occur in a username, so it never names a real grader.
IMPORT_GRADER = "(import)"


def grader_name(slot: SlotRow) -> str | None:
    if slot.username is not None:
        return slot.username
    return IMPORT_GRADER if slot.reused_from_pool_id is not None else None


def grader_kind(slot: SlotRow) -> str | None:
    if slot.username is None:
        return None
    return User.KIND_JUDGE if slot.is_judge else User.KIND_PERSON


def _slot_object(slot: SlotRow) -> dict:
    return {
        "keyword": slot.keyword,
        "keyword_position": slot.keyword_position,
        "doc_id": slot.doc_id,
        "position": slot.position,
        "slot": slot.index,
        "grader": grader_name(slot),
        "grade": slot.grade,
        "graded_at": slot.graded_at.isoformat() if slot.graded_at else None,
        "unsure": slot.unsure,
        "note": slot.note,
        "reused": slot.reused_from_id is not None or slot.reused_from_pool_id is not None,
        "grader_kind": grader_kind(slot),
        "reason": slot.reason,
    }


def _envelope(evaluation: Evaluation) -> dict:
    return {
        "evaluation": evaluation.pk,
        "name": evaluation.name,
        "scale": evaluation.scale,
        "status": evaluation.status,
        "partial": is_partial(evaluation),
    }


def judgments_json(evaluation: Evaluation) -> dict:
    """The `json` export as one object (scripts and tests; the API streams
    judgments_json_stream, the same document as text)."""
    return {**_envelope(evaluation),
            "judgments": [_slot_object(slot) for slot in _slot_rows(evaluation)]}


def judgments_json_stream(evaluation: Evaluation) -> Iterator[str]:
    """judgments_json as the API's JSON renderer writes it, byte for byte, a slot at a
    time: a million judgments cost a chunk of rows, not the document."""
    head = compact_json(_envelope(evaluation))
    slots = _slot_rows(evaluation)

    def lines() -> Iterator[str]:
        yield head[:-1] + ',"judgments":['
        for index, slot in enumerate(slots):
            yield ("," if index else "") + compact_json(_slot_object(slot))
        yield "]}"

    return text_pieces(lines())


def judgments_jsonl_stream(evaluation: Evaluation) -> Iterator[str]:
    """`json`'s judgments, one compact object a line, as the JSON export writes them."""
    return text_pieces(compact_json(_slot_object(slot)) + "\n"
                       for slot in _slot_rows(evaluation))


@dataclass(frozen=True)
class AggregatedJudgment:
    keyword_text: str
    keyword_position: int
    doc_id: str
    value: float


def _core_scale(evaluation: Evaluation) -> core.Scale:
    scale = scale_lookup.scale_for_team(team_id=evaluation.team_id, code=evaluation.scale)
    if scale is None:
        raise ValueError(f"unknown scale {evaluation.scale!r}")
    return scale.core_scale()


def aggregated(evaluation: Evaluation) -> Iterator[AggregatedJudgment]:
    """One aggregate per (keyword, document) in keyword then first-position order; a
    document returned twice for a keyword pools the grades of both positions. Read as value
    rows (no slot objects) and aggregated about EXPORT_CHUNK pairs at a time, always whole
    keywords."""
    scale = _core_scale(evaluation)
    aggregation = Aggregation(scale, scale, {grade: grade for grade in scale.grades})
    grades: dict[tuple[int, str], list[float]] = {}
    keywords: dict[int, tuple[str, int]] = {}
    rows = (FeedbackSlot.objects.filter(evaluation=evaluation, grade__isnull=False)
            .order_by("keyword__position", "snapshot__position", "index")
            .values_list("keyword_id", "keyword__text", "keyword__position",
                         "snapshot__doc_id", "grade"))
    for keyword_id, text, position, doc_id, grade in rows.iterator(chunk_size=EXPORT_CHUNK):
        if keyword_id not in keywords and len(grades) >= EXPORT_CHUNK:
            # A new keyword: the pairs so far are complete (slots come in keyword order).
            yield from _aggregate_block(aggregation, grades, keywords)
            grades, keywords = {}, {}
        keywords[keyword_id] = (text, position)
        grades.setdefault((keyword_id, doc_id), []).append(float(grade))
    yield from _aggregate_block(aggregation, grades, keywords)


def _aggregate_block(aggregation: Aggregation, grades: dict[tuple[int, str], list[float]],
                     keywords: dict[int, tuple[str, int]]) -> Iterator[AggregatedJudgment]:
    if not grades:
        return
    # Missing slots are NaN, which the aggregation reads as ungraded: the block's width
    # does not change a pair's value.
    width = max(len(values) for values in grades.values())
    block = np.full((len(grades), width), np.nan)
    for row, values in enumerate(grades.values()):
        block[row, : len(values)] = values
    values = aggregation.aggregate(block)
    for (keyword_id, doc_id), value in zip(grades, values, strict=True):
        if not math.isnan(value):
            yield AggregatedJudgment(*keywords[keyword_id], doc_id, float(value))


def format_value(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.4f}".rstrip("0")


def judgments_csv_stream(evaluation: Evaluation) -> Iterator[str]:
    yield from csv_lines([["keyword", "doc_id", "grade"]])
    yield from csv_lines([item.keyword_text, item.doc_id, format_value(item.value)]
                         for item in aggregated(evaluation))


def judgments_csv(evaluation: Evaluation) -> str:
    return "".join(judgments_csv_stream(evaluation))


# The per-slot format's columns. The first six are the per-grader CSV's earlier columns,
# so readers of that file keep working; the rest make it lossless.
SLOT_COLUMNS = ["keyword", "doc_id", "grade", "grader", "grader_kind", "reason", "unsure",
                "note", "position", "graded_at"]


def _slot_row(*, keyword: str, doc_id: str, grade: int, grader: str, kind: str, reason: str,
              unsure: bool, note: str, position: int | None, graded_at) -> list:
    return [keyword, doc_id, grade, grader, kind, reason, "true" if unsure else "false", note,
            "" if position is None else position,
            graded_at.astimezone(UTC).isoformat() if graded_at else ""]


def judgments_csv_per_grader_stream(evaluation: Evaluation) -> Iterator[str]:
    return csv_lines(_chain([SLOT_COLUMNS], (
        _slot_row(keyword=slot.keyword, doc_id=slot.doc_id, grade=slot.grade,
                  grader=grader_name(slot) or "", kind=grader_kind(slot) or "",
                  reason=slot.reason, unsure=slot.unsure, note=slot.note,
                  position=slot.position, graded_at=slot.graded_at)
        for slot in _slot_rows(evaluation, graded=True))))


def _chain(first: list, rest: Iterator) -> Iterator:
    yield from first
    yield from rest


def judgments_csv_per_grader(evaluation: Evaluation) -> str:
    return "".join(judgments_csv_per_grader_stream(evaluation))


def pool_slots_csv(*, team_id: int, scale: str) -> str:
    """The team's imported judgments on `scale` in the per-slot format, in the order they
    were imported (a file's lines keep their order)."""
    rows = PoolJudgment.objects.filter(team_id=team_id, scale=scale).order_by("pk")
    return csv_text([SLOT_COLUMNS] + [
        _slot_row(keyword=row.text, doc_id=row.doc_id, grade=row.grade, grader=row.grader,
                  kind=row.grader_kind, reason=row.reason, unsure=row.unsure, note=row.note,
                  position=row.position, graded_at=row.graded_at)
        for row in rows.iterator(chunk_size=5000)
    ])


def qrels_stream(evaluation: Evaluation) -> Iterator[str]:
    return text_pieces(
        f"{item.keyword_position} 0 {_trec_token(item.doc_id)} {math.floor(item.value + 0.5)}\n"
        for item in aggregated(evaluation))


def qrels(evaluation: Evaluation) -> str:
    return "".join(qrels_stream(evaluation))


def trec_mapping_stream(evaluation: Evaluation) -> Iterator[str]:
    rows = evaluation.keywords.order_by("position").values_list("position", "text")
    return text_pieces(f"{position}\t{' '.join(text.split())}\n"
                       for position, text in rows.iterator(chunk_size=EXPORT_CHUNK))


def trec_mapping(evaluation: Evaluation) -> str:
    return "".join(trec_mapping_stream(evaluation))


def evaluation_grade_rows(evaluation: Evaluation) -> Iterator[tuple[str, str, int]]:
    """One grade a (keyword, document): the aggregate rounded half up, as `trec` writes it."""
    return ((item.keyword_text, item.doc_id, math.floor(item.value + 0.5))
            for item in aggregated(evaluation))


def evaluation_rows_with_unrated(evaluation: Evaluation
                                 ) -> Iterator[tuple[str, str, int | None]]:
    """`evaluation_grade_rows` with `(keyword, "", None)` in its place for each keyword that
    has no graded result, as Quepid's basic export lists a query with no rating."""
    keywords = evaluation.keywords.order_by("position").values_list("position", "text")
    judgments = aggregated(evaluation)
    pending = next(judgments, None)
    for position, text in keywords.iterator(chunk_size=EXPORT_CHUNK):
        if pending is None or pending.keyword_position != position:
            yield text, "", None
            continue
        while pending is not None and pending.keyword_position == position:
            yield pending.keyword_text, pending.doc_id, math.floor(pending.value + 0.5)
            pending = next(judgments, None)


def pool_grade_rows(*, team_id: int, scale: str) -> Iterator[tuple[str, str, int]]:
    """The team's imported judgments on `scale`, one a row, in import order."""
    rows = PoolJudgment.objects.filter(team_id=team_id, scale=scale).order_by("pk")
    return rows.values_list("text", "doc_id", "grade").iterator(chunk_size=EXPORT_CHUNK)


def foreign_pool_stream(kind: str, *, team, scale: str) -> Iterator[str]:
    """The team's pool on `scale` in another tool's format, named "<team> pool (<scale>)"."""
    return write.foreign_stream(kind, pool_grade_rows(team_id=team.pk, scale=scale),
                                title=f"{team.name} pool ({scale})")


def evaluation_stream(evaluation: Evaluation, kind: str, *,
                      per_grader: bool = False) -> Iterator[str]:
    """The evaluation's export in `kind` (FORMATS) as pieces of text."""
    if kind == "csv":
        return (judgments_csv_per_grader_stream(evaluation) if per_grader
                else judgments_csv_stream(evaluation))
    if kind == "quepid_csv":
        return write.foreign_stream(kind, evaluation_rows_with_unrated(evaluation),
                                    title=evaluation.name)
    if kind in FOREIGN_FORMATS:
        return write.foreign_stream(kind, evaluation_grade_rows(evaluation), title=evaluation.name)
    return {"json": judgments_json_stream, "jsonl": judgments_jsonl_stream,
            "trec": qrels_stream, "trec_mapping": trec_mapping_stream,
            "trec_run": trec_run_stream, "run_jsonl": run_jsonl_stream}[kind](evaluation)
