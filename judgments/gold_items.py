"""Gold items (judgments.gold): making them from a graded result
("make gold"), an adjudicated answer (judgments.adjudication) or an import of
`keyword,doc_id,grade` lines (CSV or JSON lines). Grades are checked by
judgments.grading's rule; the queue's side is judgments.gold."""

import csv
import io
import json
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from audit.models import Action
from audit.services import audit_object
from evaluations.models import Evaluation, Keyword, Snapshot
from judgments.grading import grade_checked
from judgments.models import AdjudicatedAnswer, FeedbackSlot, GoldItem
from searchtweak.models import User

GOLD_IMPORT_MAX_LINES = 10_000
GOLD_IMPORT_MAX_BYTES = 5 * 1024 * 1024

# --- making gold items ---


def _known_grade(snapshot: Snapshot) -> int | None:
    """The result's answer when it is settled: its adjudicated answer, else the one grade
    every graded slot agrees on; None when the slots disagree or none is graded."""
    answer = AdjudicatedAnswer.objects.filter(snapshot=snapshot).first()
    if answer is not None:
        return answer.grade
    grades = set(FeedbackSlot.objects.filter(snapshot=snapshot, grade__isnull=False)
                 .values_list("grade", flat=True))
    return grades.pop() if len(grades) == 1 else None


def gold_item_save(*, evaluation: Evaluation, snapshot: Snapshot, grade: int,
                   source: str, user: User | None) -> GoldItem:
    """Create or replace the gold item of `snapshot` (a result of `evaluation`); `grade`
    is checked by the caller against the evaluation's scale."""
    item, _ = GoldItem.objects.update_or_create(
        snapshot=snapshot, defaults={"team_id": evaluation.team_id, "scale": evaluation.scale,
                                     "grade": grade, "source": source, "created_by": user})
    return item


@transaction.atomic
def gold_item_make(*, user: User, evaluation: Evaluation, snapshot_id: Any,
                   grade: Any = None) -> GoldItem:
    """"Make gold" on a result of the evaluation: its answer is `grade` when given (on the
    evaluation's scale), else the settled one (_known_grade). ValidationError naming the
    field otherwise; nothing is written then."""
    snapshot = (Snapshot.objects.filter(pk=snapshot_id, keyword__evaluation=evaluation).first()
                if isinstance(snapshot_id, int) and not isinstance(snapshot_id, bool) else None)
    if snapshot is None:
        raise ValidationError({"snapshot": "This result is not one of the evaluation's."})
    if grade is None:
        grade = _known_grade(snapshot)
        if grade is None:
            raise ValidationError({"grade": (
                "Its graders disagree or no one graded it: say which grade is the answer.")})
    value = grade_checked(evaluation=evaluation, grade=grade)
    item = gold_item_save(evaluation=evaluation, snapshot=snapshot, grade=value,
                          source=GoldItem.Source.PAGE, user=user)
    audit_object(action=Action.GOLD_ITEMS_CHANGED, instance=evaluation, object_type="evaluation",
                 actor=user, after={"snapshot": snapshot.pk, "doc_id": snapshot.doc_id,
                                    "gold_grade": value})
    return item


def gold_item_remove(*, evaluation: Evaluation, snapshot_id: int) -> int:
    """Drop the result's gold item (its probes and their grades go with it); how many."""
    deleted, _ = GoldItem.objects.filter(snapshot_id=snapshot_id,
                                         snapshot__keyword__evaluation=evaluation).delete()
    if deleted:
        audit_object(action=Action.GOLD_ITEMS_CHANGED, instance=evaluation,
                     object_type="evaluation", before={"snapshot": snapshot_id})
    return deleted


@dataclass
class GoldImport:
    rows: list[tuple[int, Snapshot, int]] = field(default_factory=list)  # line, result, grade
    errors: list[str] = field(default_factory=list)


class _NotCsv(Exception):
    """A line csv cannot read; the message names it."""


