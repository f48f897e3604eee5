"""behaviour.core.learned: a click model's scores made probabilities, then grades, by the
stated rule; hand-computed counts."""

import numpy as np
import pytest

from behaviour.core.click_models import ClickCounts
from behaviour.core.learned import (
    cuts_problem,
    default_cuts,
    grades_from_relevance,
    learned_relevance,
)


def _counts():
    # Two pairs; position 1 CTR = (40 + 10) / (50 + 50) = 0.5, position 2 CTR = 10 / 100.
    # Pair 0: 40/50 at 1, 10/50 at 2. Pair 1: 10/50 at 1, 0/50 at 2. Pair 2: 3 views only.
    return ClickCounts.from_rows([0, 0, 1, 1, 2], [1, 2, 1, 2, 2], [50, 50, 50, 50, 3],
                                 [40, 10, 10, 0, 0])


def test_coec_relevance_is_the_pair_s_coec_times_position_one_ctr():
    # ctr_1 = 50/100 = .5 and ctr_2 = 10/103. Pair 0 expects 50·.5 + 50·10/103 clicks and
    # got 50; pair 1 expects the same and got 10.
    expected = 25 + 500 / 103
    relevance = learned_relevance(_counts(), model="coec", min_impressions=10)
    assert relevance[0] == pytest.approx(min(1.0, 50 / expected * 0.5))
    assert relevance[1] == pytest.approx(10 / expected * 0.5)
    assert np.isnan(relevance[2])  # 3 impressions, below the minimum of 10


def test_pbm_relevance_does_not_depend_on_the_fit_s_free_scale():
    # One pair shown only at position 1 with CTR .3 and another at 1 and 2: whatever θ_1
    # the fit settles on, alpha · θ_1 of the first pair is its CTR at position 1.
    counts = ClickCounts.from_rows([0, 1, 1], [1, 1, 2], [1000, 1000, 1000],
                                   [300, 600, 300])
    relevance = learned_relevance(counts, model="pbm", min_impressions=10)
    assert relevance[0] == pytest.approx(0.3, abs=1e-4)
    assert relevance[1] == pytest.approx(0.6, abs=1e-4)


def test_the_minimum_impressions_withholds_the_grade():
    counts = ClickCounts.from_rows([0, 1], [1, 1], [9, 10], [9, 5])
    for model in ("coec", "pbm"):
        relevance = learned_relevance(counts, model=model, min_impressions=10)
        assert np.isnan(relevance[0]) and not np.isnan(relevance[1])
        assert grades_from_relevance(relevance, lo=0, hi=3)[0] is None


def test_even_cuts_map_relevance_onto_the_graded_scale():
    assert default_cuts(4) == [0.25, 0.5, 0.75]
    grades = grades_from_relevance(np.array([0.0, 0.2499, 0.25, 0.5, 0.74, 0.75, 1.0, np.nan]),
                                   lo=0, hi=3)
    assert grades == [0, 0, 1, 2, 2, 3, 3, None]


def test_a_grader_s_cuts_and_a_scale_that_starts_at_one():
    assert grades_from_relevance(np.array([0.05, 0.1, 0.3]), lo=1, hi=2, cuts=[0.1]) == [1, 2, 2]


def test_bad_cuts_are_named():
    assert cuts_problem([0.5], 4) == "A scale of 4 grades needs 3 cut points; 1 given."
    assert cuts_problem([0.2, 0.2, 0.7], 4) == "Cut points rise strictly."
    assert cuts_problem([0.0, 0.5, 0.7], 4) == "Cut points lie strictly between 0 and 1."
    assert cuts_problem([0.1, 0.5, 0.7], 4) == ""
    with pytest.raises(ValueError):
        grades_from_relevance(np.array([0.5]), lo=0, hi=3, cuts=[0.5])


def test_the_worked_case_of_metrics_md():
    # docs/METRICS.md: A 10 at 1 (4 clicks) and 10 at 2 (3), B 10 at 1 (2) and 20 at 2 (2).
    counts = ClickCounts.from_rows([0, 0, 1, 1], [1, 2, 1, 2], [10, 10, 10, 20], [4, 3, 2, 2])
    relevance = learned_relevance(counts, model="coec", min_impressions=10)
    assert relevance == pytest.approx([0.45, 3.6 / 19])
    assert grades_from_relevance(relevance, lo=0, hi=3) == [1, 0]
    assert grades_from_relevance(relevance, lo=0, hi=3, cuts=[0.1, 0.2, 0.4]) == [3, 1]
