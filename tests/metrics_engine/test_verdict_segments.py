"""A verdict per segment and weighted by traffic: the comparisons a rule asks for
(metrics_engine.verdict_segments), Holm across all of them, and the words
(metrics_engine.verdicts, verdict_words)."""

from fractions import Fraction

import pytest

from metrics_engine.verdict_segments import metric_comparisons, segments_not_compared
from metrics_engine.verdicts import (
    MetricMeasure,
    Verdict,
    VerdictRule,
    metric_measure,
    verdicts_decide,
)


def comparison(*, segment="", weighted=False, delta, p, ci, count=312, deltas=None,
               **segments) -> MetricMeasure:
    return MetricMeasure("nDCG@10", count, count, count, delta, ci, p,
                         deltas if deltas is not None else {"boots": delta},
                         segment=segment, weighted=weighted, **segments)


def tail_fell_head_held(*, head_p=0.03) -> MetricMeasure:
    return comparison(delta=0.004, p=0.4, ci=(-0.01, 0.02), count=1000, segment_measures=(
        comparison(segment="head", delta=0.01, p=head_p, ci=(0.001, 0.02), count=200),
        comparison(segment="tail", delta=-0.061, p=0.004, ci=(-0.09, -0.03),
                   deltas={"oak bookshelf": -0.5, "ceramic vase": -0.25})))


def test_the_tail_fell_while_head_and_overall_held_in_a_leads_words():
    outcome = verdicts_decide([tail_fell_head_held()],
                              VerdictRule(segments=("head", "tail")))
    # Holm over the three comparisons, by hand: sorted 0.004 (tail), 0.03 (head), 0.4
    # (overall) → 3 · 0.004 = 0.012, max(0.012, 2 · 0.03) = 0.06, max(0.06, 1 · 0.4) = 0.4.
    # Alone, head's 0.03 would have been significant; with Holm it held.
    [metric] = outcome.metrics
    assert [c.p_adjusted for c in metric.comparisons] == [
        pytest.approx(0.4), pytest.approx(0.06), pytest.approx(0.012)]
    assert [c.verdict for c in metric.comparisons] == [
        Verdict.NO_CHANGE, Verdict.NO_CHANGE, Verdict.REGRESSED]
    assert (outcome.verdict, metric.verdict) == (Verdict.REGRESSED, Verdict.REGRESSED)
    assert outcome.reasons == [
        "Regressed: 1 of 1 metric got worse on tail; it held overall and on head.",
        "nDCG@10 held overall (+0.004) and on head (+0.010) but fell 0.061 on tail (95 % CI "
        "\u22120.090\u2026\u22120.030, p = 0.012 after Holm) over 312 keywords.",
    ]
    # Each comparison keeps its own reason, the metric's label with where it looked.
    assert metric.comparisons[2].reason == (
        "nDCG@10 on tail fell 0.061 (95 % CI \u22120.090\u2026\u22120.030, p = 0.012 after "
        "Holm) over 312 of 312 keywords; worst: 'oak bookshelf' \u22120.50.")


def test_holm_counts_every_comparison_of_every_metric():
    # Two metrics, each overall and on tail: four tests. Sorted 0.004, 0.01, 0.02, 0.4 →
    # 0.016, max(0.016, 0.03) = 0.03, max(0.03, 0.04) = 0.04, max(0.04, 0.4) = 0.4.
    first = comparison(delta=-0.02, p=0.02, ci=(-0.03, -0.01), segment_measures=(
        comparison(segment="tail", delta=-0.05, p=0.004, ci=(-0.08, -0.02)),))
    second = comparison(delta=0.001, p=0.4, ci=(-0.01, 0.01), segment_measures=(
        comparison(segment="tail", delta=-0.03, p=0.01, ci=(-0.05, -0.01)),))
    outcome = verdicts_decide([first, second], VerdictRule(segments=("tail",)))
    adjusted = [c.p_adjusted for metric in outcome.metrics for c in metric.comparisons]
    assert adjusted == [pytest.approx(0.04), pytest.approx(0.016), pytest.approx(0.4),
                        pytest.approx(0.03)]
    assert [m.verdict for m in outcome.metrics] == [Verdict.REGRESSED, Verdict.REGRESSED]
    assert outcome.reasons[0] == "Regressed: 2 of 2 metrics got worse overall and on tail."


# Keys a, b, c: deltas -0.25, -0.5, +0.25 (binary fractions: no rounding), weights 3, 1, 0.
BASE = {"a": 0.75, "b": 1.0, "c": 0.25, "d": 0.5}
RUN = {"a": 0.5, "b": 0.5, "c": 0.5, "d": None}
WEIGHTS = {"a": 3, "b": 1, "c": 0, "d": 5}
TAGS = {"a": ("tail",), "b": ("lang:de", "tail"), "c": ("head",), "d": ("tail",)}


