"""Reads for comparing 2 to 10 evaluations at once (the N-way compare page, its CSV and
API): per metric each evaluation's mean, bootstrap interval and coverage, tests against a
reference (Holm) or a randomized Tukey HSD over all pairs (metrics.reports.compare_many_stats);
per keyword the values, deltas to the reference, and the churn of the result lists (RBO,
Jaccard, documents that entered or left).

A fixed number of queries whatever N: the metric configs, the keywords and the stored
values of all N evaluations are one query each, and the snapshots of the keywords shown
(a page, or all of them for the CSV) one more. The statistics are seeded, so the same
values give the same numbers; they are cached under a digest of the values they read.
Each evaluation's verdict against the reference (by the team's rule, metrics_engine.verdicts)
reads one more query, the snapshots to the deepest k (identical rankings).

A segment (metrics.reports.segments) keeps, for each evaluation, the keywords it tags with
the segment's tag: its mean covers those, and each evaluation's test against the
reference pairs the keywords it tags (the run's tags, as a verdict of the segment reads
them). Weighted, each mean and each mean delta to the reference weigh a keyword by its
weight (the run's, for a delta); the intervals, the tests and Tukey's pairs weigh every
keyword alike, and the verdicts by the team's rule cover every keyword.
"""

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from django.core.exceptions import ValidationError

import metrics_engine as core
from evaluations.models import Evaluation, EvaluationMetric, Keyword, Snapshot
from metrics.reports.compare_many_stats import (
    RESAMPLES,
    MetricRow,
    config_bounds,
    config_values,
    metric_row,
    rule_outcomes,
    segmented,
    value_or_none,
    with_bounds,
    with_verdicts,
    with_weights,
)
from metrics.reports.segments import EVERY_KEYWORD, SegmentChoice
from metrics.selectors import metric_key, metric_label, stored_bounds_mean
from metrics_engine import multi_compare
from metrics_engine.verdicts import RegressionOutcome, VerdictRule

MIN_EVALUATIONS = 2
MAX_EVALUATIONS = 10
MODES = {"reference": "Against the reference (Holm-adjusted)",
         "tukey": "All pairs (randomized Tukey HSD)"}
SORTS = ("change", "text")  # and "m<index>": the largest |Δ| of one metric


@dataclass(frozen=True)
class Overlap:
    """An evaluation's top k against the reference's for one keyword."""

    rbo: float | None
    jaccard: float
    entered: list[str]
    left: list[str]


@dataclass
class KeywordRow:
    """One shared keyword; its values are read from the comparison's arrays on demand, so
    a comparison of 5,000 keywords builds only the rows a page shows."""

    text: str
    normalized_text: str
    keyword_ids: list[int]  # per evaluation
    index: int  # its row in `data`
    data: np.ndarray = field(repr=False)  # [metric, keyword, evaluation], NaN = no value
    reference_index: int = 0
    changed: bool = False
    # Per evaluation against the reference (None for the reference itself); filled by
    # `keyword_overlaps` for the rows shown only.
    overlaps: list[Overlap | None] | None = None

    @property
    def values(self) -> list[list[float | None]]:
        """[metric][evaluation]."""
        return [[value_or_none(v) for v in row] for row in self.data[:, self.index, :]]

    @property
    def deltas(self) -> list[list[float | None]]:
        """[metric][evaluation], to the reference; None for the reference itself."""
        ref = self.reference_index
        return [[None if e == ref else value_or_none(v - row[ref]) for e, v in enumerate(row)]
                for row in self.data[:, self.index, :]]

    @property
    def cells(self) -> list[list[tuple[float | None, float | None]]]:
        """Per metric, per evaluation: (value, Δ to the reference)."""
        return [list(zip(values, deltas, strict=True))
                for values, deltas in zip(self.values, self.deltas, strict=True)]


@dataclass(frozen=True)
class ManyComparison:
    evaluations: list[Evaluation]
    reference: Evaluation
    mode: str
    metrics: list[MetricRow]
    keywords: list[KeywordRow]  # shared by every evaluation, sorted and filtered
    shared_count: int
    changed_count: int
    not_shared_count: int  # keywords some evaluation lacks: not compared
    unshared_metrics: tuple[str, ...]  # labels of metrics not every evaluation has
    rbo_k: int
    sort: str
    descending: bool
    show: str
    resamples: int
    # Per evaluation (None for the reference): its verdict against the reference by `rule`
    # over every metric both have, as its stored verdict and a gate decide.
    outcomes: list[RegressionOutcome | None] = field(default_factory=list)
    rule: VerdictRule = field(default_factory=VerdictRule)
    choice: SegmentChoice = EVERY_KEYWORD

    @property
    def reference_index(self) -> int:
        return next(i for i, e in enumerate(self.evaluations) if e.pk == self.reference.pk)

    @property
    def others(self) -> list[tuple[int, Evaluation]]:
        return [(i, e) for i, e in enumerate(self.evaluations) if e.pk != self.reference.pk]


