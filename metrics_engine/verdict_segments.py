"""What a verdict rule's segments and traffic weights make of one metric: the comparisons
verdicts_decide judges besides the one over every keyword (decision record 0013).

A segment is the set of the run's keywords carrying a tag (docs/METRICS.md, "Weighted means
and segments"), paired with the baseline by key as every keyword is; the weights are the
run's. Pure Python like the rest of the core.
"""

from collections.abc import Collection, Hashable, Mapping
from dataclasses import replace

from metrics_engine.bounds import KeywordBounds
from metrics_engine.verdicts import RESAMPLES, SEED, MetricMeasure, VerdictRule, metric_measure


def metric_comparisons(
    label: str,
    baseline: Mapping[Hashable, float | None],
    run: Mapping[Hashable, float | None],
    *,
    rule: VerdictRule,
    tags: Mapping[Hashable, Collection[str]],
    weights: Mapping[Hashable, int],
    baseline_bounds: Mapping[Hashable, KeywordBounds] | None = None,
    run_bounds: Mapping[Hashable, KeywordBounds] | None = None,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> MetricMeasure:
    """metric_measure over every keyword of the run, with the comparisons the rule asks
    for as its `segment_measures`, in this order: weighted (when `rule.weighted`), then per
    segment of `rule.segments` the unweighted and, when asked, the weighted one. `tags` and
    `weights` hold each keyword of `run`'s. A segment no keyword of the run carries gets
    no comparison (segments_not_compared says so)."""
    def measure(keys: list[Hashable] | None, segment: str, weighted: bool) -> MetricMeasure:
        chosen = run if keys is None else {key: run[key] for key in keys}
        return metric_measure(label, baseline, chosen, baseline_bounds=baseline_bounds,
                              run_bounds=run_bounds, weights=weights if weighted else None,
                              segment=segment, resamples=resamples, seed=seed)

    others = []
    if rule.weighted:
        others.append(measure(None, "", True))
    for segment in rule.segments:
        keys = [key for key in run if segment in tags.get(key, ())]
        if not keys:
            continue
        others.append(measure(keys, segment, False))
        if rule.weighted:
            others.append(measure(keys, segment, True))
    return replace(measure(None, "", False), segment_measures=tuple(others))


def segments_not_compared(rule: VerdictRule,
                          tags: Mapping[Hashable, Collection[str]]) -> list[str]:
    """A note for each segment of the rule that no keyword of the run carries: it is not
    compared, which is not an error (a tag may come and go with a query set's versions)."""
    carried = {tag for keyword_tags in tags.values() for tag in keyword_tags}
    return [f"Not compared: no keyword tagged {segment}." for segment in rule.segments
            if segment not in carried]
