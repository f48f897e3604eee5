"""Reads for comparing 2 to 10 evaluations at once (the N-way compare page, its CSV and
API): per metric each evaluation's mean, bootstrap interval and coverage, tests against a
reference (Holm) or a randomized Tukey HSD over all pairs; per keyword the values, deltas
to the reference, and the churn of the result lists (RBO, Jaccard, documents that entered
or left).

A fixed number of queries whatever N: the metric configs, the keywords and the stored
values of all N evaluations are one query each, and the snapshots of the keywords shown
(a page, or all of them for the CSV) one more. The statistics are seeded, so the same
values give the same numbers; they are cached under a digest of the values they read.
Each evaluation's verdict against the reference (by the team's rule, metrics_engine.verdicts)
reads one more query, the snapshots to the deepest k (identical rankings).
"""

import dataclasses
import hashlib
import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from django.core.cache import cache
from django.core.exceptions import ValidationError

import metrics_engine as core
from evaluations.models import Evaluation, EvaluationMetric, Keyword, Snapshot
from metrics.models import KeywordMetricValue, RegressionVerdict
from metrics.selectors import MetricKey, metric_key, metric_label, stored_bounds_mean
from metrics_engine import multi_compare
from metrics_engine import verdicts as core_verdicts
from metrics_engine.multi_compare import MetricSummary, PairTest, ReferenceTest
from metrics_engine.statistics import bootstrap_ci
from metrics_engine.verdicts import MetricVerdict, RegressionOutcome, VerdictRule

MIN_EVALUATIONS = 2
MAX_EVALUATIONS = 10
# Fewer resamples than the two-way compare's 10,000: N evaluations times their metrics must
# fit a page; with 1,000 the smallest p is 1/1001, well below 0.05 / 9 (Holm's first step).
RESAMPLES = 1_000
SIGNIFICANCE = 0.05
MODES = {"reference": "Against the reference (Holm-adjusted)",
         "tukey": "All pairs (randomized Tukey HSD)"}
SORTS = ("change", "text")  # and "m<index>": the largest |Δ| of one metric
STATS_CACHE_SECONDS = 3600


@dataclass(frozen=True)
class EvaluationMetricStats:
    """One evaluation's numbers for one metric; `test` is None for the reference."""

    evaluation: Evaluation
    config: EvaluationMetric
    summary: MetricSummary
    test: ReferenceTest | None
    # The mean's bounds under missing grades over the compared keywords (docs/METRICS.md),
    # and whether they decide it against the reference: +1 better, -1 worse, 0 open (and
    # always 0 for the reference, or while some keyword has no stored bounds: `pending`).
    bounds: core.KeywordBounds | None = None
    decision: int = 0
    pending: bool = False
    # The evaluation against the reference by the team's rule (metrics_engine.verdicts), as
    # its stored verdict and a gate against the reference decide; None for the reference.
    rule_verdict: MetricVerdict | None = None

    @property
    def rule_verdict_label(self) -> str:
        if self.rule_verdict is None:
            return ""
        return RegressionVerdict.Verdict(self.rule_verdict.verdict).label

    @property
    def significant(self) -> bool:
        return bool(self.test and self.test.p_adjusted is not None
                    and self.test.p_adjusted < SIGNIFICANCE)