def evaluations_many_validate(*, evaluations: Sequence[Evaluation],
                              reference: Evaluation | None, mode: str = "reference") -> None:
    """The rules of an N-way compare, as ValidationError naming the field."""
    count = len(evaluations)
    if count < MIN_EVALUATIONS or count > MAX_EVALUATIONS:
        raise ValidationError({"evaluations": f"Pick {MIN_EVALUATIONS} to {MAX_EVALUATIONS} "
                                              f"evaluations to compare, not {count}."})
    if len({e.pk for e in evaluations}) != count:
        raise ValidationError({"evaluations": "Each evaluation may be picked once."})
    if len({e.team_id for e in evaluations}) != 1:
        raise ValidationError({"evaluations": "The evaluations must belong to one team."})
    scales = sorted({e.scale for e in evaluations})
    if len(scales) != 1:
        raise ValidationError({"evaluations": "The evaluations must use the same scale, not "
                                              f"{', '.join(scales)}."})
    if reference is None or reference.pk not in {e.pk for e in evaluations}:
        raise ValidationError({"reference": "The reference must be one of the evaluations "
                                            "compared."})
    if mode not in MODES:
        raise ValidationError({"mode": f"mode is one of {', '.join(MODES)}."})


def evaluations_compare_many(*, evaluations: Sequence[Evaluation],
                             reference: Evaluation | None, mode: str = "reference",
                             sort: str = "change", descending: bool = True, show: str = "",
                             rbo_k: int | None = None,
                             resamples: int = RESAMPLES,
                             choice: SegmentChoice = EVERY_KEYWORD) -> ManyComparison:
    """Every metric all the evaluations have (same code, k and parameters) over the keywords
    they all have (matched by normalized text; none in common is a ValidationError on
    `evaluations`). Keywords come sorted by `sort` ("change":
    the largest |Δ| to the reference of any metric; "m<i>": of the i-th metric; "text"),
    `show="changed"` keeps those with some Δ ≠ 0. Churn is left for `keyword_overlaps`.
    A segment or weights (`choice`) as the module says; every keyword, unweighted: the
    numbers before segments."""
    evaluations = list(evaluations)
    evaluations_many_validate(evaluations=evaluations, reference=reference, mode=mode)
    assert reference is not None
    ids = [e.pk for e in evaluations]
    ref_index = ids.index(reference.pk)

    configs: dict[int, list[EvaluationMetric]] = defaultdict(list)
    for config in EvaluationMetric.objects.filter(evaluation_id__in=ids).with_stored_mean() \
            .order_by("evaluation_id", "position", "id"):
        configs[config.evaluation_id].append(config)
    by_key = [{metric_key(c): c for c in configs[pk]} for pk in ids]
    keys = [metric_key(c) for c in configs[reference.pk]
            if all(metric_key(c) in keyed for keyed in by_key)]
    shared_keys = set(keys)
    unshared = tuple(dict.fromkeys(
        metric_label(c) for pk in ids for c in configs[pk] if metric_key(c) not in shared_keys))
    chosen = [[keyed[key] for keyed in by_key] for key in keys]  # [metric][evaluation]

    columns: list[dict[str, int]] = [{} for _ in ids]
    texts: dict[str, str] = {}
    texts_of: dict[int, dict[str, str]] = {pk: {} for pk in ids}
    column_of = {pk: columns[i] for i, pk in enumerate(ids)}
    reference_id = reference.pk
    # Per evaluation: its keywords in the segment, and each keyword's weight.
    tagged: dict[int, set[str]] = {pk: set() for pk in ids}
    weights: dict[int, dict[str, int]] = {pk: {} for pk in ids}
    traffic_fields = [] if choice.everything_plain else ["weight", "tags"]
    # In position order: the verdicts resample each run's keywords in that order.
    for evaluation_id, normalized, pk, text, *traffic in Keyword.objects.filter(
            evaluation_id__in=ids).order_by("evaluation_id", "position").values_list(
            "evaluation_id", "normalized_text", "pk", "text", *traffic_fields):
        column_of[evaluation_id][normalized] = pk
        texts_of[evaluation_id][normalized] = text
        if evaluation_id == reference_id:
            texts[normalized] = text
        if traffic:
            weights[evaluation_id][normalized] = traffic[0]
            if not choice.segment or choice.segment in traffic[1]:
                tagged[evaluation_id].add(normalized)
    shared_set = set(columns[0]).intersection(*columns[1:])
    if not shared_set:
        raise ValidationError({"evaluations": (
            "These evaluations have no keyword in common: a comparison is made over the "
            "keywords all of them have. Pick evaluations of the same keywords (or query set).")})
    shared = sorted(shared_set)
    all_count = len(set().union(*columns))
    # [keyword, evaluation] -> keyword id, rows in text order.
    id_matrix = np.array([[column[t] for t in shared] for column in columns],
                         dtype=np.int64).reshape(len(ids), len(shared)).T.copy()

    # [metric, keyword, evaluation], NaN = no value.
    data = np.full((len(keys), len(shared), len(ids)), np.nan)
    # Every config of every evaluation: the verdicts against the reference read the
    # metrics only some of them share too.
    all_configs = [c for pk in ids for c in configs[pk]]
    stored = config_values(all_configs) if all_configs else {}
    for m, row in enumerate(chosen):
        for e, config in enumerate(row):
            keyword_array, value_array = stored[config.pk]
            column_ids = id_matrix[:, e]
            order = np.argsort(column_ids)
            found = np.searchsorted(column_ids[order], keyword_array)
            inside = found < len(order)
            inside[inside] = column_ids[order][found[inside]] == keyword_array[inside]
            data[m, order[found[inside]], e] = value_array[inside]

    bounds = config_bounds(all_configs) if all_configs else {}
    rule = VerdictRule()
    outcomes = rule_outcomes(evaluations=evaluations, ref_index=ref_index,
                             configs=[configs[pk] for pk in ids], columns=columns,
                             texts=[texts_of[pk] for pk in ids], rule=rule,
                             values=stored, bounds=bounds)
    # [keyword, evaluation]: the keyword is in that evaluation's segment; its weight there.
    inside = np.ones((len(shared), len(ids)), dtype=bool)
    weight_matrix = None
    if not choice.everything_plain:
        inside = np.array([[t in tagged[pk] for pk in ids] for t in shared],
                          dtype=bool).reshape(len(shared), len(ids))
        weight_matrix = np.array([[weights[pk][t] for pk in ids] for t in shared],
                                 dtype=np.int64).reshape(len(shared), len(ids))
    # Each evaluation's mean over its own segment; the tests pair each run's segment with
    # the reference, whatever the reference's tags (the run's tags choose).
    paired = np.where(inside[None, :, :], data, np.nan)
    paired[:, :, ref_index] = data[:, :, ref_index]
    # Per evaluation: the keyword ids its mean's bounds cover, and their weights if weighted.
    kept_ids = [id_matrix[inside[:, e], e].tolist() for e in range(len(ids))]
    bound_weights = [dict(zip(id_matrix[:, e].tolist(), weight_matrix[:, e].tolist(),
                              strict=True))
                     if choice.weighted and weight_matrix is not None else None
                     for e in range(len(ids))]
    metrics = []
    for m, (key, row) in enumerate(zip(keys, chosen, strict=True)):
        own = None if choice.everything_plain else [data[m][inside[:, e], e]
                                                    for e in range(len(ids))]
        metric = metric_row(key=key, configs=row, matrix=paired[m], evaluations=evaluations,
                            ref_index=ref_index, mode=mode, resamples=resamples,
                            summary_columns=own)
        if choice.weighted and weight_matrix is not None and own is not None:
            metric = with_weights(
                metric, summary_columns=own, paired=paired[m],
                weight_columns=[weight_matrix[inside[:, e], e] for e in range(len(ids))],
                paired_weights=weight_matrix, ref_index=ref_index)
        metric = with_verdicts(with_bounds(metric, [
            stored_bounds_mean(bounds[config.pk], kept_ids[e], bound_weights[e])
            for e, config in enumerate(row)], ref_index), outcomes)
        metrics.append(metric if choice.everything_plain else segmented(metric))
    # The keyword table pairs as the tests do: a run's cell only where it tags the keyword,
    # a row for each keyword some run tags (every shared keyword without a segment).
    data = paired
    in_rows = inside[:, [e for e in range(len(ids)) if e != ref_index]].any(axis=1)
    # |Δ| to the reference per metric and keyword (the largest over evaluations), -1: none.
    changes = np.abs(data - data[:, :, ref_index:ref_index + 1])
    changes[:, :, ref_index] = np.nan
    by_metric = np.where(np.isnan(changes), -1.0, changes).max(axis=2, initial=-1.0)
    by_any = by_metric.max(axis=0, initial=-1.0) if keys else np.full(len(shared), -1.0)
    changed = by_any > 0
    index = int(sort[1:]) if sort[:1] == "m" and sort[1:].isdigit() else None
    order_key = by_metric[index] if index is not None and index < len(keys) else by_any
    positions = np.arange(len(shared))
    positions = positions[in_rows]
    if show == "changed":
        positions = positions[changed[positions]]
    if sort == "text":
        ordered = positions[::-1] if descending else positions
    else:
        # Rows without a Δ last in either direction, ties by text.
        key = order_key[positions]
        ordered = positions[np.lexsort((positions, -key if descending else key, key < 0))]
    id_lists = id_matrix.tolist()
    changed_list = changed.tolist()
    rows = [KeywordRow(text=texts[shared[r]], normalized_text=shared[r],
                       keyword_ids=id_lists[r], index=r, data=data,
                       reference_index=ref_index, changed=changed_list[r])
            for r in ordered.tolist()]
    if rbo_k is None:
        rbo_k = max((row[ref_index].k for row in chosen), default=10)
    return ManyComparison(
        evaluations=evaluations, reference=reference, mode=mode, metrics=metrics,
        keywords=rows, shared_count=int(in_rows.sum()),
        changed_count=int(changed[in_rows].sum()),
        not_shared_count=all_count - len(shared), unshared_metrics=unshared,
        rbo_k=rbo_k, sort=sort, descending=descending, show=show, resamples=resamples,
        outcomes=[found[0] if found else None for found in outcomes], rule=rule,
        choice=choice,
    )


