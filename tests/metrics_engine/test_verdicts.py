"""metrics_engine.verdicts: the paired statistics, Holm across metrics and the words."""

from fractions import Fraction

import pytest

from metrics_engine.bounds import KeywordBounds
from metrics_engine.verdicts import (
    DecidedBy,
    MetricMeasure,
    Verdict,
    VerdictRule,
    metric_measure,
    overall_verdict,
    verdicts_decide,
)
from tests.metrics_engine.exact_bootstrap import bootstrap_interval_atoms

BASELINE = {"a": 0.5, "b": 0.6, "c": 0.7, "d": 0.8, "e": 0.9, "f": 1.0}
DROPS = {"a": 0.1, "b": 0.2, "c": 0.1, "d": 0.3, "e": 0.1, "f": 0.2}


def measure(label="nDCG@10", *, delta=-0.031, p=0.002, shared=48, covered=48, run=50,
            ci=(-0.045, -0.017), deltas=None) -> MetricMeasure:
    return MetricMeasure(label, run, covered, shared, delta, ci, p,
                         deltas if deltas is not None else {"usb-c charger": -0.41, "x": -0.1})


def test_it_measures_the_paired_deltas_by_hand():
    run = {key: BASELINE[key] - DROPS[key] for key in BASELINE} | {"g": None, "h": 0.4}
    result = metric_measure("nDCG@10", BASELINE, run)
    # Shared: a..f (g has no value, h is not in the baseline); 7 of 8 run keywords covered.
    assert (result.run_keyword_count, result.covered_count, result.shared_count) == (8, 7, 6)
    assert result.coverage == pytest.approx(7 / 8)
    assert result.mean_delta == pytest.approx(-1.0 / 6)
    deltas = [run[key] - BASELINE[key] for key in "abcdef"]
    assert deltas == pytest.approx([-DROPS[key] for key in "abcdef"])
    # Drops in tenths {1, 2, 1, 3, 1, 2}: the exact bootstrap distribution of the mean of six
    # draws has 1.6 % at 1/10 and 7.8 % up to 7/60, 96.7 % up to 13/60 and 99.1 % up to
    # 14/60; the 2.5 % and 97.5 % points are the atoms 7/60 and 14/60.
    assert bootstrap_interval_atoms([-Fraction(d) / 10 for d in (1, 2, 1, 3, 1, 2)]) == (
        Fraction(-14, 60), Fraction(-7, 60))
    assert result.ci == (pytest.approx(-14 / 60), pytest.approx(-7 / 60))
    # Six deltas of one sign: only the two all-same-sign flips of 2^6 are as extreme, an
    # exact p of 2/64; 10,000 draws estimate it within 0.005 (three standard errors).
    assert result.p == pytest.approx(2 / 64, abs=0.005)
    assert result.extremes(worst=True, count=2) == [("d", pytest.approx(-0.3)),
                                                    ("b", pytest.approx(-0.2))]


def test_forty_equal_drops_have_a_point_interval_and_the_smallest_p_not_zero():
    # Exact binary fractions: every delta is -0.25 to the bit, so every bootstrap mean is
    # too. 40 deltas of one sign: the two extreme flips of 2^40 are never drawn in 10,000
    # (chance about 2e-8), leaving the observed arrangement alone: p = 1 / (10,000 + 1).
    baseline = {f"q{n}": 0.5 + (n % 4) / 8 for n in range(40)}
    run = {key: value - 0.25 for key, value in baseline.items()}
    result = metric_measure("P@5", baseline, run)
    assert (result.mean_delta, result.ci, result.p) == (-0.25, (-0.25, -0.25), 1 / 10_001)
    outcome = verdicts_decide([result], VerdictRule())
    assert outcome.verdict == Verdict.REGRESSED
    assert outcome.metrics[0].reason.startswith(
        "P@5 fell 0.250 (95 % CI \u22120.250\u2026\u22120.250, p < 0.001 after Holm) over 40 of 40")


def test_the_reason_reads_like_the_issue():
    outcome = verdicts_decide([measure()], VerdictRule())
    assert outcome.verdict == Verdict.REGRESSED
    assert outcome.metrics[0].p_adjusted == 0.002
    assert outcome.reasons == [
        "Regressed: 1 of 1 metric got worse.",
        "nDCG@10 fell 0.031 (95 % CI \u22120.045\u2026\u22120.017, p = 0.002 after Holm) "
        "over 48 of 50 keywords; worst: 'usb-c charger' \u22120.41.",
    ]


