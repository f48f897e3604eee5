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
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

import numpy as np

from metrics_engine.batch import mean_over_keywords
from metrics_engine.bounds import KeywordBounds, bounds_mean
from metrics_engine.statistics import bootstrap_ci, holm_adjust, randomization_test

RESAMPLES = 10_000
SEED = 0
WORST_COUNT = 5


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

    def __post_init__(self) -> None:
        if not 0.0 <= self.min_coverage <= 1.0:
            raise ValueError("min_coverage must be in [0, 1]")
        if self.min_shared_keywords < 1:
            raise ValueError("min_shared_keywords must be >= 1")
        if self.threshold is not None and not self.threshold >= 0.0:
            raise ValueError("threshold must be >= 0")
        if not 0.0 < self.alpha < 1.0:
            raise ValueError("alpha must be in (0, 1)")

    def as_dict(self) -> dict:
        return {"min_coverage": self.min_coverage,
                "min_shared_keywords": self.min_shared_keywords,
                "threshold": self.threshold, "alpha": self.alpha}

    @property
    def text(self) -> str:
        """The rule in words: "coverage ≥ 90 %, ≥ 5 shared keywords, alpha 0.05, any change"."""
        threshold = ("any change" if self.threshold is None
                     else f"changes beyond {_number(self.threshold)}")
        return (f"coverage \u2265 {_percent(self.min_coverage)}, \u2265 "
                f"{self.min_shared_keywords} shared keyword"
                f"{'s' if self.min_shared_keywords != 1 else ''}, \u03b1 {self.alpha:g}, "
                f"{threshold}")


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
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> MetricMeasure:
    """The run against the baseline for one metric. `run` holds every keyword of the run
    (None where it has no value), so its length is the run's keyword count; `baseline`
    every keyword of the baseline likewise. With both `*_bounds` (per keyword, as stored;
    a keyword missing from them has none yet) the measure carries each side's mean bounds
    over the keywords both sides have."""
    deltas = shared_deltas(baseline, run)
    values = np.array(list(deltas.values()), dtype=np.float64)
    covered = sum(1 for value in run.values() if _present(value))
    bounds: dict = {}
    if baseline_bounds is not None and run_bounds is not None:
        both = [key for key in run if key in baseline]
        missing = KeywordBounds(None, None, True)
        bounds = {
            "baseline_bounds": bounds_mean(baseline_bounds.get(key, missing) for key in both),
            "run_bounds": bounds_mean(run_bounds.get(key, missing) for key in both),
            "bounds_pending": any(key not in baseline_bounds or key not in run_bounds
                                  for key in both),
        }
    if values.size == 0:
        return MetricMeasure(label, len(run), covered, 0, None, None, None, {}, **bounds)
    mean_delta, shared_count = shared_mean_delta(baseline, run)
    return MetricMeasure(
        label=label, run_keyword_count=len(run), covered_count=covered,
        shared_count=shared_count, mean_delta=mean_delta,
        ci=bootstrap_ci(list(values), resamples=resamples, seed=seed),
        p=randomization_test(values, resamples=resamples, seed=seed),
        deltas=deltas, **bounds,
    )


def verdicts_decide(
    measures: Sequence[MetricMeasure],
    rule: VerdictRule,
    *,
    identical_rankings: bool = False,
    names: Mapping[Hashable, str] | None = None,
    notes: Sequence[str] = (),
) -> RegressionOutcome:
    """Holm across the measurable metrics, a verdict per metric and overall, in words.

    `identical_rankings`: every shared keyword returned the same documents in the same
    order (RBO 1), so no metric may be *regressed*. `names` spells the keys in the reasons
    (default: str(key)); `notes` are appended to the reasons (e.g. metrics not compared).
    """
    names = names or {}
    measurable = [_undecided_reason(m, rule) is None for m in measures]
    adjusted = holm_adjust([m.p if ok else None for m, ok in zip(measures, measurable,
                                                                   strict=True)])
    results = []
    for measure, p_adjusted in zip(measures, adjusted, strict=True):
        results.append(_decide(measure, p_adjusted, rule, identical_rankings, names))
    verdict = overall_verdict([r.verdict for r in results])
    headline = _headline(verdict, results)
    return RegressionOutcome(verdict=verdict, metrics=results,
                             reasons=[headline, *(r.reason for r in results), *notes])


def overall_verdict(verdicts: Sequence[Verdict]) -> Verdict:
    """See the module docstring: regressed > undecided > improved > no change; none:
    undecided."""
    if not verdicts:
        return Verdict.UNDECIDED
    for verdict in (Verdict.REGRESSED, Verdict.UNDECIDED, Verdict.IMPROVED):
        if verdict in verdicts:
            return verdict
    return Verdict.NO_CHANGE


