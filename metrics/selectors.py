"""Reads the recompute and the metric pages need: grades as the metric engine takes them, a
configured metric's identity and the team's baseline."""

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from itertools import chain
from typing import NamedTuple

import numpy as np
from django.db.models import Count, F, QuerySet, Value
from django.db.models.functions import Coalesce

import metrics_engine as core
from evaluations.models import Evaluation, EvaluationMetric, Keyword
from judgments.models import FeedbackSlot, PoolJudgment
from metrics import queries
from metrics.models import KeywordMetricValue, KeywordRecomputeMark, SegmentSums, TeamBaseline
from metrics_engine.exact_sum import total_decode
from metrics_engine.segment_sums import EVERY, SegmentKey, SegmentTotals, segment_totals
from searchtweak import sql
from searchtweak.models import Team

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
    same scale (docs/METRICS.md, the keyword's pool), and the judgments imported into the team's
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


# --- what the reports compare by and against: a metric's identity, the team's baseline ---

MetricKey = core.MetricKey


def metric_key(config: EvaluationMetric) -> MetricKey:
    """What makes two configured metrics the same number (core.metric_key)."""
    return core.metric_key(config.code, config.k, config.params)


def metric_label(config: EvaluationMetric) -> str:
    return core.metric_label(config.code, config.k, config.params)


def metric_key_label(key: MetricKey) -> str:
    return core.metric_key_label(*key)


def metric_key_slug(key: MetricKey) -> str:
    code, k, params = key
    return ":".join([code, str(k), *(f"{n}={v}" for n, v in params)])


def metric_configs(evaluation_id: int) -> list[EvaluationMetric]:
    """The evaluation's metric configs with their stored means (value, keyword_count,
    updated_at)."""
    return list(EvaluationMetric.objects.filter(evaluation_id=evaluation_id)
                .with_stored_mean().order_by("position", "id"))


def team_baseline(*, team_id: int) -> Evaluation | None:
    row = TeamBaseline.objects.select_related("evaluation").filter(team_id=team_id).first()
    return row.evaluation if row else None


# --- the recompute's own reads ---
# A recompute runs after nearly every grade, so its reads are single SQL statements
# written out (metrics.queries).


@dataclass(frozen=True)
class DirtyKeywords:
    """What one recompute run takes on: the keyword's evaluation and that evaluation's dirty
    keywords with the version each had when read."""

    exists: bool
    evaluation_id: int | None
    # (keyword id, version), oldest dirty mark first, at most `limit`.
    versions: list[tuple[int, int]]
    # More dirty keywords than `limit` were waiting.
    more: bool


def evaluation_dirty_keywords(*, keyword_id: int, limit: int) -> DirtyKeywords:
    """The dirty keywords of `keyword_id`'s evaluation, in one query.

    The keyword itself is always read too (clean or not), so an empty answer means it no
    longer exists. The versions are read before any grade the run reads: a grade that
    commits later carries a higher version, which keeps its keyword dirty.
    """
    rows = queries.dirty_keyword_rows(keyword_id=keyword_id, limit=limit + 1)
    dirty = [(pk, version) for pk, _, version, is_dirty in rows if is_dirty]
    return DirtyKeywords(
        exists=bool(rows), evaluation_id=rows[0][1] if rows else None,
        versions=dirty[:limit], more=len(dirty) > limit,
    )


def evaluation_dirty_keyword(*, evaluation_id: int) -> int | None:
    """A keyword of the evaluation that waits for a recompute, if any."""
    return queries.evaluation_dirty_keyword_id(evaluation_id=evaluation_id)


def evaluation_with_metric_configs(
    *, evaluation_id: int
) -> tuple[Evaluation, list[EvaluationMetric]] | None:
    """The evaluation (with its team) and its metric configs in one query, or None when it
    is gone. The evaluation carries only what a recompute reads: team, scale, strategy and
    transformers; it is not for saving."""
    rows = queries.evaluation_config_rows(evaluation_id=evaluation_id)
    if not rows:
        return None
    team_id, team_name, scale, strategy, transformers = rows[0][:5]
    evaluation = Evaluation(pk=evaluation_id, team=Team(pk=team_id, name=team_name),
                            scale=scale, strategy=strategy,
                            transformers=sql.json_value(transformers))
    configs = [
        EvaluationMetric(pk=pk, evaluation_id=evaluation_id, code=code, k=k,
                         params=sql.json_value(params), position=position)
        for *_, pk, code, k, params, position in rows if pk is not None
    ]
    return evaluation, configs


@dataclass(frozen=True)
class ChangedKeyword:
    keyword_id: int
    evaluation_id: int
    # An evaluation of its team on its scale may use a pool metric: other keywords'
    # values may depend on this keyword's grades. Usually not.
    pool_exposed: bool
    # A deferred run of its evaluation is queued and has not started (RecomputeDue).
    run_due: bool


def changed_keywords(*, keyword_ids: list[int], due_after: datetime) -> list[ChangedKeyword]:
    """What the recompute needs to know about keywords whose grades just changed, in one
    query: their evaluation, whether a pool metric may read them, and whether a deferred
    run of their evaluation (due after `due_after`, else taken for lost) is queued."""
    if not keyword_ids:
        return []
    return [ChangedKeyword(*row)
            for row in queries.changed_keyword_rows(keyword_ids=keyword_ids, due_after=due_after)]


def team_metric_configs(*, keyword_ids: list[int]) -> list[EvaluationMetric]:
    """The metric configs of every evaluation in the teams of these keywords."""
    teams = Keyword.objects.filter(pk__in=keyword_ids).values("evaluation__team_id")
    return list(EvaluationMetric.objects.filter(evaluation__team_id__in=teams)
                .only("evaluation_id", "code", "params"))


# Up to this many keywords the grades are read by keyword (the slot_keyword index);
# beyond, by evaluation, without a long IN list.
_BY_KEYWORD = 2000


class SlotArrays(NamedTuple):
    """The input of metrics_engine's batch paths: ``grades`` (keywords, positions, slots),
    NaN for an ungraded slot or a missing position, and ``ungraded``, True where a slot
    exists without a grade (what the bounds need and NaN cannot say)."""

    grades: np.ndarray
    ungraded: np.ndarray


def evaluation_slot_table(*, evaluation_id: int) -> np.ndarray:
    """Every slot of the evaluation at any position, one row (keyword_id, position, index,
    grade) each, int64; an ungraded slot's grade is queries.UNGRADED. What a from-scratch
    run reads once for both the metrics (evaluation_grade_array) and the dashboard's
    counts (metrics.recompute.aggregates)."""
    return _slot_table(queries.slot_rows(evaluation_id=evaluation_id, positions=None))


def _slot_table(rows: list[tuple[int, int, int, int]]) -> np.ndarray:
    # Flattened first: numpy.array over a list of 3M tuples took twice as long.
    return np.fromiter(chain.from_iterable(rows), dtype=np.int64,
                       count=4 * len(rows)).reshape(-1, 4)


def evaluation_grade_array(
    *, evaluation: Evaluation, keyword_ids: list[int], positions: int,
    slot_table: np.ndarray | None = None,
) -> SlotArrays:
    """All slots of the given keywords up to `positions`, as SlotArrays; from
    `slot_table` (evaluation_slot_table) when the caller has read it already."""
    grades = np.full((len(keyword_ids), positions, evaluation.max_slots), np.nan)
    ungraded = np.zeros(grades.shape, dtype=bool)
    if slot_table is not None:
        table = slot_table[slot_table[:, 1] <= positions]
    else:
        if not keyword_ids:
            rows = []
        elif len(keyword_ids) <= _BY_KEYWORD:
            rows = queries.slot_rows(keyword_ids=keyword_ids, positions=positions)
        else:
            rows = queries.slot_rows(evaluation_id=evaluation.pk, positions=positions)
        table = _slot_table(rows)
    if len(table) and keyword_ids:
        # Each slot's keyword row by binary search: a dict lookup per slot cost 0.9 s at
        # 3M slots.
        ids = np.asarray(keyword_ids, dtype=np.int64)
        by_id = np.argsort(ids)
        keyword_rows = by_id[np.minimum(np.searchsorted(ids, table[:, 0], sorter=by_id),
                                        len(ids) - 1)]
        wanted = ids[keyword_rows] == table[:, 0]
        keyword_rows, table = keyword_rows[wanted], table[wanted]
        blank = table[:, 3] == queries.UNGRADED
        graded = ~blank
        grades[keyword_rows[graded], table[graded, 1] - 1, table[graded, 2]] = table[graded, 3]
        ungraded[keyword_rows[blank], table[blank, 1] - 1, table[blank, 2]] = True
    return SlotArrays(grades, ungraded)


def evaluation_keyword_versions(*, evaluation_id: int) -> list[tuple[int, int]]:
    """(keyword id, version) of every keyword of the evaluation in position order; 0 for a
    keyword never marked. What a from-scratch run computes from, and checks again before
    it trusts what it counted (metrics.recompute.aggregates)."""
    return list(Keyword.objects.filter(evaluation_id=evaluation_id)
                .annotate(read_version=Coalesce(F("recompute_mark__version"), Value(0)))
                .order_by("position").values_list("pk", "read_version"))


NO_BOUNDS = core.KeywordBounds(None, None, True)
"""A keyword's bounds before its first recompute stored any (as bounds_mean leaves out)."""
_NOTHING_STORED = (None, NO_BOUNDS)


def stored_bounds_mean(stored: Mapping[int, core.KeywordBounds], keyword_ids: Iterable[int],
                       weights: Mapping[int, int] | None = None
                       ) -> tuple[core.KeywordBounds, bool]:
    """The mean of the keywords' stored bounds (`stored` by keyword id, one metric),
    weighted by `weights` (by keyword id) when given, and whether some keyword has none
    stored yet: a comparison is never decided then."""
    keyword_ids = list(keyword_ids)
    return (core.bounds_mean([stored.get(pk, NO_BOUNDS) for pk in keyword_ids],
                             None if weights is None else [weights[pk] for pk in keyword_ids]),
            any(pk not in stored for pk in keyword_ids))


@dataclass(frozen=True)
class KeywordRow:
    keyword: Keyword
    # Value of each configured metric, in the evaluation's metric order; None = null or
    # not computed yet.
    values: list[float | None]
    snapshot_count: int
    updating: bool
    # Each value's bounds, in the same order; NO_BOUNDS before the keyword's first
    # recompute.
    bounds: list[core.KeywordBounds]

    @property
    def cells(self) -> list[tuple[float | None, core.KeywordBounds]]:
        return list(zip(self.values, self.bounds, strict=True))


def keyword_rows(*, evaluation: Evaluation, keywords: list[Keyword]) -> list[KeywordRow]:
    """Rows of the per-keyword table for the given keywords in two queries, whatever their
    number: the values, and the snapshot counts."""
    configs = evaluation_metric_configs(evaluation_id=evaluation.pk)
    keyword_ids = [keyword.pk for keyword in keywords]
    stored = {
        (keyword_id, metric_id): (value, core.KeywordBounds(lower, upper, exact))
        for keyword_id, metric_id, value, lower, upper, exact in
        KeywordMetricValue.objects.filter(keyword_id__in=keyword_ids).values_list(
            "keyword_id", "metric_id", "value", "lower", "upper", "bounds_exact")
    }
    # Each keyword's snapshot count and whether a recompute is due (its dirty mark).
    counts_and_marks = {
        pk: (count, dirty_since) for pk, count, dirty_since in
        Keyword.objects.filter(pk__in=keyword_ids).annotate(n=Count("snapshots"))
        .values_list("pk", "n", "recompute_mark__dirty_since")
    }
    return [
        KeywordRow(
            keyword=keyword,
            values=[stored.get((keyword.pk, config.pk), _NOTHING_STORED)[0] for config in configs],
            bounds=[stored.get((keyword.pk, config.pk), _NOTHING_STORED)[1] for config in configs],
            snapshot_count=counts_and_marks.get(keyword.pk, (0, None))[0],
            updating=counts_and_marks.get(keyword.pk, (0, None))[1] is not None,
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
        keywords = keywords.filter(Keyword.search_q(search))
    return keywords


# --- segments (docs/METRICS.md, "Weighted means and segments") ---

_SEGMENT_COLUMNS = ("value_total", "value_count", "value_weight", "lower_total",
                    "lower_weight", "upper_total", "upper_weight", "inexact_count")


@dataclass(frozen=True)
class SegmentMean:
    """A metric's mean over one segment's keywords (segment "" = every keyword), plain or
    traffic-weighted, with its bounds: what SegmentSums holds, divided once."""

    metric_id: int
    segment: str
    weighted: bool
    value: float | None
    keyword_count: int
    # Σ weight over the keywords with a value (keyword_count for a plain mean).
    weight_sum: int
    lower: float | None
    upper: float | None
    bounds_exact: bool


def segment_totals_read(*, metric_ids: Iterable[int], segments: Iterable[str] | None = None
                        ) -> dict[int, dict[SegmentKey, SegmentTotals]]:
    """The stored segment sums of those of `metric_ids` whose sums are known (their plain
    every-keyword row exists), of every segment or of these (EVERY among them)."""
    rows = SegmentSums.objects.filter(metric_id__in=list(metric_ids))
    if segments is not None:
        rows = rows.filter(segment__in=sorted(segments))
    by_metric: dict[int, dict[SegmentKey, SegmentTotals]] = defaultdict(dict)
    for metric_id, segment, weighted, *columns in rows.values_list(
            "metric_id", "segment", "weighted", *_SEGMENT_COLUMNS):
        by_metric[metric_id][segment, weighted] = SegmentTotals(*(
            total_decode(item) if isinstance(item, str) else item for item in columns))
    return {pk: totals for pk, totals in by_metric.items() if (EVERY, False) in totals}


def segment_totals_from_values(*, metric_ids: Iterable[int]
                               ) -> dict[int, dict[SegmentKey, SegmentTotals]]:
    """Every segment's sums of these metrics from their stored keyword values and the
    keywords' weights and tags now; a metric with a value no exact sum holds is left out."""
    rows: dict[int, list] = {pk: [] for pk in metric_ids}
    for metric_id, *row in KeywordMetricValue.objects.filter(
            metric_id__in=list(rows)).values_list(
            "metric_id", "keyword__weight", "keyword__tags", "value", "lower", "upper",
            "bounds_exact").order_by():
        rows[metric_id].append(row)
    totals = {}
    for metric_id, metric_rows in rows.items():
        try:
            totals[metric_id] = segment_totals(metric_rows)
        except (OverflowError, ValueError):
            continue
    return totals


def segment_means(*, evaluation_id: int) -> list[SegmentMean]:
    """Every segment mean of the evaluation's metrics (in the metrics' order; every keyword
    first, then the tags in order; plain before weighted), from the stored sums, or from
    the stored values for a metric whose sums are not known yet."""
    return metric_segment_means(metric_ids=list(
        EvaluationMetric.objects.filter(evaluation_id=evaluation_id)
        .order_by("position", "id").values_list("id", flat=True)))


def metric_segment_means(*, metric_ids: list[int]) -> list[SegmentMean]:
    """segment_means of these configured metrics (of any evaluations), in the order given:
    one query when their sums are known, for a page that holds the configs already."""
    totals = segment_totals_read(metric_ids=metric_ids)
    unknown = [pk for pk in metric_ids if pk not in totals]
    if unknown:
        totals.update(segment_totals_from_values(metric_ids=unknown))
    return [SegmentMean(pk, segment, weighted, sums.mean, sums.value_count, sums.value_weight,
                        sums.lower, sums.upper, sums.bounds_exact)
            for pk in metric_ids
            for (segment, weighted), sums in sorted(totals.get(pk, {}).items())]


def oldest_dirty_since() -> datetime | None:
    """When the keyword that has waited longest for its recompute turned dirty; None when
    every keyword is clean. One read down the `dirty_since` index (LIMIT 1)."""
    return (KeywordRecomputeMark.objects.filter(dirty_since__isnull=False)
            .order_by("dirty_since").values_list("dirty_since", flat=True).first())