def keyword_overlaps(*, comparison: ManyComparison, rows: Sequence[KeywordRow],
                     rbo_p: float = 0.9) -> None:
    """Fill each row's churn against the reference (RBO@k, Jaccard of the top k, the
    documents that entered and left) from one query over the rows' snapshots."""
    ids = [pk for row in rows for pk in row.keyword_ids]
    k = comparison.rbo_k
    doc_ids: dict[int, list[str]] = defaultdict(list)
    if ids:
        for keyword_id, doc_id in Snapshot.objects.filter(
                keyword_id__in=ids, position__lte=k,
        ).order_by("keyword_id", "position").values_list("keyword_id", "doc_id"):
            doc_ids[keyword_id].append(doc_id)
    ref = comparison.reference_index
    for row in rows:
        reference_docs = doc_ids[row.keyword_ids[ref]]
        overlaps: list[Overlap | None] = []
        for e, keyword_id in enumerate(row.keyword_ids):
            if e == ref:
                overlaps.append(None)
                continue
            docs = doc_ids[keyword_id]
            entered, left = multi_compare.entered_left(reference_docs, docs, k=k)
            overlaps.append(Overlap(rbo=core.rbo(reference_docs, docs, k=k, p=rbo_p),
                                    jaccard=multi_compare.jaccard(reference_docs, docs, k=k),
                                    entered=entered, left=left))
        row.overlaps = overlaps


