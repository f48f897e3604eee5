"""metrics.core.verdicts: the paired statistics, Holm across metrics and the words."""

import numpy as np
import pytest

from metrics.core.statistics import bootstrap_ci, randomization_test
from metrics.core.verdicts import (
    MetricMeasure,
    Verdict,
    VerdictRule,
    metric_measure,
    overall_verdict,
    verdicts_decide,
)

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
    assert result.ci == bootstrap_ci(deltas, seed=0)
    assert result.ci[0] >= -0.3 and result.ci[1] <= -0.1
    assert result.p == randomization_test(np.array(deltas), seed=0)
    # Six deltas of one sign: only the two all-same-sign flips of 2^6 are as extreme.
    assert result.p == pytest.approx(2 / 64, abs=0.005)
    assert result.extremes(worst=True, count=2) == [("d", pytest.approx(-0.3)),
                                                    ("b", pytest.approx(-0.2))]


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


def test_identical_rankings_are_never_regressed():
    outcome = verdicts_decide([measure()], VerdictRule(), identical_rankings=True)
    assert outcome.verdict == Verdict.NO_CHANGE
    assert "the rankings are identical (RBO 1) on every keyword" in outcome.metrics[0].reason
    # An improvement is still one.
    assert verdicts_decide([measure(delta=0.02, ci=(0.01, 0.03))], VerdictRule(),
                           identical_rankings=True).verdict == Verdict.IMPROVED


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
