"""Reads for comparing two evaluations (the compare page, its side-by-side keyword view and
the compare API): B against A over the keywords they share, with paired statistics from
metrics_engine over the stored values; over every shared keyword, or over those B tags
with a segment's tag, the means and their delta weighted by B's traffic when asked
(metrics.reports.segments).
"""

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from django.db.models import QuerySet

import metrics_engine as core
from evaluations.models import Evaluation, EvaluationMetric, Keyword, Snapshot
from judgments.models import FeedbackSlot
from metrics.models import KeywordMetricValue, RegressionVerdict
from metrics.reports.keyword_snapshots import SnapshotDetail, snapshot_details
from metrics.reports.segments import EVERY_KEYWORD, SegmentChoice, weighted_paired
from metrics.selectors import (
    MetricKey,
    metric_configs,
    metric_key,
    metric_label,
    stored_bounds_mean,
)
from metrics_engine import statistics
from metrics_engine import verdicts as core_verdicts
from metrics_engine.verdicts import MetricVerdict, RegressionOutcome, VerdictRule
from searchtweak.access import GradeVisibility

SIGNIFICANCE = 0.05


def value_delta(value: float | None, reference: float | None) -> float | None:
    return None if value is None or reference is None else value - reference

# --- comparing two evaluations -------------------------------------------------------------


@dataclass(frozen=True)
class MetricComparison:
    key: MetricKey
    label: str
    config_a: EvaluationMetric
    config_b: EvaluationMetric
    result: statistics.PairedComparison
    ci: tuple[float, float] | None
    verdict: str
    direction: str  # "better", "worse", "same", "unknown"
    # Keywords with a value on both sides whose result lists are identical (RBO 1) but
    # whose value differs: the grades changed, not the ranking.
    grading_only_count: int = 0
    ranking_note: str | None = None
    decision: "BoundsDecision | None" = None
    # B against A by the team's rule (metrics_engine.verdicts): what the stored verdict, the
    # gate and the N-way compare say for the same pair.
    rule_verdict: MetricVerdict | None = None
    # Weighted by traffic: Σ of B's weights over the keywords with a value on both sides
    # (the means and the delta of `result` are weighted then); None when not weighted.
    weight_sum: int | None = None

    @property
    def both_count(self) -> int:
        """Shared keywords with a value on both sides: what every statistic here covers."""
        return self.result.keyword_count

    @property
    def rule_verdict_label(self) -> str:
        if self.rule_verdict is None:
            return ""
        return RegressionVerdict.Verdict(self.rule_verdict.verdict).label


@dataclass(frozen=True)
class BoundsDecision:
    """Over the shared keywords: each side's mean bounds under missing grades, whether
    they decide the comparison (docs/METRICS.md), and how many ungraded slots at most stand
    between now and a decision (every slot the metric reads, on both sides)."""

    a: core.KeywordBounds
    b: core.KeywordBounds
    winner: int  # +1 B better, -1 A better, 0 open (core.bounds_decision)
    open_slot_count: int
    # Some shared keyword has no stored bounds yet (its first recompute is due).
    pending: bool = False
    # Every shared keyword has the same results on both sides: they cannot differ.
    same_results: bool = False

    @property
    def text(self) -> str:
        if self.same_results:
            return "Same results: cannot differ."
        if self.winner:
            better, worse = ("B", "A") if self.winner > 0 else ("A", "B")
            ungraded = (f" whatever the {self.open_slot_count} ungraded result"
                        f"{'s' if self.open_slot_count != 1 else ''} turn out to be"
                        if self.open_slot_count else "")
            return f"Decided: {better} is better than {worse}{ungraded}."
        if self.pending:
            return "Not decided yet: some keywords' bounds are still being computed."
        if not self.open_slot_count:
            return "Every result is graded: the means are final."
        return (f"Not decided: at most {self.open_slot_count} more grade"
                f"{'s' if self.open_slot_count != 1 else ''} to a decision.")