@dataclass(frozen=True)
class MetricRow:
    key: MetricKey
    label: str
    stats: list[EvaluationMetricStats]  # in the order of the evaluations
    # Tukey mode only: keywords with a value in every evaluation, and each pair's test.
    complete_count: int = 0
    pairs: list[PairTest] = field(default_factory=list)

    @property
    def named_pairs(self) -> list[tuple[Evaluation, Evaluation, PairTest, bool]]:
        """Tukey's pairs with their evaluations and whether p < SIGNIFICANCE."""
        return [(self.stats[pair.i].evaluation, self.stats[pair.j].evaluation, pair,
                 pair.p < SIGNIFICANCE) for pair in self.pairs]


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
        return [[_value(v) for v in row] for row in self.data[:, self.index, :]]

    @property
    def deltas(self) -> list[list[float | None]]:
        """[metric][evaluation], to the reference; None for the reference itself."""
        ref = self.reference_index
        return [[None if e == ref else _value(v - row[ref]) for e, v in enumerate(row)]
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
                             resamples: int = RESAMPLES) -> ManyComparison:
    """Every metric all the evaluations have (same code, k and parameters) over the keywords
    they all have (matched by normalized text; none in common is a ValidationError on
    `evaluations`). Keywords come sorted by `sort` ("change":
    the largest |Δ| to the reference of any metric; "m<i>": of the i-th metric; "text"),
    `show="changed"` keeps those with some Δ ≠ 0. Churn is left for `keyword_overlaps`."""
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
    # In position order: the verdicts resample each run's keywords in that order.
    for evaluation_id, normalized, pk, text in Keyword.objects.filter(
            evaluation_id__in=ids).order_by("evaluation_id", "position").values_list(
            "evaluation_id", "normalized_text", "pk", "text"):
        column_of[evaluation_id][normalized] = pk
        texts_of[evaluation_id][normalized] = text
        if evaluation_id == reference_id:
            texts[normalized] = text
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
    stored = _config_values(all_configs) if all_configs else {}
    for m, row in enumerate(chosen):
        for e, config in enumerate(row):
            keyword_array, value_array = stored[config.pk]
            column_ids = id_matrix[:, e]
            order = np.argsort(column_ids)
            found = np.searchsorted(column_ids[order], keyword_array)
            inside = found < len(order)
            inside[inside] = column_ids[order][found[inside]] == keyword_array[inside]
            data[m, order[found[inside]], e] = value_array[inside]

    bounds = _config_bounds(all_configs) if all_configs else {}
    rule = VerdictRule()
    outcomes = _rule_outcomes(evaluations=evaluations, ref_index=ref_index,
                              configs=[configs[pk] for pk in ids], columns=columns,
                              texts=[texts_of[pk] for pk in ids], rule=rule,
                              values=stored, bounds=bounds)
    metrics = [
        _with_verdicts(_with_bounds(
            _metric_row(key=key, configs=row, matrix=data[m], evaluations=evaluations,
                        ref_index=ref_index, mode=mode, resamples=resamples),
            [stored_bounds_mean(bounds[config.pk], id_matrix[:, e].tolist())
             for e, config in enumerate(row)],
            ref_index), outcomes)
        for m, (key, row) in enumerate(zip(keys, chosen, strict=True))
    ]
    # |Δ| to the reference per metric and keyword (the largest over evaluations), -1: none.
    changes = np.abs(data - data[:, :, ref_index:ref_index + 1])
    changes[:, :, ref_index] = np.nan
    by_metric = np.where(np.isnan(changes), -1.0, changes).max(axis=2, initial=-1.0)
    by_any = by_metric.max(axis=0, initial=-1.0) if keys else np.full(len(shared), -1.0)
    changed = by_any > 0
    index = int(sort[1:]) if sort[:1] == "m" and sort[1:].isdigit() else None
    order_key = by_metric[index] if index is not None and index < len(keys) else by_any
    positions = np.arange(len(shared))
    if show == "changed":
        positions = positions[changed]
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
        keywords=rows, shared_count=len(shared), changed_count=int(changed.sum()),
        not_shared_count=all_count - len(shared), unshared_metrics=unshared,
        rbo_k=rbo_k, sort=sort, descending=descending, show=show, resamples=resamples,
        outcomes=[found[0] if found else None for found in outcomes], rule=rule,
    )


