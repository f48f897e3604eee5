"""A regression verdict in words: numbers as printed, a metric's move, the headline, and a
metric judged in several places (overall, per segment, weighted by traffic) summed up in
one sentence, as a lead would say it: "nDCG@10 held overall (+0.004) but fell 0.061 on
tail (95 % CI \u22120.090…\u22120.030, p = 0.002 after Holm) over 312 keywords".

What is decided, and why, is metrics_engine.verdicts'; this module only words it. That
module imports this one, so this one reads its objects by the fields the protocols below
name (a verdict is a StrEnum, compared here with its text).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Protocol


class MetricMeasure(Protocol):
    """What the words read of metrics_engine.verdicts.MetricMeasure."""

    label: str
    run_keyword_count: int
    shared_count: int
    mean_delta: float | None
    ci: tuple[float, float] | None
    segment: str
    weighted: bool

    @property
    def title(self) -> str: ...
    @property
    def delta_range(self) -> tuple[float, float] | None: ...
    def extremes(self, *, worst: bool, count: int = ...) -> list[tuple[Hashable, float]]: ...


class MetricVerdict(Protocol):
    """What the words read of metrics_engine.verdicts.MetricVerdict."""

    measure: MetricMeasure
    verdict: str
    p_adjusted: float | None
    decided_by: str
    comparisons: tuple[MetricVerdict, ...]


REGRESSED, IMPROVED, NO_CHANGE, UNDECIDED = "regressed", "improved", "no_change", "undecided"
BOUNDS = "bounds"  # what decided a comparison (verdicts.DecidedBy), as text


def number(value: float) -> str:
    return f"{value:.3f}"


def signed(value: float, digits: int = 3) -> str:
    # A real minus sign, as printed figures use.
    text = f"{value:+.{digits}f}"
    return text.replace("-", "\u2212")


def ci_text(ci: tuple[float, float] | None) -> str:
    if ci is None:
        return "n/a"
    return f"{signed(ci[0])}\u2026{signed(ci[1])}"


def p_text(p: float) -> str:
    return "< 0.001" if p < 0.001 else f"= {p:.3f}"


def percent(share: float) -> str:
    return f"{share * 100:.0f} %"


def and_list(items: Sequence[str]) -> str:
    """"a", "a and b", "a, b and c"."""
    if len(items) <= 1:
        return "".join(items)
    return f"{', '.join(items[:-1])} and {items[-1]}"


def place(measure: MetricMeasure) -> str:
    """Where a comparison looks: "overall", "on tail", "weighted by traffic", "on tail
    weighted by traffic"."""
    where = f"on {measure.segment}" if measure.segment else ""
    if measure.weighted:
        return f"{where} weighted by traffic".strip()
    return where or "overall"


def moved_text(measure: MetricMeasure, p_adjusted: float | None,
               names: Mapping[Hashable, str]) -> str:
    """The statistics that exist, in words ("nDCG@10 fell 0.031 (95 % CI …, p … after Holm)
    over 48 of 50 keywords; worst: …"); no p when the comparison took no part in Holm."""
    delta = measure.mean_delta
    if delta is None:
        return f"{measure.title} (no keyword has a value on both sides)"
    over = f"over {measure.shared_count} of {measure.run_keyword_count} keywords"
    stats = f"95 % CI {ci_text(measure.ci)}"
    if p_adjusted is not None:
        stats += f", p {p_text(p_adjusted)} after Holm"
    if delta < 0:
        text = f"{measure.title} fell {number(-delta)} ({stats}) {over}"
        worst = measure.extremes(worst=True, count=1)
        if worst:
            key, value = worst[0]
            text += f"; worst: '{names.get(key, str(key))}' {signed(value, 2)}"
    elif delta > 0:
        text = f"{measure.title} rose {number(delta)} ({stats}) {over}"
        best = measure.extremes(worst=False, count=1)
        if best:
            key, value = best[0]
            text += f"; best: '{names.get(key, str(key))}' {signed(value, 2)}"
    else:
        text = f"{measure.title} did not move ({stats}) {over}"
    return text


def bounds_text(word: str, low: float, high: float, threshold: float | None,
                within: bool) -> str:
    """How the bounds decided: "worse, decided by the bounds: …"."""
    if low == high:
        how = (f"{word}, decided by the bounds: every result it reads is graded, so the "
               f"change {signed(low)} is final")
    else:
        how = (f"{word} whatever the ungraded results turn out to be, decided by the "
               f"bounds: the mean change over the keywords both have can only end between "
               f"{signed(low)} and {signed(high)}")
    if threshold:
        how += f", {'within' if within else 'beyond'} the threshold {number(threshold)}"
    return how