@dataclass(frozen=True)
class KeywordComparison:
    text: str
    normalized_text: str
    keyword_a_id: int
    keyword_b_id: int
    values_a: list[float | None]
    values_b: list[float | None]
    deltas: list[float | None]
    rbo: float | None
    # A and B returned the same documents in the same order (top RBO-k): RBO 1.
    same_ranking: bool = False

    @property
    def cells(self) -> list[tuple[float | None, float | None, float | None]]:
        return list(zip(self.values_a, self.values_b, self.deltas, strict=True))

    def change(self, index: int | None) -> float | None:
        """|Δ| of the index-th shared metric, or with None the largest |Δ| of any of them;
        None when no such metric has a value on both sides."""
        if index is not None:
            delta = self.deltas[index] if index < len(self.deltas) else None
            return None if delta is None else abs(delta)
        changes = [abs(delta) for delta in self.deltas if delta is not None]
        return max(changes, default=None)

    @property
    def largest_index(self) -> int | None:
        """Which shared metric changed most for this keyword (the first on a tie)."""
        largest = self.change(None)
        if largest is None:
            return None
        return next(i for i, delta in enumerate(self.deltas)
                    if delta is not None and abs(delta) == largest)


@dataclass(frozen=True)
class Comparison:
    a: Evaluation
    b: Evaluation
    metrics: list[MetricComparison]
    keywords: list[KeywordComparison]
    only_a_count: int
    only_b_count: int
    rbo_k: int
    mean_rbo: float | None
    # Which metric orders the keywords: an index into `metrics`, or None for the largest
    # change of any shared metric.
    sort_index: int | None = None
    # Metrics configured on one side only (labels): not compared, but named, not dropped.
    only_a_metrics: tuple[str, ...] = ()
    only_b_metrics: tuple[str, ...] = ()
    # B against A by `rule` over every compared metric (Holm across them), as a run against
    # its baseline: the verdict a gate of B against A with that rule stores.
    rule: VerdictRule = field(default_factory=VerdictRule)
    outcome: RegressionOutcome | None = None
    # The keywords compared: every shared one, or those B tags with the segment's tag;
    # means and deltas weighted by B's weights when chosen.
    choice: SegmentChoice = EVERY_KEYWORD

    @property
    def sort_label(self) -> str | None:
        """The label of the metric that orders the keywords (None: any of them)."""
        return None if self.sort_index is None else self.metrics[self.sort_index].label

    @property
    def shared_count(self) -> int:
        return len(self.keywords)

    @property
    def identical_rankings(self) -> bool:
        """Every shared keyword has the same result list in A and B (RBO 1)."""
        return bool(self.keywords) and all(row.same_ranking for row in self.keywords)


def comparison_verdict(result: statistics.PairedComparison,
                       ci: tuple[float, float] | None) -> tuple[str, str]:
    """A plain-words reading of B against A: (sentence, direction)."""
    if result.keyword_count < 2 or result.mean_delta is None:
        return ("Too few keywords with a value in both evaluations to tell.", "unknown")
    p = result.randomization_p
    delta = result.mean_delta
    ci_text = f" (95% CI of the change {ci[0]:+.4f} to {ci[1]:+.4f})" if ci else ""
    if delta == 0 or p is None or p >= SIGNIFICANCE:
        return (f"No clear difference: B changes the mean by {delta:+.4f}{ci_text}, which "
                f"chance alone produces often (randomization p = {_p_text(p)}).", "same")
    word = "better" if delta > 0 else "worse"
    return (f"B is {word} than A: {delta:+.4f} on average over {result.keyword_count} "
            f"keywords ({result.wins} up, {result.losses} down, {result.ties} unchanged)"
            f"{ci_text}; unlikely to be chance (randomization p = {p:.3f}, "
            f"t-test p = {_p_text(result.t_test_p)}).", word)


def ranking_note(*, label: str, both_count: int, same_count: int, grading_only_count: int,
                 mean_delta: float | None) -> str | None:
    """A warning when values moved although the rankings did not: a grading difference
    (new or changed grades, another scale or transformer), not a ranking one."""
    if not grading_only_count:
        return None
    if same_count == both_count:
        moved = f" (mean Δ {mean_delta:+.4f})" if mean_delta else ""
        return (f"The rankings are identical (RBO 1) for all {both_count} keyword"
                f"{'s' if both_count != 1 else ''} with a value on both sides, yet {label} "
                f"moved{moved}: a grading difference, not a ranking one.")
    return (f"{grading_only_count} of {both_count} keywords have identical rankings (RBO 1) "
            f"but a different {label}: grading differences, not ranking ones.")


def _p_text(p: float | None) -> str:
    return "n/a" if p is None else f"{p:.3f}"