def test_holm_adjusts_across_the_metrics():
    # Holm of (0.01, 0.04): 2·0.01 = 0.02, max(0.02, 1·0.04) = 0.04: both below 0.05.
    outcome = verdicts_decide([measure("A", p=0.01), measure("B", p=0.04)], VerdictRule())
    assert [m.p_adjusted for m in outcome.metrics] == [pytest.approx(0.02), pytest.approx(0.04)]
    assert [m.verdict for m in outcome.metrics] == [Verdict.REGRESSED, Verdict.REGRESSED]
    # Holm of (0.03, 0.04): 0.06 and 0.06; each alone would have been significant.
    outcome = verdicts_decide([measure("A", p=0.03), measure("B", p=0.04)], VerdictRule())
    assert [m.p_adjusted for m in outcome.metrics] == [pytest.approx(0.06), pytest.approx(0.06)]
    assert outcome.verdict == Verdict.NO_CHANGE
    assert outcome.metrics[0].reason.endswith("no change, within what chance produces.")


def test_an_undecided_metric_is_left_out_of_holm():
    outcome = verdicts_decide([measure("A", p=0.03), measure("B", p=0.001, covered=40)],
                              VerdictRule())
    assert [m.p_adjusted for m in outcome.metrics] == [0.03, None]
    assert [m.verdict for m in outcome.metrics] == [Verdict.REGRESSED, Verdict.UNDECIDED]
    assert outcome.metrics[1].reason == (
        "Undecided: B: only 40 of 50 keywords have a value (80 %), below the minimum 90 %.")
    # Regressed wins over undecided.
    assert outcome.verdict == Verdict.REGRESSED


def test_it_is_undecided_with_too_few_shared_keywords():
    outcome = verdicts_decide([measure(shared=4, covered=5, run=5)], VerdictRule())
    assert outcome.verdict == Verdict.UNDECIDED
    assert outcome.reasons[1] == ("Undecided: nDCG@10: only 4 keywords with a value in both "
                                  "the run and the baseline, fewer than 5.")


def test_an_improvement_names_the_best_keyword():
    outcome = verdicts_decide(
        [measure(delta=0.02, ci=(0.01, 0.03), deltas={"boots": 0.25, "hat": -0.01})],
        VerdictRule())
    assert outcome.verdict == Verdict.IMPROVED
    assert outcome.metrics[0].reason == (
        "nDCG@10 rose 0.020 (95 % CI +0.010\u2026+0.030, p = 0.002 after Holm) over 48 of 50 "
        "keywords; best: 'boots' +0.25.")


def test_a_drop_within_the_threshold_is_no_change():
    outcome = verdicts_decide([measure(delta=-0.008)], VerdictRule(threshold=0.01))
    assert outcome.verdict == Verdict.NO_CHANGE
    assert outcome.metrics[0].reason.endswith("no change, within the threshold 0.010.")
    assert verdicts_decide([measure(delta=-0.011)],
                           VerdictRule(threshold=0.01)).verdict == Verdict.REGRESSED


@pytest.mark.parametrize("sign", [1, -1])
def test_the_threshold_holds_both_ways(sign):
    # Each move is significant (p = 0.002); only one larger than the threshold counts, and
    # the threshold itself is not larger than itself. Binary fractions: no rounding at 0.25.
    rule = VerdictRule(threshold=0.25)
    verdicts = [verdicts_decide([measure(delta=sign * size, deltas={"q": sign * size})],
                                rule).metrics[0] for size in (0.125, 0.25, 0.375)]
    moved = Verdict.IMPROVED if sign > 0 else Verdict.REGRESSED
    assert [m.verdict for m in verdicts] == [Verdict.NO_CHANGE, Verdict.NO_CHANGE, moved]
    for within in verdicts[:2]:
        assert within.reason.endswith("no change, within the threshold 0.250.")


def test_identical_rankings_are_no_change_whatever_moved_same_results_cannot_differ():
    outcome = verdicts_decide([measure()], VerdictRule(), identical_rankings=True)
    assert outcome.verdict == Verdict.NO_CHANGE
    assert outcome.metrics[0].decided_by == DecidedBy.SAME_RESULTS
    assert outcome.metrics[0].reason == (
        "nDCG@10: same results, cannot differ (the rankings are identical, RBO 1, on every "
        "shared keyword); nDCG@10 moved \u22120.031 over the 48 shared keywords: the grades "
        "moved, not the ranking.")
    # Up or down, graded or not, at any coverage: the same ranking cannot be better.
    assert verdicts_decide([measure(delta=0.02, ci=(0.01, 0.03))], VerdictRule(),
                           identical_rankings=True).verdict == Verdict.NO_CHANGE
    nothing_graded = MetricMeasure("P@5", 10, 0, 0, None, None, None, {})
    outcome = verdicts_decide([nothing_graded], VerdictRule(), identical_rankings=True)
    assert outcome.verdict == Verdict.NO_CHANGE
    assert outcome.metrics[0].reason == (
        "P@5: same results, cannot differ (the rankings are identical, RBO 1, on every "
        "shared keyword).")