def test_the_weighted_delta_is_the_sum_of_weight_times_delta_over_the_weights():
    measure = metric_comparisons("P@10", BASE, RUN, rule=VerdictRule(weighted=True),
                                 tags=TAGS, weights=WEIGHTS, resamples=200)
    [weighted] = measure.segment_measures
    # (3 · -0.25 + 1 · -0.5) / (3 + 1) = -1.25 / 4; c weighs 0 and d has no value in the run.
    assert (weighted.weighted, weighted.mean_delta, weighted.shared_count) == (
        True, -0.3125, 2)
    # Unweighted, c counts: (-0.25 - 0.5 + 0.25) / 3.
    assert (measure.mean_delta, measure.shared_count) == (pytest.approx(-0.5 / 3), 3)
    assert weighted.title == "P@10 weighted by traffic"


def test_the_weighted_delta_is_the_exact_sum_rounded_once():
    # Deltas 0.1, 0.2, 0.3 (as doubles): their exact sum rounds to 0.6 and 0.6 / 3 is
    # 0.19999999999999998, where adding the doubles one by one gives 0.20000000000000004.
    base, run = dict.fromkeys("xyz", 0.0), {"x": 0.1, "y": 0.2, "z": 0.3}
    measure = metric_comparisons("P@10", base, run, rule=VerdictRule(weighted=True),
                                 tags={}, weights={"x": 1, "y": 1, "z": 1}, resamples=200)
    exact = float(sum(Fraction(delta) for delta in (0.1, 0.2, 0.3))) / 3
    assert exact == 0.19999999999999998 != (0.1 + 0.2 + 0.3) / 3
    assert measure.segment_measures[0].mean_delta == exact == measure.mean_delta


def test_every_weight_one_judges_the_weighted_mean_as_the_plain_one_to_the_bit():
    ones = dict.fromkeys(WEIGHTS, 1)
    measure = metric_comparisons("P@10", BASE, RUN, rule=VerdictRule(weighted=True),
                                 tags=TAGS, weights=ones)
    [weighted] = measure.segment_measures
    assert (weighted.mean_delta, weighted.ci, weighted.p, weighted.shared_count) == (
        measure.mean_delta, measure.ci, measure.p, measure.shared_count)


def test_each_segment_is_its_tagged_keywords_of_the_run_weighted_when_asked():
    rule = VerdictRule(segments=("tail", "lang:de"), weighted=True)
    measure = metric_comparisons("P@10", BASE, RUN, rule=rule, tags=TAGS, weights=WEIGHTS,
                                 resamples=200)
    where = [(m.segment, m.weighted, m.run_keyword_count, m.shared_count, m.mean_delta)
             for m in measure.segment_measures]
    # tail: a, b, d (d without a value): plain (-0.25 - 0.5) / 2, weighted -1.25 / 4.
    assert where == [("", True, 4, 2, -0.3125),
                     ("tail", False, 3, 2, -0.375), ("tail", True, 3, 2, -0.3125),
                     ("lang:de", False, 1, 1, -0.5), ("lang:de", True, 1, 1, -0.5)]
    assert measure.segment_measures[1].title == "P@10 on tail"
    assert measure.segment_measures[2].title == "P@10 on tail weighted by traffic"


def test_a_segment_no_keyword_carries_is_not_compared_and_says_so():
    rule = VerdictRule(segments=("lang:fr",))
    measure = metric_comparisons("P@10", BASE, RUN, rule=rule, tags=TAGS, weights=WEIGHTS,
                                 resamples=200)
    assert measure.segment_measures == ()
    assert segments_not_compared(rule, TAGS) == ["Not compared: no keyword tagged lang:fr."]
    assert segments_not_compared(VerdictRule(segments=("tail",)), TAGS) == []
    outcome = verdicts_decide([measure], rule, notes=segments_not_compared(rule, TAGS))
    assert outcome.metrics[0].comparisons == ()
    assert outcome.reasons[-1] == "Not compared: no keyword tagged lang:fr."


def drops(count: int, prefix: str) -> tuple[dict, dict]:
    """`count` keywords that each fell by 0.25: baseline and run."""
    keys = [f"{prefix}{n}" for n in range(count)]
    return dict.fromkeys(keys, 0.75), dict.fromkeys(keys, 0.5)


@pytest.mark.parametrize(("tagged", "verdict"), [(5, Verdict.REGRESSED),
                                                  (4, Verdict.UNDECIDED)])
