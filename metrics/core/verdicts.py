"""Regression verdicts: is a run worse than its baseline, by how much, on which keywords,
and is it real or noise.

Pure Python + numpy like the rest of the core. The caller hands each metric's per-keyword
values of the baseline and of the run (keyed by anything hashable, e.g. the normalized
keyword text); `metric_measure` computes the paired statistics of one metric and
`verdicts_decide` corrects the p-values across the metrics with Holm and decides.

Per metric, over the keywords both sides have a value for (d = run - baseline):
  - mean delta; its 95 % percentile bootstrap interval (statistics.bootstrap_ci, seeded);
  - the two-sided sign-flip randomization p (statistics.randomization_test, seeded);
  - coverage = the run's keywords with a value / the run's keywords.
Decision per metric, in this order:
  - undecided: coverage below `rule.min_coverage`, or fewer shared keywords than
    `rule.min_shared_keywords`, or no p-value;
  - regressed / improved: the Holm-adjusted p below `rule.alpha` and the mean moved by more
    than `rule.threshold` (when one is set; the threshold holds both ways), down / up;
    except that a drop when every shared keyword has the identical ranking (RBO 1) is
    never *regressed*: the grades moved, not the ranking;
  - no change otherwise.
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

from metrics.core.statistics import bootstrap_ci, holm_adjust, randomization_test

RESAMPLES = 10_000
SEED = 0
WORST_COUNT = 5


class Verdict(StrEnum):
    REGRESSED = "regressed"
    IMPROVED = "improved"
    NO_CHANGE = "no_change"
    UNDECIDED = "undecided"


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


@dataclass(frozen=True)
class RegressionOutcome:
    verdict: Verdict
    metrics: list[MetricVerdict]
    reasons: list[str]
    """The overall verdict first, then one line per metric, then what was not compared."""


def _present(value: float | None) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def metric_measure(
    label: str,
    baseline: Mapping[Hashable, float | None],
    run: Mapping[Hashable, float | None],
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> MetricMeasure:
    """The run against the baseline for one metric. `run` holds every keyword of the run
    (None where it has no value), so its length is the run's keyword count."""
    shared = [key for key in run if _present(run[key]) and _present(baseline.get(key))]
    deltas = {key: float(run[key]) - float(baseline[key]) for key in shared}
    values = np.array(list(deltas.values()), dtype=np.float64)
    covered = sum(1 for value in run.values() if _present(value))
    if values.size == 0:
        return MetricMeasure(label, len(run), covered, 0, None, None, None, {})
    return MetricMeasure(
        label=label, run_keyword_count=len(run), covered_count=covered,
        shared_count=int(values.size), mean_delta=float(values.mean()),
        ci=bootstrap_ci(list(values), resamples=resamples, seed=seed),
        p=randomization_test(values, resamples=resamples, seed=seed),
        deltas=deltas,
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
        verdict, reason = _decide(measure, p_adjusted, rule, identical_rankings, names)
        results.append(MetricVerdict(measure, verdict, p_adjusted, reason))
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


def _decide(measure: MetricMeasure, p_adjusted: float | None, rule: VerdictRule,
            identical_rankings: bool, names: Mapping[Hashable, str]) -> tuple[Verdict, str]:
    undecided = _undecided_reason(measure, rule)
    if undecided is not None:
        return Verdict.UNDECIDED, f"Undecided: {undecided}."
    assert measure.mean_delta is not None and p_adjusted is not None
    delta = measure.mean_delta
    over = f"over {measure.shared_count} of {measure.run_keyword_count} keywords"
    stats = f"(95 % CI {_ci_text(measure.ci)}, p {_p_text(p_adjusted)} after Holm)"
    significant = p_adjusted < rule.alpha and delta != 0
    beyond = rule.threshold is None or abs(delta) > rule.threshold
    if delta < 0:
        text = f"{measure.label} fell {_number(-delta)} {stats} {over}"
        worst = measure.extremes(worst=True, count=1)
        if worst:
            key, value = worst[0]
            text += f"; worst: '{names.get(key, str(key))}' {_signed(value, 2)}"
    elif delta > 0:
        text = f"{measure.label} rose {_number(delta)} {stats} {over}"
        best = measure.extremes(worst=False, count=1)
        if best:
            key, value = best[0]
            text += f"; best: '{names.get(key, str(key))}' {_signed(value, 2)}"
    else:
        text = f"{measure.label} did not move {stats} {over}"
    if not significant:
        return Verdict.NO_CHANGE, f"{text}: no change, within what chance produces."
    if not beyond:
        return (Verdict.NO_CHANGE,
                f"{text}: no change, within the threshold {_number(rule.threshold or 0.0)}.")
    if delta < 0 and identical_rankings:
        return (Verdict.NO_CHANGE,
                f"{text}: no change, the rankings are identical (RBO 1) on every keyword, "
                "so the grades moved, not the ranking.")
    if delta < 0:
        return Verdict.REGRESSED, f"{text}."
    return Verdict.IMPROVED, f"{text}."


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
