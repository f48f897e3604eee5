"""Per metric of an N-way compare (metrics.reports.compare_many): each evaluation's mean,
bootstrap interval and coverage, its test against the reference (Holm) or a randomized
Tukey HSD over all pairs, the bounds of its mean, and its verdict against the reference by
the team's rule (metrics_engine.verdicts), as its stored verdict would be. Also each
configured metric's interval alone (a search model's history).

The stored values are read once for every config and cached under the config and its
`updated_at`, which every recompute moves; the statistics are seeded and cached under a
digest of the values they read.
"""

import dataclasses
import hashlib
import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from django.core.cache import cache

import metrics_engine as core
from evaluations.models import Evaluation, EvaluationMetric, Snapshot
from metrics.models import KeywordMetricValue, RegressionVerdict
from metrics.queries import Tagged
from metrics.selectors import MetricKey, metric_key, metric_label
from metrics_engine import multi_compare
from metrics_engine import verdicts as core_verdicts
from metrics_engine.multi_compare import MetricSummary, PairTest, ReferenceTest
from metrics_engine.statistics import bootstrap_ci
from metrics_engine.verdicts import MetricVerdict, RegressionOutcome, VerdictRule
from metrics_engine.weighted import weighted_mean

# Fewer resamples than the two-way compare's 10,000: N evaluations times their metrics must
# fit a page; with 1,000 the smallest p is 1/1001, well below 0.05 / 9 (Holm's first step).
RESAMPLES = 1_000
SIGNIFICANCE = 0.05
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
    # Over a segment or weighted (metrics.reports.segments): the delta shown is the test's,
    # over the keywords the evaluation tags, weighted when chosen.
    segmented: bool = False

    @property
    def rule_verdict_label(self) -> str:
        if self.rule_verdict is None:
            return ""
        return RegressionVerdict.Verdict(self.rule_verdict.verdict).label

    @property
    def delta(self) -> float | None:
        """The mean delta to the reference every surface shows: the verdict's, over the
        keywords both have a value for; over a segment, the test's. None for the
        reference."""
        if self.segmented:
            return self.test.mean_delta if self.test else None
        measure = self.rule_verdict.measure if self.rule_verdict else None
        return measure.mean_delta if measure else None

    @property
    def delta_count(self) -> int | None:
        """The keywords `delta` covers."""
        if self.segmented:
            return self.test.keyword_count if self.test else None
        return self.rule_verdict.measure.shared_count if self.rule_verdict else None

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