# The demo's case, by hand: ten keywords; the baseline is fully graded at 1.0 on each; the
# run has eight keywords graded at 0.5 and two not graded at all (value null, bounds 0..1).
# Coverage 8/10 = 80 %, below the default 90 %. Over the ten keywords both have:
#   baseline bounds [1, 1]; run lower (8 x 0.5 + 0 + 0) / 10 = 0.4, upper (8 x 0.5 + 1 + 1)
#   / 10 = 0.6; the mean change can only end in [0.4 - 1, 0.6 - 1] = [-0.6, -0.4].
DEMO_KEYS = [f"q{n}" for n in range(10)]
DEMO_BASE = {key: 1.0 for key in DEMO_KEYS}
DEMO_RUN = {key: (0.5 if n < 8 else None) for n, key in enumerate(DEMO_KEYS)}
DEMO_BASE_BOUNDS = {key: KeywordBounds(1.0, 1.0, True) for key in DEMO_KEYS}
DEMO_RUN_BOUNDS = {key: (KeywordBounds(0.5, 0.5, True) if n < 8 else KeywordBounds(0.0, 1.0, True))
                   for n, key in enumerate(DEMO_KEYS)}


def demo_measure(**changes) -> MetricMeasure:
    arguments = {"baseline_bounds": DEMO_BASE_BOUNDS, "run_bounds": DEMO_RUN_BOUNDS} | changes
    return metric_measure("P@5", DEMO_BASE, DEMO_RUN, resamples=200, **arguments)


def test_a_regression_proven_by_the_bounds_is_regressed_below_the_coverage():
    result = demo_measure()
    assert (result.coverage, result.shared_count, result.mean_delta) == (0.8, 8, -0.5)
    assert result.baseline_bounds == KeywordBounds(1.0, 1.0, True)
    assert (result.run_bounds.lower, result.run_bounds.upper) == (
        pytest.approx(0.4), pytest.approx(0.6))
    assert result.delta_range == (pytest.approx(-0.6), pytest.approx(-0.4))
    outcome = verdicts_decide([result], VerdictRule())
    assert outcome.verdict == Verdict.REGRESSED
    assert outcome.metrics[0].decided_by == DecidedBy.BOUNDS
    # Not measurable by the statistics (80 % < 90 %): no p after Holm, the interval stays.
    assert outcome.metrics[0].reason == (
        "P@5 fell 0.500 (95 % CI \u22120.500\u2026\u22120.500) over 8 of 10 keywords; "
        "worst: 'q0' \u22120.50: worse whatever the ungraded results turn out to be, decided "
        "by the bounds: the mean change over the keywords both have can only end between "
        "\u22120.600 and \u22120.400.")
    # Without the bounds, only the statistics speak: 80 % < 90 %, undecided.
    plain = metric_measure("P@5", DEMO_BASE, DEMO_RUN, resamples=200)
    assert verdicts_decide([plain], VerdictRule()).verdict == Verdict.UNDECIDED


def test_the_threshold_holds_for_the_bounds_too():
    # [-0.6, -0.4]: beyond a threshold of 0.39 (regressed), not beyond 0.4 (the range
    # touches -0.4) nor 0.5; within neither, so the statistics decide: undecided at 80 %.
    verdict = {t: verdicts_decide([demo_measure()], VerdictRule(threshold=t)).verdict
               for t in (0.39, 0.4, 0.5)}
    assert verdict == {0.39: Verdict.REGRESSED, 0.4: Verdict.UNDECIDED,
                       0.5: Verdict.UNDECIDED}
    # Within [-0.6, 0.6] whatever the grades: no change, decided by the bounds.
    within = verdicts_decide([demo_measure()], VerdictRule(threshold=0.6)).metrics[0]
    assert (within.verdict, within.decided_by) == (Verdict.NO_CHANGE, DecidedBy.BOUNDS)