def _rule_outcomes(*, evaluations: list[Evaluation], ref_index: int,
                   configs: list[list[EvaluationMetric]], columns: list[dict[str, int]],
                   texts: list[dict[str, str]], rule: VerdictRule,
                   values: dict[int, tuple[np.ndarray, np.ndarray]],
                   bounds: dict[int, dict[int, core.KeywordBounds]],
                   ) -> list[tuple[RegressionOutcome, list[MetricKey]] | None]:
    """Each evaluation against the reference by `rule`, exactly as its verdict against the
    reference would be (metrics.reports.verdicts): every metric both configure, every keyword of
    each (coverage), the bounds over the keywords both have, identical rankings to the
    deepest k, the verdict's resamples. Cached under the configs' `updated_at`, which every
    recompute moves. Each outcome comes with its metrics' keys, in its order. `values` and
    `bounds` are every config's stored ones (_config_values, _config_bounds)."""
    all_configs = [c for row in configs for c in row]
    reference_keys = {metric_key(c): c for c in configs[ref_index]}
    key = "metrics:many:verdicts:" + hashlib.blake2b(repr((
        ref_index, rule.as_dict(),
        [(c.pk, c.updated_at.isoformat() if c.updated_at else None) for c in all_configs],
        [sorted(column.items()) for column in columns],
    )).encode(), digest_size=16).hexdigest()
    cached = cache.get(key)
    if cached is not None:
        return cached
    by_keyword = {pk: dict(zip(keyword_ids.tolist(), found.tolist(), strict=True))
                  for pk, (keyword_ids, found) in values.items()}
    depth = max((c.k for c in configs[ref_index]), default=10)
    doc_ids: dict[int, list[str]] = defaultdict(list)
    for keyword_id, doc_id in Snapshot.objects.filter(
            keyword__evaluation_id__in=[e.pk for e in evaluations], position__lte=depth,
    ).order_by("keyword_id", "position").values_list("keyword_id", "doc_id"):
        doc_ids[keyword_id].append(doc_id)
    reference = columns[ref_index]
    outcomes: list[tuple[RegressionOutcome, list[MetricKey]] | None] = []
    for e, column in enumerate(columns):
        if e == ref_index:
            outcomes.append(None)
            continue
        pairs = [(c, reference_keys[metric_key(c)]) for c in configs[e]
                 if metric_key(c) in reference_keys]
        both = [t for t in column if t in reference]
        run_depth = max((c.k for c, _ in pairs), default=10)
        identical = bool(both) and all(
            doc_ids[column[t]][:run_depth] == doc_ids[reference[t]][:run_depth] for t in both)
        measures = [core_verdicts.metric_measure(
            metric_label(run),
            {t: by_keyword[base.pk].get(pk) for t, pk in reference.items()},
            {t: by_keyword[run.pk].get(pk) for t, pk in column.items()},
            baseline_bounds={t: bounds[base.pk][pk] for t, pk in reference.items()
                             if pk in bounds[base.pk]},
            run_bounds={t: bounds[run.pk][pk] for t, pk in column.items()
                        if pk in bounds[run.pk]},
        ) for run, base in pairs]
        outcomes.append((core_verdicts.verdicts_decide(
            measures, rule, identical_rankings=identical, names=texts[e]),
            [metric_key(run) for run, _ in pairs]))
    cache.set(key, outcomes, timeout=STATS_CACHE_SECONDS)
    return outcomes


def _with_verdicts(row: MetricRow,
                   outcomes: list[tuple[RegressionOutcome, list[MetricKey]] | None]
                   ) -> MetricRow:
    """Each evaluation's verdict of this metric, from its outcome."""
    stats = []
    for stat, found in zip(row.stats, outcomes, strict=True):
        verdict = None
        if found is not None:
            outcome, keys = found
            verdict = dict(zip(keys, outcome.metrics, strict=True)).get(row.key)
        same = verdict is not None and verdict.decided_by == core_verdicts.DecidedBy.SAME_RESULTS
        # Identical rankings cannot differ: their bounds decide nothing either.
        stats.append(dataclasses.replace(stat, rule_verdict=verdict,
                                         decision=0 if same else stat.decision))
    return dataclasses.replace(row, stats=stats)


def _value(value: float) -> float | None:
    return None if math.isnan(value) else float(value)


def _config_values(configs: list[EvaluationMetric]) -> dict[int, tuple[np.ndarray,
                                                                         np.ndarray]]:
    """Each config's stored (keyword ids, values), nulls left out: one query for those not
    cached; cached under the config and its `updated_at`, which every recompute moves
    (metrics/recompute/means.py writes it even when the mean is unchanged)."""
    keys = {c.pk: f"metrics:values:{c.pk}:{c.updated_at.isoformat()}"
            for c in configs if c.updated_at is not None}
    cached = cache.get_many(list(keys.values())) if keys else {}
    found = {pk: cached[key] for pk, key in keys.items() if key in cached}
    missing = [c.pk for c in configs if c.pk not in found]
    if missing:
        rows: dict[int, tuple[list[int], list[float]]] = {pk: ([], []) for pk in missing}
        for metric_id, keyword_id, value in KeywordMetricValue.objects.filter(
                metric_id__in=missing, value__isnull=False,
        ).values_list("metric_id", "keyword_id", "value"):
            pair = rows[metric_id]
            pair[0].append(keyword_id)
            pair[1].append(value)
        fresh = {pk: (np.array(kws, dtype=np.int64), np.array(vals, dtype=np.float64))
                 for pk, (kws, vals) in rows.items()}
        cache.set_many({keys[pk]: arrays for pk, arrays in fresh.items() if pk in keys},
                       timeout=STATS_CACHE_SECONDS)
        found.update(fresh)
    return found