def compare_many_csv_rows(comparison: ManyComparison) -> list[list]:
    """The per-keyword table as CSV rows (header first): per metric and evaluation the
    value and Δ to the reference, per other evaluation RBO, Jaccard, entered and left."""
    keyword_overlaps(comparison=comparison, rows=comparison.keywords)
    names = [e.name for e in comparison.evaluations]
    ref = comparison.reference_index
    header = ["keyword"]
    for metric in comparison.metrics:
        for e, name in enumerate(names):
            header.append(f"{metric.label} [{name}]")
            if e != ref:
                header.append(f"{metric.label} Δ [{name}]")
    for e, name in enumerate(names):
        if e != ref:
            header += [f"RBO@{comparison.rbo_k} [{name}]", f"Jaccard@{comparison.rbo_k} [{name}]",
                       f"entered [{name}]", f"left [{name}]"]
    lines: list[list] = [header]
    for row in comparison.keywords:
        line: list = [row.text]
        for values, deltas in zip(row.values, row.deltas, strict=True):
            for e, (value, delta) in enumerate(zip(values, deltas, strict=True)):
                line.append(_number(value))
                if e != ref:
                    line.append(_number(delta))
        for overlap in row.overlaps or []:
            if overlap is not None:
                line += [_number(overlap.rbo), _number(overlap.jaccard),
                         " ".join(overlap.entered), " ".join(overlap.left)]
        lines.append(line)
    return lines


def _number(value: float | None) -> str:
    return "" if value is None else f"{value:.6g}"