def evaluation_comparison(*, a: Evaluation, b: Evaluation, sort_index: int | None = None,
                          rbo_k: int | None = None, rbo_p: float = 0.9,
                          resamples: int = 10_000,
                          choice: SegmentChoice = EVERY_KEYWORD) -> Comparison:
    """B against A over the keywords they share (matched by normalized text) for every
    metric configured in both with the same code, k and parameters; the metrics only one
    side has are named in `only_a_metrics` / `only_b_metrics`. Keywords come sorted by the
    largest absolute change over the shared metrics, or of the `sort_index`-th one alone
    (an index past them falls back to all), then by the largest change of any, then by
    lowest RBO.

    A segment (`choice`) keeps the shared keywords B tags with it (the run's tags, as a
    verdict reads a segment): every statistic, the bounds and the team rule's verdict
    cover those. Weighted, each side's mean, the mean delta and the bounds weigh each
    keyword by B's weight (keywords of weight 0 left out); the tests, the interval and the
    rule's verdict still weigh every keyword alike. Every keyword, unweighted: the numbers
    before segments, bit for bit."""
    keywords_a = dict(Keyword.objects.filter(evaluation=a).values_list("normalized_text", "pk"))
    # In position order, as the verdict reads a run: the seeded resampling sees the same
    # sequence, so the numbers match the stored verdict's to the bit.
    traffic_fields = ["weight", "tags"] if not choice.everything_plain else []
    rows_b = list(Keyword.objects.filter(evaluation=b).order_by("position")
                  .values_list("normalized_text", "pk", "text", *traffic_fields))
    keywords_b = {normalized: pk for normalized, pk, *_ in rows_b}
    texts_b = {normalized: text for normalized, _, text, *_ in rows_b}
    weights_b = {row[0]: row[3] for row in rows_b} if choice.weighted else None
    in_segment = {row[0] for row in rows_b if choice.segment in row[4]} \
        if choice.segment else set(keywords_b)
    texts = dict(Keyword.objects.filter(evaluation=a).values_list("normalized_text", "text"))
    # In B's position order, as the verdict reads its run: the paired statistics below see
    # the deltas in the verdict's sequence, so their seeded numbers are the verdict's.
    shared = [text for text in keywords_b if text in keywords_a and text in in_segment]
    shared_anywhere = sum(1 for text in keywords_b if text in keywords_a)
    all_a, all_b = metric_configs(a.pk), metric_configs(b.pk)
    configs_b = {metric_key(c): c for c in all_b}
    pairs = [(c, configs_b[metric_key(c)]) for c in all_a if metric_key(c) in configs_b]
    keys_a = {metric_key(c) for c in all_a}
    stored: dict[tuple[int, int], float | None] = {}
    stored_bounds: dict[int, dict[int, core.KeywordBounds]] = defaultdict(dict)
    for keyword_id, metric_id, value, lower, upper, exact in KeywordMetricValue.objects.filter(
            metric_id__in=[c.pk for pair in pairs for c in pair]
    ).values_list("keyword_id", "metric_id", "value", "lower", "upper", "bounds_exact"):
        stored[(keyword_id, metric_id)] = value
        stored_bounds[metric_id][keyword_id] = core.KeywordBounds(lower, upper, exact)
    open_slots = _open_slot_positions(
        [keywords_a[t] for t in shared] + [keywords_b[t] for t in shared])
    # The depth at which the verdict calls two rankings identical (metrics.reports.verdicts).
    depth = max((pair[0].k for pair in pairs), default=10)
    if rbo_k is None:
        rbo_k = depth
    doc_ids: dict[int, list[str]] = defaultdict(list)
    for keyword_id, doc_id in Snapshot.objects.filter(
            keyword__evaluation_id__in=[a.pk, b.pk], position__lte=max(rbo_k, depth),
    ).order_by("keyword_id", "position").values_list("keyword_id", "doc_id"):
        doc_ids[keyword_id].append(doc_id)

    same_ranking = {t: doc_ids[keywords_a[t]][:rbo_k] == doc_ids[keywords_b[t]][:rbo_k]
                    for t in shared}
    identical = bool(shared) and all(
        doc_ids[keywords_a[t]][:depth] == doc_ids[keywords_b[t]][:depth] for t in shared)
    rule = VerdictRule()
    # The run is B's keywords in the segment (all of them by default), as a verdict of the
    # segment reads it; the baseline is every keyword of A, paired by text.
    run_keywords = {t: pk for t, pk in keywords_b.items() if t in in_segment}
    measures = [core_verdicts.metric_measure(
        metric_label(config_a),
        {t: stored.get((pk, config_a.pk)) for t, pk in keywords_a.items()},
        {t: stored.get((pk, config_b.pk)) for t, pk in run_keywords.items()},
        baseline_bounds={t: stored_bounds[config_a.pk][pk] for t, pk in keywords_a.items()
                         if pk in stored_bounds[config_a.pk]},
        run_bounds={t: stored_bounds[config_b.pk][pk] for t, pk in run_keywords.items()
                    if pk in stored_bounds[config_b.pk]},
        resamples=resamples) for config_a, config_b in pairs]
    # Both sides' keywords weigh B's weight of their text.
    weights_by_id = None if weights_b is None else {
        pk: weights_b[t] for t in shared for pk in (keywords_a[t], keywords_b[t])}
    outcome = core_verdicts.verdicts_decide(measures, rule, identical_rankings=identical,
                                            names=texts_b)
    metrics = []
    for (config_a, config_b), rule_verdict in zip(pairs, outcome.metrics, strict=True):
        values_a = {t: stored.get((keywords_a[t], config_a.pk)) for t in shared}
        values_b = {t: stored.get((keywords_b[t], config_b.pk)) for t in shared}
        result = statistics.paired_comparison(values_a, values_b, resamples=resamples)
        both = [t for t in shared if values_a[t] is not None and values_b[t] is not None]
        weight_sum = None
        if weights_b is not None:
            result, weight_sum = weighted_paired(result, both, values_a, values_b, weights_b)
        deltas = [values_b[t] - values_a[t] for t in both]
        ci = rule_verdict.measure.ci  # the bootstrap of these deltas, in this order
        verdict, direction = comparison_verdict(result, ci)
        grading_only = sum(1 for t, delta in zip(both, deltas, strict=True)
                           if same_ranking[t] and delta != 0)
        label = metric_label(config_a)
        decision = _bounds_decision(
            ([keywords_a[t] for t in shared], config_a),
            ([keywords_b[t] for t in shared], config_b), stored_bounds, open_slots,
            same_results=identical, weights=weights_by_id)
        metrics.append(MetricComparison(
            key=metric_key(config_a), label=label, config_a=config_a,
            config_b=config_b, result=result, ci=ci, verdict=verdict, direction=direction,
            grading_only_count=grading_only,
            ranking_note=ranking_note(
                label=label, both_count=len(both), grading_only_count=grading_only,
                same_count=sum(1 for t in both if same_ranking[t]),
                mean_delta=result.mean_delta),
            decision=decision, rule_verdict=rule_verdict, weight_sum=weight_sum,
        ))

    rows = []
    for text in shared:
        ka, kb = keywords_a[text], keywords_b[text]
        values_a = [stored.get((ka, ca.pk)) for ca, _ in pairs]
        values_b = [stored.get((kb, cb.pk)) for _, cb in pairs]
        rows.append(KeywordComparison(
            text=texts[text], normalized_text=text, keyword_a_id=ka, keyword_b_id=kb,
            values_a=values_a, values_b=values_b,
            deltas=[value_delta(vb, va) for va, vb in zip(values_a, values_b, strict=True)],
            rbo=core.rbo(doc_ids[ka], doc_ids[kb], k=rbo_k, p=rbo_p),
            same_ranking=same_ranking[text],
        ))
    index = sort_index if sort_index is not None and 0 <= sort_index < len(pairs) else None
    rows.sort(key=lambda row: (
        row.change(index) is None, -(row.change(index) or 0.0),
        -(row.change(None) or 0.0),
        row.rbo if row.rbo is not None else 1.0, row.normalized_text,
    ))
    rbos = [row.rbo for row in rows if row.rbo is not None and not math.isnan(row.rbo)]
    return Comparison(
        a=a, b=b, metrics=metrics, keywords=rows,
        # Over every keyword, whatever the segment: a segment leaves the others uncompared,
        # not unshared.
        only_a_count=len(keywords_a) - shared_anywhere,
        only_b_count=len(keywords_b) - shared_anywhere,
        rbo_k=rbo_k, mean_rbo=core.mean_over_keywords(rbos)[0], sort_index=index,
        only_a_metrics=tuple(metric_label(c) for c in all_a if metric_key(c) not in configs_b),
        only_b_metrics=tuple(metric_label(c) for c in all_b if metric_key(c) not in keys_a),
        rule=rule, outcome=outcome, choice=choice,
    )