def _config_bounds(configs: list[EvaluationMetric]
                   ) -> dict[int, dict[int, core.KeywordBounds]]:
    """Each config's stored keyword bounds by keyword id (null values included: an
    ungraded keyword has bounds), one query for all of them."""
    found: dict[int, dict[int, core.KeywordBounds]] = {c.pk: {} for c in configs}
    for metric_id, keyword_id, lower, upper, exact in KeywordMetricValue.objects.filter(
            metric_id__in=list(found)).values_list(
            "metric_id", "keyword_id", "lower", "upper", "bounds_exact"):
        found[metric_id][keyword_id] = core.KeywordBounds(lower, upper, exact)
    return found


def _with_bounds(row: MetricRow, bounds: list[tuple[core.KeywordBounds, bool]],
                 ref_index: int) -> MetricRow:
    reference, reference_pending = bounds[ref_index]
    stats = []
    for e, (stat, (mean_bounds, pending)) in enumerate(zip(row.stats, bounds, strict=True)):
        undecidable = e == ref_index or pending or reference_pending
        stats.append(dataclasses.replace(
            stat, bounds=mean_bounds, pending=pending or reference_pending,
            decision=0 if undecidable else core.bounds_decision(reference, mean_bounds)))
    return dataclasses.replace(row, stats=stats)


def _stats_key(matrix: np.ndarray, *, ref_index: int, mode: str, resamples: int) -> str:
    digest = hashlib.blake2b(np.ascontiguousarray(matrix).tobytes(), digest_size=16)
    digest.update(f"{matrix.shape}:{ref_index}:{mode}:{resamples}".encode())
    return f"metrics:many:{digest.hexdigest()}"


def _metric_row(*, key: MetricKey, configs: list[EvaluationMetric], matrix: np.ndarray,
                evaluations: list[Evaluation], ref_index: int, mode: str,
                resamples: int) -> MetricRow:
    cache_key = _stats_key(matrix, ref_index=ref_index, mode=mode, resamples=resamples)
    computed = cache.get(cache_key)
    if computed is None:
        summaries = [multi_compare.metric_summary(
            [_value(v) for v in matrix[:, e]], resamples=resamples)
            for e in range(matrix.shape[1])]
        tests = multi_compare.reference_tests(matrix, reference=ref_index,
                                              resamples=resamples)
        complete, pairs = (multi_compare.tukey_randomized(matrix, resamples=resamples)
                           if mode == "tukey" else (0, []))
        computed = (summaries, tests, complete, pairs)
        cache.set(cache_key, computed, timeout=STATS_CACHE_SECONDS)
    summaries, tests, complete, pairs = computed
    test_of = {test.index: test for test in tests}
    return MetricRow(
        key=key, label=metric_label(configs[ref_index]),
        stats=[EvaluationMetricStats(evaluation=evaluation, config=config,
                                     summary=summary, test=test_of.get(e))
               for e, (evaluation, config, summary) in enumerate(
                   zip(evaluations, configs, summaries, strict=True))],
        complete_count=complete, pairs=pairs,
    )


def config_intervals(*, configs: Sequence[EvaluationMetric],
                     resamples: int = RESAMPLES) -> dict[int, tuple[float, float] | None]:
    """Each configured metric's 95 % bootstrap interval of its mean over its keywords'
    stored values (seeded), by config id: one query for all of them; each interval is
    cached under the config and its `updated_at`, which every means refresh moves."""
    intervals: dict[int, tuple[float, float] | None] = {}
    keys = {c.pk: f"metrics:interval:{c.pk}:{c.updated_at.isoformat()}:{resamples}"
            for c in configs if c.updated_at is not None}
    cached = cache.get_many(list(keys.values())) if keys else {}
    missing = [c.pk for c in configs if keys.get(c.pk) not in cached]
    values: dict[int, list[float]] = defaultdict(list)
    if missing:
        for metric_id, value in KeywordMetricValue.objects.filter(
                metric_id__in=missing, value__isnull=False).values_list("metric_id", "value"):
            values[metric_id].append(value)
    for config in configs:
        key = keys.get(config.pk)
        if key in cached:
            intervals[config.pk] = cached[key]
            continue
        present = values[config.pk]
        interval = bootstrap_ci(present, resamples=resamples) if present else None
        intervals[config.pk] = interval
        if key is not None:
            cache.set(key, interval, timeout=STATS_CACHE_SECONDS)
    return intervals


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
