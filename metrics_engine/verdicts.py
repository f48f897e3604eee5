"""Regression verdicts: is a run worse than its baseline, by how much, on which keywords,
and is it real or noise; the one decision rule every surface uses (the stored verdict, the
gate, the two-way and the N-way compare, and through the stored verdict the dashboard and
a schedule's runs).

Pure Python + numpy like the rest of the core. The caller hands each metric's per-keyword
values of the baseline and of the run (keyed by anything hashable, e.g. the normalized
keyword text), and optionally each side's per-keyword bounds under missing grades;
`metric_measure` computes the paired statistics and the bounds of one metric and
`verdicts_decide` corrects the p-values across the metrics with Holm and decides.

Per metric, over the keywords both sides have a value for (d = run - baseline):
  - mean delta (the one delta every surface shows: the mean over the shared keywords); its
    95 % percentile bootstrap interval (statistics.bootstrap_ci, seeded);
  - the two-sided sign-flip randomization p (statistics.randomization_test, seeded);
  - coverage = the run's keywords with a value / the run's keywords.
And over the keywords both sides have (values or not), each side's mean bounds under
missing grades (docs/METRICS.md, "Bounds under missing grades"); the mean delta can then
still go anywhere in [lower(run) - upper(baseline), upper(run) - lower(baseline)].
Decision per metric, the first that applies:
  1. no change, "same results: cannot differ": every shared keyword has the identical
     ranking (RBO 1), at any coverage; the grades may have moved, the ranking did not;
  2. decided by the bounds, at any coverage: regressed when upper(run) - lower(baseline)
     < -t, improved when lower(run) - upper(baseline) > t, no change when the whole range
     lies within [-t, t] (t = `rule.threshold`, 0 when none; with t = 0 the bounds are the
     docs' "decided" rule, and "no change" only when both means are final and equal);
     never while some shared keyword has no bounds stored yet;
  3. undecided: coverage below `rule.min_coverage`, or fewer shared keywords than
     `rule.min_shared_keywords`, or no p-value;
  4. decided by the statistics: regressed / improved when the Holm-adjusted p is below
     `rule.alpha` and the mean moved by more than `rule.threshold` (when one is set; the
     threshold holds both ways), down / up; no change otherwise.
Overall: regressed if any metric regressed; else undecided if any is undecided (a gate
must not pass a run because one metric improved while another could not be measured);
else improved if any improved; else no change. No metric in common: undecided.

Segments and traffic weights (`rule.segments`, `rule.weighted`; decision record 0013):
each metric is also compared on the keywords carrying each named tag, and with
`weighted` on the means weighted by the run's keyword weights, overall and per segment
(metrics_engine.verdict_segments builds these comparisons). Every comparison is measured
and decided as above, its own coverage and shared keywords counted within it; a weighted
one takes the delta Σ wᵢ·dᵢ / Σ wᵢ, its bootstrap and randomization test weighted
(statistics.weighted_bootstrap_ci, weighted_randomization_test) and its bounds weighted.
Holm corrects across every comparison of the verdict (metrics, segments, weighted or not). A
metric's verdict is then the overall order above over its comparisons, its reason one
sentence (verdict_words.summary_text); each comparison keeps its own.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

import numpy as np

from metrics_engine import verdict_words as words
from metrics_engine.batch import mean_over_keywords
from metrics_engine.bounds import KeywordBounds, bounds_mean
from metrics_engine.statistics import (
    bootstrap_ci,
    holm_adjust,
    randomization_test,
    weighted_bootstrap_ci,
    weighted_randomization_test,
)
from metrics_engine.weighted import weighted_mean

RESAMPLES = 10_000
SEED = 0
WORST_COUNT = 5
# A segment is a keyword tag (at most 50 characters, as evaluations.services.keywords
# cleans one); a rule names at most this many.
MAX_SEGMENTS = 20
MAX_SEGMENT_LENGTH = 50


class Verdict(StrEnum):
    REGRESSED = "regressed"
    IMPROVED = "improved"
    NO_CHANGE = "no_change"
    UNDECIDED = "undecided"


class DecidedBy(StrEnum):
    """What decided a metric's verdict ("" for undecided)."""

    SAME_RESULTS = "same_results"
    BOUNDS = "bounds"
    STATISTICS = "statistics"
    NOTHING = ""