def _import_lines(content: bytes) -> list[tuple[int, dict | list | None]]:
    """(line number, the line's cells) of a CSV `keyword,doc_id,grade` (a header line of
    those names is skipped) or of JSON lines `{"keyword", "doc_id", "grade"}`."""
    text = content.decode("utf-8-sig")
    if text.lstrip().startswith("{"):
        lines = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                lines.append((number, json.loads(line)))
            except ValueError:
                lines.append((number, None))
        return lines
    reader = csv.reader(io.StringIO(text))
    rows, start = [], 1
    try:
        for row in reader:
            if any(cell.strip() for cell in row):
                rows.append((start, row))
            # A quoted cell may span lines: the next row starts after this one's last.
            start = reader.line_num + 1
    except csv.Error as error:  # a cell beyond csv's size limit, a NUL…
        raise _NotCsv(f"line {start}: not a CSV row ({error}).") from None
    if rows and [cell.strip().lower() for cell in rows[0][1]] == ["keyword", "doc_id", "grade"]:
        rows = rows[1:]
    return rows


def gold_items_parse(*, evaluation: Evaluation, content: bytes) -> GoldImport:
    """Read an import for the evaluation's results: every line names a keyword of the
    evaluation and a document it returned, with a grade of its scale. Each bad line is
    one error with its number."""
    parsed = GoldImport()
    try:
        lines = _import_lines(content)
    except UnicodeDecodeError:
        parsed.errors.append("The file is not UTF-8 text.")
        return parsed
    except _NotCsv as error:
        parsed.errors.append(str(error))
        return parsed
    if len(lines) > GOLD_IMPORT_MAX_LINES:
        parsed.errors.append(f"At most {GOLD_IMPORT_MAX_LINES} lines a file.")
        return parsed
    snapshots = {(s.keyword.normalized_text, s.doc_id): s for s in Snapshot.objects.filter(
        keyword__evaluation=evaluation).select_related("keyword")}
    seen: set[int] = set()
    for number, cells in lines:
        if isinstance(cells, dict):
            cells = [cells.get("keyword"), cells.get("doc_id"), cells.get("grade")]
        if not isinstance(cells, list) or len(cells) != 3:
            parsed.errors.append(f"line {number}: expected keyword, doc_id and grade.")
            continue
        keyword, doc_id, grade = cells
        if isinstance(grade, str):
            text = grade.strip()
            # A grade is a few digits; a longer run stays text, which grade_checked refuses
            # (int() of thousands of digits raises rather than answer).
            if text.lstrip("-").isdigit() and len(text) <= 12:
                grade = int(text)
            elif len(grade) > 40:
                grade = f"{grade[:40]}…"  # quoted in the error as far as needed
        snapshot = snapshots.get((Keyword.normalize(str(keyword or "")), str(doc_id or "")))
        if snapshot is None:
            parsed.errors.append(
                f"line {number}: the evaluation shows no document {doc_id!r} for {keyword!r}.")
            continue
        if snapshot.pk in seen:
            parsed.errors.append(f"line {number}: repeats an earlier line's result.")
            continue
        try:
            value = grade_checked(evaluation=evaluation, grade=grade)
        except ValidationError as error:
            parsed.errors.append(f"line {number}: {error.message_dict['grade'][0]}")
            continue
        seen.add(snapshot.pk)
        parsed.rows.append((number, snapshot, value))
    return parsed


@transaction.atomic
def gold_items_import(*, user: User, evaluation: Evaluation, content: bytes) -> int:
    """Make every line's result gold with its grade; all or nothing: any bad line raises
    ValidationError on `file` listing every error with its line number. How many."""
    parsed = gold_items_parse(evaluation=evaluation, content=content)
    if parsed.errors:
        raise ValidationError({"file": parsed.errors})
    if not parsed.rows:
        raise ValidationError({"file": ["The file has no lines."]})
    for _, snapshot, grade in parsed.rows:
        gold_item_save(evaluation=evaluation, snapshot=snapshot, grade=grade,
                       source=GoldItem.Source.IMPORT, user=user)
    audit_object(action=Action.GOLD_ITEMS_IMPORTED, instance=evaluation,
                 object_type="evaluation", actor=user, after={"imported": len(parsed.rows)})
    return len(parsed.rows)


def evaluation_gold_items(*, evaluation: Evaluation):
    """The evaluation's results that are gold items, in keyword and position order."""
    return (GoldItem.objects.filter(snapshot__keyword__evaluation=evaluation)
            .select_related("snapshot__keyword", "created_by")
            .order_by("snapshot__keyword__position", "snapshot__position"))