def _open_slot_positions(keyword_ids: list[int]) -> dict[int, list[int]]:
    """Each keyword's ungraded slots, as the positions they sit at."""
    positions: dict[int, list[int]] = defaultdict(list)
    for keyword_id, position in FeedbackSlot.objects.filter(
            keyword_id__in=keyword_ids, grade__isnull=True).values_list("keyword_id", "position"):
        positions[keyword_id].append(position)
    return positions


def _bounds_decision(side_a: tuple[list[int], EvaluationMetric],
                     side_b: tuple[list[int], EvaluationMetric],
                     stored_bounds: dict[int, dict[int, core.KeywordBounds]],
                     open_slots: dict[int, list[int]], *,
                     same_results: bool = False,
                     weights: dict[int, int] | None = None) -> BoundsDecision:
    """Each side: its shared keywords' ids and its config of the metric; `weights` (by
    keyword id) weigh the mean bounds when given."""
    (mean_a, pending_a), (mean_b, pending_b) = (
        stored_bounds_mean(stored_bounds.get(config.pk, {}), keyword_ids, weights)
        for keyword_ids, config in (side_a, side_b))
    # A pool metric reads every result of the keyword, the others those up to k.
    open_count = sum(
        1 for keyword_ids, config in (side_a, side_b) for keyword_id in keyword_ids
        for position in open_slots.get(keyword_id, ())
        if core.config_reads_pool(config.code, config.params) or position <= config.k)
    pending = pending_a or pending_b
    winner = 0 if pending or same_results else core.bounds_decision(mean_a, mean_b)
    return BoundsDecision(a=mean_a, b=mean_b, winner=winner, open_slot_count=open_count,
                          pending=pending, same_results=same_results)


