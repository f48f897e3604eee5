"""Reads the recompute and the metric pages need: grades as the metric engine takes them."""

from collections import defaultdict
from dataclasses import dataclass

import numpy as np
from django.db.models import Count, QuerySet

from evaluations.models import Evaluation, EvaluationMetric, Keyword
from judgments.models import FeedbackSlot, PoolJudgment
from metrics.models import KeywordMetricValue

Grades = list[int | None]


@dataclass(frozen=True)
class KeywordResults:
    """One keyword's results in position order: each position's doc id and slot grades."""

    doc_ids: list[str]
    grades: list[Grades]


def keyword_results(*, keyword_id: int) -> KeywordResults:
    rows = (
        FeedbackSlot.objects.filter(keyword_id=keyword_id)
        .order_by("snapshot__position", "index")
        .values_list("snapshot__position", "snapshot__doc_id", "grade")
    )
    doc_ids: list[str] = []
    grades: list[Grades] = []
    last_position = None
    for position, doc_id, grade in rows:
        if position != last_position:
            doc_ids.append(doc_id)
            grades.append([])
            last_position = position
        grades[-1].append(grade)
    return KeywordResults(doc_ids=doc_ids, grades=grades)


def keyword_pool_others(*, keyword: Keyword, evaluation: Evaluation) -> list[tuple[str, Grades]]:
    """Grades given to documents for this keyword text by the team's other evaluations on the
    same scale (METRICS.md, the keyword's pool), and the judgments imported into the team's
    pool for this text and scale. The keyword's own results are not included:
    the metric engine adds them to the pool itself.

    A reused grade is a copy of one judgment, not a second one: copies made elsewhere are
    left out, and so is every original that this keyword's own slots copied.
    """
    own_copies = FeedbackSlot.objects.filter(keyword_id=keyword.pk)
    rows = (
        FeedbackSlot.objects.filter(
            keyword__normalized_text=keyword.normalized_text,
            evaluation__team_id=evaluation.team_id,
            evaluation__scale=evaluation.scale,
            grade__isnull=False,
            reused_from__isnull=True,
            reused_from_pool__isnull=True,
        )
        .exclude(keyword_id=keyword.pk)
        .exclude(pk__in=own_copies.filter(reused_from__isnull=False).values("reused_from"))
        .values_list("snapshot__doc_id", "grade")
    )
    pooled: dict[str, Grades] = defaultdict(list)
    for doc_id, grade in rows:
        pooled[doc_id].append(grade)
    # Judgments imported into the team's pool (CSV, TREC qrels) count like other grades.
    imported = PoolJudgment.objects.filter(
        team_id=evaluation.team_id, scale=evaluation.scale,
        normalized_text=keyword.normalized_text,
    ).exclude(
        pk__in=own_copies.filter(reused_from_pool__isnull=False).values("reused_from_pool")
    ).order_by("pk").values_list("doc_id", "grade")
    for doc_id, grade in imported:
        pooled[doc_id].append(grade)
    return list(pooled.items())


def evaluation_metric_configs(*, evaluation_id: int) -> list[EvaluationMetric]:
    return list(EvaluationMetric.objects.filter(evaluation_id=evaluation_id))


def evaluation_keywords(*, evaluation_id: int) -> QuerySet[Keyword]:
    return Keyword.objects.filter(evaluation_id=evaluation_id).order_by("position")


def evaluation_grade_array(
    *, evaluation: Evaluation, keyword_ids: list[int], positions: int
) -> np.ndarray:
    """All grades of the given keywords as a (keywords, positions, slots) float array,
    NaN for an empty slot or a missing position: the input of metrics.core.evaluate_batch."""
    row_of = {keyword_id: row for row, keyword_id in enumerate(keyword_ids)}
    grades = np.full((len(keyword_ids), positions, evaluation.strategy), np.nan)
    # FeedbackSlot.position repeats the snapshot's, so this reads one table, no join.
    rows = FeedbackSlot.objects.filter(
        evaluation_id=evaluation.pk, grade__isnull=False, position__lte=positions,
    ).values_list("keyword_id", "position", "index", "grade")
    table = np.array(list(rows), dtype=np.int64).reshape(-1, 4)
    if len(table):
        keyword_rows = np.fromiter(
            (row_of.get(keyword_id, -1) for keyword_id in table[:, 0]), dtype=np.int64,
            count=len(table),
        )
        wanted = keyword_rows >= 0
        grades[keyword_rows[wanted], table[wanted, 1] - 1, table[wanted, 2]] = table[wanted, 3]
    return grades


@dataclass(frozen=True)
class KeywordRow:
    keyword: Keyword
    # Value of each configured metric, in the evaluation's metric order; None = null or
    # not computed yet.
    values: list[float | None]
    snapshot_count: int
    updating: bool


def keyword_rows(*, evaluation: Evaluation, keywords: list[Keyword]) -> list[KeywordRow]:
    """Rows of the per-keyword table for the given keywords in two queries, whatever their
    number: the values, and the snapshot counts."""
    configs = evaluation_metric_configs(evaluation_id=evaluation.pk)
    keyword_ids = [keyword.pk for keyword in keywords]
    stored = {
        (keyword_id, metric_id): value
        for keyword_id, metric_id, value in KeywordMetricValue.objects.filter(
            keyword_id__in=keyword_ids).values_list("keyword_id", "metric_id", "value")
    }
    snapshot_counts = dict(
        Keyword.objects.filter(pk__in=keyword_ids).annotate(n=Count("snapshots"))
        .values_list("pk", "n")
    )
    return [
        KeywordRow(
            keyword=keyword,
            values=[stored.get((keyword.pk, config.pk)) for config in configs],
            snapshot_count=snapshot_counts.get(keyword.pk, 0),
            updating=keyword.dirty_since is not None,
        )
        for keyword in keywords
    ]


def keywords_filtered(
    *, evaluation: Evaluation, status: str | None = None, search: str | None = None
) -> QuerySet[Keyword]:
    keywords = Keyword.objects.filter(evaluation=evaluation).order_by("position")
    if status:
        keywords = keywords.filter(fetch_status=status)
    if search:
        keywords = keywords.filter(normalized_text__contains=Keyword.normalize(search))
    return keywords
