"""What a clicks grader's learned grades rest on, for the pages and exports that show it:
each result's impressions, clicks and learned relevance beside the grade learned from them
(behaviour.LearnedGrade, written by behaviour.learning), and on a calibration page the
people's grades of the same result."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from django.db.models import Avg, F, FloatField, OuterRef, QuerySet, Subquery
from django.db.models.functions import Abs, Cast

from behaviour.models import LearnedGrade
from evaluations.models import Evaluation
from judges.models import Judge, JudgeRun
from judgments.models import FeedbackSlot

# A calibration page shows the results where the learned grade is furthest from the
# people's; the run's export has them all.
CALIBRATION_ROWS = 25
EXPORT_FIELDS = ("keyword", "doc_id", "position", "status", "grade", "impressions", "clicks",
                 "click_through", "relevance", "click_model", "source", "start_on", "end_on",
                 "min_impressions", "failure")
CHUNK_SIZE = 2000


@dataclass(frozen=True)
class Evidence:
    """One result's learned grade and what it rests on."""

    keyword: str
    doc_id: str
    position: int  # the result's rank among its keyword's, 1 = first
    impressions: int
    clicks: int
    relevance: float | None  # the estimated click-through at position 1; None: no grade
    grade: int | None
    people_mean: float | None = None  # the mean of the people's grades of the result

    @property
    def click_through(self) -> float | None:
        """Clicks over impressions as shown (at whatever positions), before any model."""
        return self.clicks / self.impressions if self.impressions else None

    @property
    def relevance_shown(self) -> str:
        """Three decimals ("—" without a grade): EM leaves a never-clicked result at a
        vanishing probability (1e-168), which the template's floatformat would spell out."""
        return "—" if self.relevance is None else f"{self.relevance:.3f}"


def run_evidence(*, run: JudgeRun) -> QuerySet[LearnedGrade]:
    """The run's learned grades with their items, in the evaluation's order (keyword, then
    rank); none for a run of a judge that learns nothing from clicks."""
    return (LearnedGrade.objects.filter(item__run=run)
            .select_related("item__keyword", "item__snapshot", "source")
            .order_by("item__keyword__position", "item__snapshot__position", "pk"))


def as_evidence(row: LearnedGrade, people_mean: float | None = None) -> Evidence:
    return Evidence(keyword=row.item.keyword.text, doc_id=row.item.snapshot.doc_id,
                    position=row.item.snapshot.position, impressions=row.impressions,
                    clicks=row.clicks, relevance=row.relevance, grade=row.grade,
                    people_mean=people_mean)


def newest_done_run(*, judge: Judge, evaluation: Evaluation) -> JudgeRun | None:
    return (JudgeRun.objects.filter(judge=judge, evaluation=evaluation,
                                    status=JudgeRun.Status.DONE)
            .select_related("judge__click_grader__source")
            .order_by("-created_at", "-pk").first())


@dataclass(frozen=True)
class EvidenceShown:
    """Some of a run's learned grades, for a page."""

    run: JudgeRun
    rows: list[Evidence]
    total: int  # learned grades of the run


def run_evidence_shown(*, run: JudgeRun, limit: int = CALIBRATION_ROWS) -> EvidenceShown:
    """The run's first learned grades in the evaluation's order. Two queries."""
    evidence = run_evidence(run=run)
    return EvidenceShown(run=run, rows=[as_evidence(row) for row in evidence[:limit]],
                         total=evidence.count())


def calibration_evidence(*, judge: Judge, evaluation: Evaluation,
                         limit: int = CALIBRATION_ROWS) -> EvidenceShown | None:
    """The evidence of the judge's newest finished run on the evaluation, the results whose
    learned grade is furthest from the mean of the people's grades first (then in the
    evaluation's order; results without a learned grade or without people's grades last);
    None without such a run. People's grades are as calibration counts them: the graded
    slots of accounts that are not judges. Three queries."""
    run = newest_done_run(judge=judge, evaluation=evaluation)
    if run is None:
        return None
    people = (FeedbackSlot.objects.filter(snapshot_id=OuterRef("item__snapshot_id"),
                                          grade__isnull=False)
              .exclude(user__is_judge=True).order_by().values("snapshot_id")
              .annotate(mean=Avg(Cast("grade", FloatField()))).values("mean"))
    evidence = run_evidence(run=run)
    rows = (evidence.annotate(people_mean=Subquery(people, output_field=FloatField()))
            .annotate(distance=Abs(Cast(F("grade"), FloatField()) - F("people_mean")))
            .order_by(F("distance").desc(nulls_last=True), "item__keyword__position",
                      "item__snapshot__position", "pk")[:limit])
    return EvidenceShown(run=run, rows=[as_evidence(row, row.people_mean) for row in rows],
                               total=evidence.count())


def export_records(*, run: JudgeRun) -> Iterator[dict[str, Any]]:
    """One record per learned grade of the run (learned_record), streamed in chunks."""
    for row in run_evidence(run=run).iterator(chunk_size=CHUNK_SIZE):
        yield learned_record(row)


def learned_record(row: LearnedGrade) -> dict[str, Any]:
    """A learned grade as the export and the API give it (EXPORT_FIELDS): the grade (none
    below the minimum impressions: `failure` says why), its evidence, and the model,
    source, window and minimum it was learned with. `row` comes from run_evidence."""
    found = as_evidence(row)
    return {
        "keyword": found.keyword, "doc_id": found.doc_id, "position": found.position,
        "status": row.item.status, "grade": found.grade,
        "impressions": found.impressions, "clicks": found.clicks,
        "click_through": found.click_through, "relevance": found.relevance,
        "click_model": row.click_model, "source": row.source.name,
        "start_on": row.start_on.isoformat() if row.start_on else None,
        "end_on": row.end_on.isoformat() if row.end_on else None,
        "min_impressions": row.min_impressions, "failure": row.item.failure,
    }