@dataclass(frozen=True)
class SideBySideRow:
    position: int
    a: SnapshotDetail | None
    b: SnapshotDetail | None
    a_in_b: bool
    b_in_a: bool

    @property
    def same(self) -> bool:
        """Both lists hold the same document at this position."""
        return (self.a is not None and self.b is not None
                and self.a.snapshot.doc_id == self.b.snapshot.doc_id)

    @property
    def cells(self) -> list[tuple[SnapshotDetail | None, bool]]:
        return [(self.a, self.a_in_b), (self.b, self.b_in_a)]


def keyword_side_by_side(*, a: Evaluation, b: Evaluation, normalized_text: str,
                         visibility: GradeVisibility
                         ) -> tuple[Keyword | None, Keyword | None, list[SideBySideRow]]:
    """One keyword's two result lists position by position, each result with the slots
    the viewer may see."""
    keywords = {k.evaluation_id: k for k in Keyword.objects.filter(
        evaluation_id__in=[a.pk, b.pk], normalized_text=normalized_text)}
    keyword_a, keyword_b = keywords.get(a.pk), keywords.get(b.pk)
    lists = snapshot_details([keyword.pk for keyword in keywords.values()],
                             visibility=visibility)
    list_a = lists[keyword_a.pk] if keyword_a else []
    list_b = lists[keyword_b.pk] if keyword_b else []
    docs_a = {d.snapshot.doc_id for d in list_a}
    docs_b = {d.snapshot.doc_id for d in list_b}
    rows = []
    for index in range(max(len(list_a), len(list_b))):
        left = list_a[index] if index < len(list_a) else None
        right = list_b[index] if index < len(list_b) else None
        rows.append(SideBySideRow(
            position=index + 1, a=left, b=right,
            a_in_b=left is not None and left.snapshot.doc_id in docs_b,
            b_in_a=right is not None and right.snapshot.doc_id in docs_a,
        ))
    return keyword_a, keyword_b, rows



def team_evaluations_for_picker(*, team_ids: Sequence[int]) -> QuerySet[Evaluation]:
    return Evaluation.objects.filter(team_id__in=team_ids, archived_at=None).select_related(
        "model").order_by("-created_at", "-id")