@dataclass(frozen=True)
class VerdictRule:
    min_coverage: float = 0.90
    """Share of the run's keywords that must have a value, in [0, 1]."""
    min_shared_keywords: int = 5
    threshold: float | None = None
    """An absolute change the mean must exceed to count (e.g. 0.01); None: any."""
    alpha: float = 0.05
    segments: tuple[str, ...] = ()
    """Tags whose keywords are also judged apart, e.g. ("tail", "lang:de"), in this order."""
    weighted: bool = False
    """Also judge the means weighted by the run's keyword weights, overall and per segment."""

    def __post_init__(self) -> None:
        if not 0.0 <= self.min_coverage <= 1.0:
            raise ValueError("min_coverage must be in [0, 1]")
        if self.min_shared_keywords < 1:
            raise ValueError("min_shared_keywords must be >= 1")
        if self.threshold is not None and not self.threshold >= 0.0:
            raise ValueError("threshold must be >= 0")
        if not 0.0 < self.alpha < 1.0:
            raise ValueError("alpha must be in (0, 1)")
        if not isinstance(self.segments, list | tuple):
            raise ValueError("segments must be a list of tags")
        # Stored rules give a JSON list; the rule holds a tuple, so it stays hashable.
        object.__setattr__(self, "segments", tuple(self.segments))
        if len(self.segments) > MAX_SEGMENTS:
            raise ValueError(f"segments: at most {MAX_SEGMENTS}")
        if any(not isinstance(tag, str) or not tag or len(tag) > MAX_SEGMENT_LENGTH
               for tag in self.segments):
            raise ValueError(f"segments must be tags of 1 to {MAX_SEGMENT_LENGTH} characters")
        if len(set(self.segments)) != len(self.segments):
            raise ValueError("segments must not repeat a tag")
        if not isinstance(self.weighted, bool):
            raise ValueError("weighted must be true or false")

    def as_dict(self) -> dict:
        return {"min_coverage": self.min_coverage,
                "min_shared_keywords": self.min_shared_keywords,
                "threshold": self.threshold, "alpha": self.alpha,
                "segments": list(self.segments), "weighted": self.weighted}

    @property
    def text(self) -> str:
        """The rule in words: "coverage ≥ 90 %, ≥ 5 shared keywords, alpha 0.05, any change"
        (then "; segments tail, lang:de; weighted by traffic too" when it asks for them)."""
        threshold = ("any change" if self.threshold is None
                     else f"changes beyond {words.number(self.threshold)}")
        text = (f"coverage \u2265 {words.percent(self.min_coverage)}, \u2265 "
                f"{self.min_shared_keywords} shared keyword"
                f"{'s' if self.min_shared_keywords != 1 else ''}, \u03b1 {self.alpha:g}, "
                f"{threshold}")
        if self.segments:
            text += f"; segments {', '.join(self.segments)}"
        if self.weighted:
            text += "; weighted by traffic too"
        return text