def test_an_improvement_proven_by_the_bounds_is_improved():
    # Sides swapped: baseline [0.4, 0.6], run [1, 1]; the change ends in [0.4, 0.6].
    swapped = metric_measure("P@5", DEMO_RUN, DEMO_BASE, baseline_bounds=DEMO_RUN_BOUNDS,
                             run_bounds=DEMO_BASE_BOUNDS, resamples=200)
    assert swapped.delta_range == (pytest.approx(0.4), pytest.approx(0.6))
    outcome = verdicts_decide([swapped], VerdictRule())
    assert (outcome.verdict, outcome.metrics[0].decided_by) == (Verdict.IMPROVED,
                                                                DecidedBy.BOUNDS)


def test_final_equal_means_are_no_change_by_the_bounds():
    # Every slot graded on both sides and equal values: the change is exactly 0.
    bounds = {key: KeywordBounds(0.5, 0.5, True) for key in DEMO_KEYS}
    values = dict.fromkeys(DEMO_KEYS, 0.5)
    result = metric_measure("P@5", values, values, baseline_bounds=bounds, run_bounds=bounds,
                            resamples=200)
    assert result.delta_range == (0.0, 0.0)
    metric = verdicts_decide([result], VerdictRule()).metrics[0]
    assert (metric.verdict, metric.decided_by) == (Verdict.NO_CHANGE, DecidedBy.BOUNDS)
    assert metric.reason.startswith("P@5 did not move (95 % CI +0.000\u2026+0.000, p ")
    assert metric.reason.endswith(
        "over 10 of 10 keywords: no change, decided by the bounds: every result it reads is "
        "graded, so the change +0.000 is final.")


def test_bounds_not_stored_yet_decide_nothing():
    partial = {key: value for key, value in DEMO_RUN_BOUNDS.items() if key != "q9"}
    result = demo_measure(run_bounds=partial)
    assert result.bounds_pending and result.delta_range is None
    assert verdicts_decide([result], VerdictRule()).verdict == Verdict.UNDECIDED


def test_bounds_that_overlap_leave_it_to_the_statistics():
    # Baseline 0.5 on every keyword (final); the run's two ungraded keywords span 0..1 and
    # its eight graded ones are 0.5: the change can end in [-0.1, +0.1], open.
    base = {key: KeywordBounds(0.5, 0.5, True) for key in DEMO_KEYS}
    result = metric_measure("P@5", dict.fromkeys(DEMO_KEYS, 0.5), DEMO_RUN,
                            baseline_bounds=base, run_bounds=DEMO_RUN_BOUNDS, resamples=200)
    assert result.delta_range == (pytest.approx(-0.1), pytest.approx(0.1))
    metric = verdicts_decide([result], VerdictRule()).metrics[0]
    assert (metric.verdict, metric.decided_by) == (Verdict.UNDECIDED, DecidedBy.NOTHING)
    assert metric.reason.startswith("Undecided: P@5: only 8 of 10 keywords have a value (80 %)")


def test_the_overall_verdict_orders_regressed_undecided_improved_no_change():
    assert overall_verdict([]) == Verdict.UNDECIDED
    assert overall_verdict([Verdict.IMPROVED, Verdict.REGRESSED]) == Verdict.REGRESSED
    assert overall_verdict([Verdict.IMPROVED, Verdict.UNDECIDED]) == Verdict.UNDECIDED
    assert overall_verdict([Verdict.IMPROVED, Verdict.NO_CHANGE]) == Verdict.IMPROVED
    assert overall_verdict([Verdict.NO_CHANGE]) == Verdict.NO_CHANGE
    assert verdicts_decide([], VerdictRule()).reasons == [
        "Undecided: no metric is configured in both the run and the baseline."]


def test_no_value_at_all_is_undecided():
    result = metric_measure("P@10", BASELINE, dict.fromkeys("abcd"))
    assert (result.shared_count, result.mean_delta, result.p, result.coverage) == (0, None, None,
                                                                                   0.0)
    outcome = verdicts_decide([result], VerdictRule())
    assert outcome.verdict == Verdict.UNDECIDED
    assert outcome.reasons[1] == ("Undecided: P@10: only 0 of 4 keywords have a value (0 %), "
                                  "below the minimum 90 %.")


@pytest.mark.parametrize("bad", [{"min_coverage": 1.5}, {"min_shared_keywords": 0},
                                 {"threshold": -0.1}, {"alpha": 0.0}])
def test_a_rule_refuses_nonsense(bad):
    with pytest.raises(ValueError):
        VerdictRule(**bad)