def test_a_segment_with_fewer_shared_keywords_than_the_rule_is_undecided_and_says_why(
        tagged, verdict):
    # 40 keywords fell by 0.25 (p = 1 / 10,001: significant), `tagged` of them carry
    # lang:de; the rule wants 5 shared keywords, per segment too.
    base, run = drops(40, "q")
    tags = {key: ("lang:de",) if n < tagged else () for n, key in enumerate(run)}
    rule = VerdictRule(segments=("lang:de",))
    measure = metric_comparisons("P@10", base, run, rule=rule, tags=tags,
                                 weights=dict.fromkeys(run, 1), resamples=200)
    outcome = verdicts_decide([measure], rule)
    overall, german = outcome.metrics[0].comparisons
    assert (overall.verdict, german.verdict) == (Verdict.REGRESSED, verdict)
    if verdict == Verdict.UNDECIDED:
        assert german.reason == ("Undecided: P@10 on lang:de: only 4 keywords with a value in "
                                 "both the run and the baseline, fewer than 5.")
        # Left out of Holm: one test alone, p = 1 / 201 with 200 resamples.
        assert (overall.p_adjusted, german.p_adjusted) == (1 / 201, None)
        assert outcome.reasons[1] == (
            "P@10 fell 0.250 overall (95 % CI \u22120.250\u2026\u22120.250, p = 0.005 after "
            "Holm) over 40 keywords; undecided on lang:de (only 4 keywords with a value in "
            "both the run and the baseline, fewer than 5).")
    # Regressed overall wins over an undecided segment, as over an undecided metric.
    assert outcome.verdict == Verdict.REGRESSED


def test_an_undecided_segment_leaves_a_run_that_held_undecided():
    base, run = drops(2, "t")
    base |= dict.fromkeys(("h0", "h1", "h2", "h3", "h4", "h5"), 0.5)
    run |= dict.fromkeys(("h0", "h1", "h2", "h3", "h4", "h5"), 0.5)
    tags = {key: ("tail",) if key.startswith("t") else ("head",) for key in run}
    rule = VerdictRule(segments=("tail",))
    measure = metric_comparisons("P@10", base, run, rule=rule, tags=tags,
                                 weights=dict.fromkeys(run, 1), resamples=200)
    outcome = verdicts_decide([measure], rule)
    assert [c.verdict for c in outcome.metrics[0].comparisons] == [Verdict.NO_CHANGE,
                                                                  Verdict.UNDECIDED]
    # A gate must not pass a run whose tail could not be measured as if it had held.
    assert outcome.verdict == Verdict.UNDECIDED
    assert outcome.reasons[0] == "Undecided: 1 of 1 metric could not be measured on tail."


def test_without_segments_or_weights_the_verdict_is_todays():
    base, run = drops(40, "q")
    plain = metric_measure("P@10", base, run, resamples=200)
    measure = metric_comparisons("P@10", base, run, rule=VerdictRule(), tags={},
                                 weights=dict.fromkeys(run, 1), resamples=200)
    assert measure == plain
    assert verdicts_decide([measure], VerdictRule()) == verdicts_decide([plain], VerdictRule())


def test_the_rule_names_its_segments_and_weighting_in_words_and_as_json():
    rule = VerdictRule(segments=["tail", "lang:de"], weighted=True)
    assert rule.segments == ("tail", "lang:de")
    assert rule.as_dict() == {"min_coverage": 0.9, "min_shared_keywords": 5,
                              "threshold": None, "alpha": 0.05,
                              "segments": ["tail", "lang:de"], "weighted": True}
    assert VerdictRule(**rule.as_dict()) == rule
    assert rule.text == ("coverage \u2265 90 %, \u2265 5 shared keywords, \u03b1 0.05, any "
                         "change; segments tail, lang:de; weighted by traffic too")


@pytest.mark.parametrize("bad", [
    {"segments": "tail"}, {"segments": [""]}, {"segments": ["x" * 51]},
    {"segments": [f"t{n}" for n in range(21)]}, {"segments": ["tail", "tail"]},
    {"segments": [3]}, {"weighted": "yes"}, {"weighted": 1},
])
def test_a_rule_refuses_segments_or_weighting_that_make_no_sense(bad):
    with pytest.raises(ValueError):
        VerdictRule(**bad)


def test_twenty_segments_of_fifty_characters_are_a_rule():
    assert len(VerdictRule(segments=[f"{n:02d}" + "x" * 48 for n in range(20)]).segments) == 20


def test_the_words_know_every_verdict_by_its_text():
    # verdict_words reads the verdicts by their text (it may not import verdicts, which
    # imports it): the texts must be the enums'.
    from metrics_engine import verdict_words
    from metrics_engine.verdicts import DecidedBy

    assert {verdict_words.REGRESSED, verdict_words.IMPROVED, verdict_words.NO_CHANGE,
            verdict_words.UNDECIDED} == set(Verdict)
    assert verdict_words.BOUNDS == DecidedBy.BOUNDS