@dataclass(frozen=True)
class MetricMeasure:
    """One metric's paired statistics, before the correction across metrics."""

    label: str
    run_keyword_count: int
    covered_count: int
    """The run's keywords with a value."""
    shared_count: int
    """Keywords with a value on both sides: what every statistic covers."""
    mean_delta: float | None
    ci: tuple[float, float] | None
    p: float | None
    deltas: dict[Hashable, float] = field(default_factory=dict)
    baseline_bounds: KeywordBounds | None = None
    """The baseline's mean bounds over the keywords both sides have; None: not given."""
    run_bounds: KeywordBounds | None = None
    bounds_pending: bool = False
    """Some shared keyword has no bounds stored yet: the bounds decide nothing."""
    segment: str = ""
    """The tag whose keywords this compares; "" for every keyword of the run."""
    weighted: bool = False
    """Means weighted by the run's keyword weights: the delta is Σ wᵢ·dᵢ / Σ wᵢ over the
    shared keywords of weight above 0 (those alone count as shared)."""
    segment_measures: tuple[MetricMeasure, ...] = ()
    """On the measure over every keyword, unweighted: the same metric's other comparisons
    the rule asks for (weighted, per segment), each decided and Holm-corrected with every
    other comparison of the verdict."""

    @property
    def title(self) -> str:
        """The label, with where it looks unless that is every keyword unweighted:
        "nDCG@10", "nDCG@10 on tail", "nDCG@10 weighted by traffic"."""
        if not self.segment and not self.weighted:
            return self.label
        return f"{self.label} {words.place(self)}"

    @property
    def delta_range(self) -> tuple[float, float] | None:
        """Where the mean delta can still go once every slot is graded:
        (lower(run) - upper(baseline), upper(run) - lower(baseline)); None when a side has
        no bounds or some are pending."""
        a, b = self.baseline_bounds, self.run_bounds
        if (self.bounds_pending or a is None or b is None
                or None in (a.lower, a.upper, b.lower, b.upper)):
            return None
        return (b.lower - a.upper, b.upper - a.lower)

    @property
    def coverage(self) -> float | None:
        if self.run_keyword_count == 0:
            return None
        return self.covered_count / self.run_keyword_count

    def extremes(self, *, worst: bool, count: int = WORST_COUNT) -> list[tuple[Hashable, float]]:
        """The keywords that fell most (worst) or rose most, largest change first; ties by
        key so the answer does not depend on dict order."""
        moved = [(key, d) for key, d in self.deltas.items() if (d < 0 if worst else d > 0)]
        moved.sort(key=lambda item: (item[1] if worst else -item[1], str(item[0])))
        return moved[:count]


@dataclass(frozen=True)
class MetricVerdict:
    measure: MetricMeasure
    verdict: Verdict
    p_adjusted: float | None
    reason: str
    decided_by: DecidedBy = DecidedBy.NOTHING
    comparisons: tuple[MetricVerdict, ...] = ()
    """Every comparison of the metric, the one over every keyword unweighted first, when
    the rule asks for more than that one; the fields above then sum them up: the verdict
    over all of them (overall_verdict), the reason in one sentence, the rest the first's."""


@dataclass(frozen=True)
class RegressionOutcome:
    verdict: Verdict
    metrics: list[MetricVerdict]
    reasons: list[str]
    """The overall verdict first, then one line per metric, then what was not compared."""


def _present(value: float | None) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def shared_deltas(baseline: Mapping[Hashable, float | None],
                  run: Mapping[Hashable, float | None]) -> dict[Hashable, float]:
    """run - baseline per keyword both have a value for, in the run's order."""
    return {key: float(run[key]) - float(baseline[key]) for key in run
            if _present(run[key]) and _present(baseline.get(key))}


def shared_mean_delta(baseline: Mapping[Hashable, float | None],
                      run: Mapping[Hashable, float | None]) -> tuple[float | None, int]:
    """The one delta every surface shows for a pair (the verdict, the gate, the compare
    pages, the dashboard's cards): the mean of run - baseline over the keywords both have
    a value for, and how many those are; (None, 0) when none. Summed as every mean over
    keywords is (batch.mean_over_keywords): the same float whatever the keywords' order."""
    return mean_over_keywords(list(shared_deltas(baseline, run).values()))