def headline(verdict: str, results: Sequence[MetricVerdict]) -> str:
    """The overall verdict in one line; where the rule judged segments or weighted means,
    it says where the metrics moved ("… got worse on tail.")."""
    if not results:
        return "Undecided: no metric is configured in both the run and the baseline."
    count = {kind: sum(1 for r in results if r.verdict == kind)
             for kind in (REGRESSED, IMPROVED, UNDECIDED)}
    total = len(results)
    of = f"of {total} metric{'s' if total != 1 else ''}"
    where = _where(verdict, results)
    if verdict == REGRESSED:
        held = _held_everywhere(results)
        who = "it" if total == 1 else "every metric"
        return (f"Regressed: {count[REGRESSED]} {of} got worse{where}"
                f"{f'; {who} held {and_list(held)}' if held else ''}.")
    if verdict == UNDECIDED:
        return f"Undecided: {count[UNDECIDED]} {of} could not be measured{where}."
    if verdict == IMPROVED:
        return f"Improved: {count[IMPROVED]} {of} got better{where}, none worse."
    return f"No change: none {of} moved beyond chance or the threshold."


def _where(verdict: str, results: Sequence[MetricVerdict]) -> str:
    """" overall and on tail": the places of the comparisons with this verdict, when some
    metric was judged in more than one place; "" otherwise."""
    if not any(result.comparisons for result in results):
        return ""
    places: list[str] = []
    for result in results:
        for comparison in result.comparisons or (result,):
            segment = comparison.measure.segment
            text = f"on {segment}" if segment else "overall"
            if comparison.verdict == verdict and text not in places:
                places.append(text)
    return f" {and_list(places)}" if places else ""


def _held_everywhere(results: Sequence[MetricVerdict]) -> list[str]:
    """The places ("overall", "on head") where every comparison of every metric held."""
    by_place: dict[str, list[str]] = {}
    for result in results:
        for comparison in result.comparisons:
            segment = comparison.measure.segment
            by_place.setdefault(f"on {segment}" if segment else "overall", []).append(
                comparison.verdict)
    return [where for where, verdicts in by_place.items()
            if all(verdict == NO_CHANGE for verdict in verdicts)]


def summary_text(comparisons: Sequence[MetricVerdict], undecided_why: Sequence[str | None]
                 ) -> str:
    """A metric's comparisons in one sentence: where it held (a place's weighted twin
    beside it), then what moved with its statistics, then what could not be decided and
    why. `undecided_why` holds, per comparison, why it is undecided (None when it is not)."""
    label = comparisons[0].measure.label
    held: dict[str, list[MetricVerdict]] = {}
    moved: list[str] = []
    open_: list[str] = []
    moved_verb = ""
    for comparison, why in zip(comparisons, undecided_why, strict=True):
        where = place(comparison.measure)
        if comparison.verdict == UNDECIDED:
            open_.append(f"{where} ({why})" if why else where)
        elif comparison.verdict == NO_CHANGE:
            held.setdefault(comparison.measure.segment, []).append(comparison)
        else:
            verb = "fell" if comparison.verdict == REGRESSED else "rose"
            # The verb once for a run of parts that share it: "fell 0.06 overall (…), 0.11
            # on tail (…) and …".
            moved.append(_moved_part(comparison, where) if moved and moved_verb == verb
                         else f"{verb} {_moved_part(comparison, where)}")
            moved_verb = verb
    text = label
    if held:
        text += f" held {and_list([_held_part(twins) for twins in held.values()])}"
    if moved:
        text += f"{' but' if held else ''} {and_list(moved)}"
    if open_:
        text += f"{'; undecided' if held or moved else ' is undecided'} {and_list(open_)}"
    return text + "."


def _held_part(twins: Sequence[MetricVerdict]) -> str:
    """One place's held comparisons (the unweighted one, then its weighted twin, either
    may be missing): "on head (+0.000)", "on head (+0.000; weighted by traffic +0.001)",
    "on head weighted by traffic (+0.001)"."""
    text = f"{place(twins[0].measure)} ({_delta(twins[0].measure)}"
    for twin in twins[1:]:
        text += f"; weighted by traffic {_delta(twin.measure)}"
    return text + ")"


def _delta(measure: MetricMeasure) -> str:
    return "n/a" if measure.mean_delta is None else signed(measure.mean_delta)


def _moved_part(comparison: MetricVerdict, where: str) -> str:
    """"0.061 on tail (95 % CI …, p = 0.002 after Holm) over 312 keywords", with ", final"
    or the bounds when the bounds decided."""
    measure = comparison.measure
    how = f"95 % CI {ci_text(measure.ci)}"
    if comparison.p_adjusted is not None:
        how += f", p {p_text(comparison.p_adjusted)} after Holm"
    if comparison.decided_by == BOUNDS and measure.delta_range is not None:
        low, high = measure.delta_range
        how += ", final" if low == high else f", bounds {signed(low)}\u2026{signed(high)}"
    over = (f"{measure.shared_count}" if measure.shared_count == measure.run_keyword_count
            else f"{measure.shared_count} of {measure.run_keyword_count}")
    keywords = "keyword" if measure.run_keyword_count == 1 else "keywords"
    return f"{number(abs(measure.mean_delta or 0.0))} {where} ({how}) over {over} {keywords}"