def rule_outcomes(*, evaluations: list[Evaluation], ref_index: int,
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
    `bounds` are every config's stored ones (config_values, config_bounds)."""
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


def with_verdicts(row: MetricRow,
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


def value_or_none(value: float) -> float | None:
    return None if math.isnan(value) else float(value)


def config_values(configs: list[EvaluationMetric]) -> dict[int, tuple[np.ndarray, np.ndarray]]:
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


def config_bounds(configs: list[EvaluationMetric]
                  ) -> dict[int, dict[int, core.KeywordBounds]]:
    """Each config's stored keyword bounds by keyword id (null values included: an
    ungraded keyword has bounds), one query for all of them."""
    found: dict[int, dict[int, core.KeywordBounds]] = {c.pk: {} for c in configs}
    for metric_id, keyword_id, lower, upper, exact in KeywordMetricValue.objects.filter(
            metric_id__in=list(found)).values_list(
            "metric_id", "keyword_id", "lower", "upper", "bounds_exact"):
        found[metric_id][keyword_id] = core.KeywordBounds(lower, upper, exact)
    return found


def with_bounds(row: MetricRow, bounds: list[tuple[core.KeywordBounds, bool]],
                ref_index: int) -> MetricRow:
    reference, reference_pending = bounds[ref_index]
    stats = []
    for e, (stat, (mean_bounds, pending)) in enumerate(zip(row.stats, bounds, strict=True)):
        undecidable = e == ref_index or pending or reference_pending
        stats.append(dataclasses.replace(
            stat, bounds=mean_bounds, pending=pending or reference_pending,
            decision=0 if undecidable else core.bounds_decision(reference, mean_bounds)))
    return dataclasses.replace(row, stats=stats)


def _stats_key(matrix: np.ndarray, *, ref_index: int, mode: str, resamples: int,
               columns: Sequence[np.ndarray] | None = None) -> str:
    digest = hashlib.blake2b(np.ascontiguousarray(matrix).tobytes(), digest_size=16)
    digest.update(f"{matrix.shape}:{ref_index}:{mode}:{resamples}".encode())
    for column in columns or []:
        digest.update(f"|{column.shape}|".encode() + np.ascontiguousarray(column).tobytes())
    return f"metrics:many:{digest.hexdigest()}"


def metric_row(*, key: MetricKey, configs: list[EvaluationMetric], matrix: np.ndarray,
               evaluations: list[Evaluation], ref_index: int, mode: str,
               resamples: int, summary_columns: Sequence[np.ndarray] | None = None
               ) -> MetricRow:
    """The metric's statistics: each evaluation's summary over its column of `matrix`
    ([keyword, evaluation], NaN = no value), or over `summary_columns[e]` when given (the
    keywords of its segment), and the tests over `matrix`."""
    cache_key = _stats_key(matrix, ref_index=ref_index, mode=mode, resamples=resamples,
                           columns=summary_columns)
    computed = cache.get(cache_key)
    if computed is None:
        columns = summary_columns if summary_columns is not None else [
            matrix[:, e] for e in range(matrix.shape[1])]
        summaries = [multi_compare.metric_summary(
            [value_or_none(v) for v in column], resamples=resamples) for column in columns]
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


def with_weights(row: MetricRow, *, summary_columns: Sequence[np.ndarray],
                 weight_columns: Sequence[np.ndarray], paired: np.ndarray,
                 paired_weights: np.ndarray, ref_index: int) -> MetricRow:
    """The row with each evaluation's mean weighted by its keywords' weights
    (`summary_columns[e]` and `weight_columns[e]`, its segment's values and weights) and
    each test's mean delta to the reference weighted by the run's weights over the
    keywords both have (`paired` [keyword, evaluation], `paired_weights` the run's weight
    of each); keywords of weight 0 left out (docs/METRICS.md). The intervals, counts and
    p-values stay those of every keyword alike."""
    stats = []
    for e, stat in enumerate(row.stats):
        summary = dataclasses.replace(stat.summary, mean=weighted_mean(
            [value_or_none(v) for v in summary_columns[e]], weight_columns[e].tolist()))
        test = stat.test
        if test is not None:
            deltas = paired[:, e] - paired[:, ref_index]
            test = dataclasses.replace(test, mean_delta=weighted_mean(
                [value_or_none(v) for v in deltas], paired_weights[:, e].tolist()))
        stats.append(dataclasses.replace(stat, summary=summary, test=test))
    return dataclasses.replace(row, stats=stats)


def segmented(row: MetricRow) -> MetricRow:
    """The row over a segment or weighted: each evaluation shows its test's delta."""
    return dataclasses.replace(row, stats=[dataclasses.replace(stat, segmented=True)
                                           for stat in row.stats])


def config_intervals(*, configs: Sequence[EvaluationMetric], resamples: int = RESAMPLES,
                     segment: str = "") -> dict[int, tuple[float, float] | None]:
    """Each configured metric's 95 % bootstrap interval of its mean over its keywords'
    stored values (seeded), by config id, over the keywords tagged `segment` when given:
    one query for all of them; each interval is cached under the config, the segment and
    the config's `updated_at`, which every means refresh moves."""
    intervals: dict[int, tuple[float, float] | None] = {}
    # A tag may hold spaces, which a cache key may not: its digest stands for it.
    tag = f":{hashlib.blake2b(segment.encode(), digest_size=8).hexdigest()}" if segment else ""
    keys = {c.pk: f"metrics:interval:{c.pk}:{c.updated_at.isoformat()}:{resamples}{tag}"
            for c in configs if c.updated_at is not None}
    cached = cache.get_many(list(keys.values())) if keys else {}
    missing = [c.pk for c in configs if keys.get(c.pk) not in cached]
    values: dict[int, list[float]] = defaultdict(list)
    if missing:
        rows = KeywordMetricValue.objects.filter(metric_id__in=missing, value__isnull=False)
        if segment:
            rows = rows.filter(Tagged(segment, through="keyword__"))
        for metric_id, value in rows.values_list("metric_id", "value"):
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