def _undecided_reason(measure: MetricMeasure, rule: VerdictRule) -> str | None:
    coverage = measure.coverage
    if coverage is None:
        return f"{measure.label}: the run has no keyword"
    if coverage < rule.min_coverage:
        return (f"{measure.label}: only {measure.covered_count} of {measure.run_keyword_count} "
                f"keywords have a value ({_percent(coverage)}), below the minimum "
                f"{_percent(rule.min_coverage)}")
    if measure.shared_count < rule.min_shared_keywords:
        return (f"{measure.label}: only {measure.shared_count} keyword"
                f"{'' if measure.shared_count == 1 else 's'} with a value in both the run "
                f"and the baseline, fewer than {rule.min_shared_keywords}")
    if measure.p is None or measure.mean_delta is None:
        return f"{measure.label}: no p-value"
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

    if identical_rankings:
        moved = (f"; {measure.label} moved {_signed(measure.mean_delta)} over the "
                 f"{measure.shared_count} shared keywords: the grades moved, not the ranking"
                 if measure.mean_delta else "")
        return result(Verdict.NO_CHANGE,
                      f"{measure.label}: same results, cannot differ (the rankings are "
                      f"identical, RBO 1, on every shared keyword){moved}.",
                      DecidedBy.SAME_RESULTS)
    text = _moved_text(measure, p_adjusted, names)
    by_bounds = _bounds_verdict(measure, rule)
    if by_bounds is not None:
        assert measure.delta_range is not None
        low, high = measure.delta_range
        word = {Verdict.REGRESSED: "worse", Verdict.IMPROVED: "better",
                Verdict.NO_CHANGE: "no change"}[by_bounds]
        if low == high:
            how = (f"{word}, decided by the bounds: every result it reads is graded, so the "
                   f"change {_signed(low)} is final")
        else:
            how = (f"{word} whatever the ungraded results turn out to be, decided by the "
                   f"bounds: the mean change over the keywords both have can only end between "
                   f"{_signed(low)} and {_signed(high)}")
        if rule.threshold:
            beyond = "within" if by_bounds == Verdict.NO_CHANGE else "beyond"
            how += f", {beyond} the threshold {_number(rule.threshold)}"
        return result(by_bounds, f"{text}: {how}.", DecidedBy.BOUNDS)
    undecided = _undecided_reason(measure, rule)
    if undecided is not None:
        return result(Verdict.UNDECIDED, f"Undecided: {undecided}.", DecidedBy.NOTHING)
    assert measure.mean_delta is not None and p_adjusted is not None
    delta = measure.mean_delta
    significant = p_adjusted < rule.alpha and delta != 0
    beyond = rule.threshold is None or abs(delta) > rule.threshold
    by = DecidedBy.STATISTICS
    if not significant:
        return result(Verdict.NO_CHANGE, f"{text}: no change, within what chance produces.", by)
    if not beyond:
        return result(Verdict.NO_CHANGE,
                      f"{text}: no change, within the threshold {_number(rule.threshold or 0.0)}.",
                      by)
    if delta < 0:
        return result(Verdict.REGRESSED, f"{text}.", by)
    return result(Verdict.IMPROVED, f"{text}.", by)


def _moved_text(measure: MetricMeasure, p_adjusted: float | None,
                names: Mapping[Hashable, str]) -> str:
    """The statistics that exist, in words ("nDCG@10 fell 0.031 (95 % CI …, p … after Holm)
    over 48 of 50 keywords; worst: …"); no p when the metric took no part in Holm."""
    delta = measure.mean_delta
    if delta is None:
        return f"{measure.label} (no keyword has a value on both sides)"
    over = f"over {measure.shared_count} of {measure.run_keyword_count} keywords"
    stats = f"95 % CI {_ci_text(measure.ci)}"
    if p_adjusted is not None:
        stats += f", p {_p_text(p_adjusted)} after Holm"
    if delta < 0:
        text = f"{measure.label} fell {_number(-delta)} ({stats}) {over}"
        worst = measure.extremes(worst=True, count=1)
        if worst:
            key, value = worst[0]
            text += f"; worst: '{names.get(key, str(key))}' {_signed(value, 2)}"
    elif delta > 0:
        text = f"{measure.label} rose {_number(delta)} ({stats}) {over}"
        best = measure.extremes(worst=False, count=1)
        if best:
            key, value = best[0]
            text += f"; best: '{names.get(key, str(key))}' {_signed(value, 2)}"
    else:
        text = f"{measure.label} did not move ({stats}) {over}"
    return text


def _headline(verdict: Verdict, results: Sequence[MetricVerdict]) -> str:
    if not results:
        return "Undecided: no metric is configured in both the run and the baseline."
    count = {v: sum(1 for r in results if r.verdict == v) for v in Verdict}
    total = len(results)
    of = f"of {total} metric{'s' if total != 1 else ''}"
    if verdict == Verdict.REGRESSED:
        return f"Regressed: {count[Verdict.REGRESSED]} {of} got worse."
    if verdict == Verdict.UNDECIDED:
        return f"Undecided: {count[Verdict.UNDECIDED]} {of} could not be measured."
    if verdict == Verdict.IMPROVED:
        return f"Improved: {count[Verdict.IMPROVED]} {of} got better, none worse."
    return f"No change: none {of} moved beyond chance or the threshold."


def _number(value: float) -> str:
    return f"{value:.3f}"


def _signed(value: float, digits: int = 3) -> str:
    # A real minus sign, as printed figures use.
    text = f"{value:+.{digits}f}"
    return text.replace("-", "\u2212")


def _ci_text(ci: tuple[float, float] | None) -> str:
    if ci is None:
        return "n/a"
    return f"{_signed(ci[0])}\u2026{_signed(ci[1])}"


def _p_text(p: float) -> str:
    return "< 0.001" if p < 0.001 else f"= {p:.3f}"


def _percent(share: float) -> str:
    return f"{share * 100:.0f} %"