def metric_measure(
    label: str,
    baseline: Mapping[Hashable, float | None],
    run: Mapping[Hashable, float | None],
    *,
    baseline_bounds: Mapping[Hashable, KeywordBounds] | None = None,
    run_bounds: Mapping[Hashable, KeywordBounds] | None = None,
    weights: Mapping[Hashable, int] | None = None,
    segment: str = "",
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> MetricMeasure:
    """The run against the baseline for one metric. `run` holds every keyword of the run
    (None where it has no value), so its length is the run's keyword count; `baseline`
    every keyword of the baseline likewise. With both `*_bounds` (per keyword, as stored;
    a keyword missing from them has none yet) the measure carries each side's mean bounds
    over the keywords both sides have. With `weights` (one per keyword of `run`) every mean
    is weighted by them; `segment` only names the tag `run` was chosen by."""
    deltas = shared_deltas(baseline, run)
    if weights is not None:
        deltas = {key: delta for key, delta in deltas.items() if weights[key] > 0}
    values = np.array(list(deltas.values()), dtype=np.float64)
    covered = sum(1 for value in run.values() if _present(value))
    where = {"segment": segment, "weighted": weights is not None}
    bounds: dict = {}
    if baseline_bounds is not None and run_bounds is not None:
        both = [key for key in run if key in baseline]
        missing = KeywordBounds(None, None, True)
        both_weights = None if weights is None else [weights[key] for key in both]
        bounds = {
            "baseline_bounds": bounds_mean((baseline_bounds.get(key, missing) for key in both),
                                           both_weights),
            "run_bounds": bounds_mean((run_bounds.get(key, missing) for key in both),
                                      both_weights),
            "bounds_pending": any(key not in baseline_bounds or key not in run_bounds
                                  for key in both),
        }
    if values.size == 0:
        return MetricMeasure(label, len(run), covered, 0, None, None, None, {}, **bounds,
                             **where)
    if weights is None:
        mean_delta, shared_count = shared_mean_delta(baseline, run)
        ci = bootstrap_ci(list(values), resamples=resamples, seed=seed)
        p = randomization_test(values, resamples=resamples, seed=seed)
    else:
        shared_weights = [weights[key] for key in deltas]
        # The weighted delta: Σ wᵢ·dᵢ / Σ wᵢ, the exact sum rounded once (docs/METRICS.md).
        mean_delta, shared_count = weighted_mean(values, shared_weights), len(deltas)
        ci = weighted_bootstrap_ci(list(values), shared_weights, resamples=resamples,
                                   seed=seed)
        p = weighted_randomization_test(values, shared_weights, resamples=resamples,
                                        seed=seed)
    return MetricMeasure(
        label=label, run_keyword_count=len(run), covered_count=covered,
        shared_count=shared_count, mean_delta=mean_delta, ci=ci, p=p,
        deltas=deltas, **bounds, **where,
    )


def verdicts_decide(
    measures: Sequence[MetricMeasure],
    rule: VerdictRule,
    *,
    identical_rankings: bool = False,
    names: Mapping[Hashable, str] | None = None,
    notes: Sequence[str] = (),
) -> RegressionOutcome:
    """Holm across every measurable comparison (each metric, and each of its
    `segment_measures`), a verdict per comparison, per metric and overall, in words.

    `identical_rankings`: every shared keyword returned the same documents in the same
    order (RBO 1), so no metric may be *regressed*. `names` spells the keys in the reasons
    (default: str(key)); `notes` are appended to the reasons (e.g. metrics not compared).
    """
    names = names or {}
    comparisons = [(index, comparison) for index, measure in enumerate(measures)
                   for comparison in (measure, *measure.segment_measures)]
    why = [_undecided_why(comparison, rule) for _, comparison in comparisons]
    # One family: every (metric, segment, weighted or not) comparison the verdict decides.
    adjusted = holm_adjust([comparison.p if reason is None else None
                            for (_, comparison), reason in zip(comparisons, why, strict=True)])
    decided = [_decide(comparison, p_adjusted, rule, identical_rankings, names)
               for (_, comparison), p_adjusted in zip(comparisons, adjusted, strict=True)]
    results = []
    for index in range(len(measures)):
        own = [(result, reason) for (owner, _), result, reason
               in zip(comparisons, decided, why, strict=True) if owner == index]
        results.append(own[0][0] if len(own) == 1 else _summed_up(own))
    verdict = overall_verdict([r.verdict for r in results])
    headline = words.headline(verdict, results)
    return RegressionOutcome(verdict=verdict, metrics=results,
                             reasons=[headline, *(r.reason for r in results), *notes])


def _summed_up(own: list[tuple[MetricVerdict, str | None]]) -> MetricVerdict:
    """A metric judged in several places, as one: see MetricVerdict.comparisons."""
    results = [result for result, _ in own]
    first = results[0]
    reason = (first.reason if all(r.decided_by == DecidedBy.SAME_RESULTS for r in results)
              else words.summary_text(results, [reason for _, reason in own]))
    return MetricVerdict(first.measure, overall_verdict([r.verdict for r in results]),
                         first.p_adjusted, reason, first.decided_by, tuple(results))


def overall_verdict(verdicts: Sequence[Verdict]) -> Verdict:
    """See the module docstring: regressed > undecided > improved > no change; none:
    undecided."""
    if not verdicts:
        return Verdict.UNDECIDED
    for verdict in (Verdict.REGRESSED, Verdict.UNDECIDED, Verdict.IMPROVED):
        if verdict in verdicts:
            return verdict
    return Verdict.NO_CHANGE


def _undecided_why(measure: MetricMeasure, rule: VerdictRule) -> str | None:
    """Why rule 3 of the module docstring leaves the comparison undecided, or None."""
    coverage = measure.coverage
    if coverage is None:
        return "the run has no keyword"
    if coverage < rule.min_coverage:
        return (f"only {measure.covered_count} of {measure.run_keyword_count} keywords have "
                f"a value ({words.percent(coverage)}), below the minimum "
                f"{words.percent(rule.min_coverage)}")
    if measure.shared_count < rule.min_shared_keywords:
        return (f"only {measure.shared_count} keyword"
                f"{'' if measure.shared_count == 1 else 's'} with a value in both the run "
                f"and the baseline, fewer than {rule.min_shared_keywords}")
    if measure.p is None or measure.mean_delta is None:
        return "no p-value"
    return None


def _bounds_verdict(measure: MetricMeasure, rule: VerdictRule) -> Verdict | None:
    """Rule 2 of the module docstring: what the bounds prove, or None."""
    span = measure.delta_range
    if span is None:
        return None
    low, high = span
    threshold = rule.threshold or 0.0
    if high < -threshold:
        return Verdict.REGRESSED
    if low > threshold:
        return Verdict.IMPROVED
    if -threshold <= low and high <= threshold:
        return Verdict.NO_CHANGE
    return None


def _decide(measure: MetricMeasure, p_adjusted: float | None, rule: VerdictRule,
            identical_rankings: bool, names: Mapping[Hashable, str]) -> MetricVerdict:
    def result(verdict: Verdict, reason: str, by: DecidedBy) -> MetricVerdict:
        return MetricVerdict(measure, verdict, p_adjusted, reason, by)

    title = measure.title
    if identical_rankings:
        moved = (f"; {title} moved {words.signed(measure.mean_delta)} over the "
                 f"{measure.shared_count} shared keywords: the grades moved, not the ranking"
                 if measure.mean_delta else "")
        return result(Verdict.NO_CHANGE,
                      f"{title}: same results, cannot differ (the rankings are "
                      f"identical, RBO 1, on every shared keyword){moved}.",
                      DecidedBy.SAME_RESULTS)
    text = words.moved_text(measure, p_adjusted, names)
    by_bounds = _bounds_verdict(measure, rule)
    if by_bounds is not None:
        assert measure.delta_range is not None
        word = {Verdict.REGRESSED: "worse", Verdict.IMPROVED: "better",
                Verdict.NO_CHANGE: "no change"}[by_bounds]
        how = words.bounds_text(word, *measure.delta_range, rule.threshold,
                                within=by_bounds == Verdict.NO_CHANGE)
        return result(by_bounds, f"{text}: {how}.", DecidedBy.BOUNDS)
    undecided = _undecided_why(measure, rule)
    if undecided is not None:
        return result(Verdict.UNDECIDED, f"Undecided: {title}: {undecided}.",
                      DecidedBy.NOTHING)
    assert measure.mean_delta is not None and p_adjusted is not None
    delta = measure.mean_delta
    significant = p_adjusted < rule.alpha and delta != 0
    beyond = rule.threshold is None or abs(delta) > rule.threshold
    by = DecidedBy.STATISTICS
    if not significant:
        return result(Verdict.NO_CHANGE, f"{text}: no change, within what chance produces.", by)
    if not beyond:
        return result(Verdict.NO_CHANGE, f"{text}: no change, within the threshold "
                                         f"{words.number(rule.threshold or 0.0)}.", by)
    if delta < 0:
        return result(Verdict.REGRESSED, f"{text}.", by)
    return result(Verdict.IMPROVED, f"{text}.", by)
