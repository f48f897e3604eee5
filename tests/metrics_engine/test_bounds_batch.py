"""metrics_engine.bounds_batch: the application's bounds, keyword by keyword the brute-force
enumeration's (exact) or containing it (labelled), whatever the keywords around them."""

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from metrics.conformance import _keyword_bounds
from metrics_engine import METRICS, SCALES, MetricInputError, Scale, evaluate_keywords, metric_spec
from metrics_engine.batch import evaluate_batch_many
from metrics_engine.bounds_batch import bounds_batch, bounds_batch_many
from metrics_engine.registry import metric_scale, needs_pool, resolve_params
from tests.property_depth import examples

_SCALES = (*SCALES.values(), Scale("signed", -1, 3))
_MAX_HOLES = {"binary": 8, "graded": 5, "detail": 3, "signed": 5}
_CODES = sorted(code for code, spec in METRICS.items() if not spec.needs_pool)


def _arrays(keywords: list[list[list[Any]]], slots: int, positions: int):
    grades = np.full((len(keywords), positions, slots), np.nan)
    ungraded = np.zeros(grades.shape, dtype=bool)
    for row, results in enumerate(keywords):
        for position, position_grades in enumerate(results):
            for slot, grade in enumerate(position_grades):
                if grade is None:
                    ungraded[row, position, slot] = True
                else:
                    grades[row, position, slot] = grade
    return grades, ungraded


@st.composite
def _batches(draw: Any, code: str) -> dict[str, Any]:
    spec = metric_spec(code)
    scale = draw(st.sampled_from(_SCALES))
    target = metric_scale(spec, scale)
    slots = draw(st.integers(1, 3))  # the array's slots: the strategy's most
    # "1 → 3" (adaptive slots): a position has 1, 2 or 3 of them, an even count can tie.
    ragged = slots == 3 and draw(st.booleans())
    positions = draw(st.integers(1, 6))
    keywords = []
    for _ in range(draw(st.integers(1, 4))):
        holes_left = _MAX_HOLES[scale.code]
        results = []
        for _ in range(draw(st.integers(0, positions))):
            position_grades = []
            for _ in range(draw(st.integers(1, slots)) if ragged else slots):
                grade = draw(st.one_of(st.none(), st.integers(scale.lo, scale.hi)))
                if grade is None:
                    if holes_left == 0:
                        grade = scale.lo
                    else:
                        holes_left -= 1
                position_grades.append(grade)
            results.append(position_grades)
        keywords.append(results)
    params: dict[str, Any] = {}
    if "gain" in spec.params:
        params["gain"] = draw(st.sampled_from(("linear", "exponential")))
    if "ideal" in spec.params:
        params["ideal"] = draw(st.sampled_from(("local", "max")))
    transformers = None
    if scale != target and (not scale.is_builtin or draw(st.booleans())):
        transformers = {f"{scale.code}->{target.code}": {
            str(g): draw(st.integers(target.lo, target.hi)) for g in scale.grades
        }}
    return {"metric": code, "k": draw(st.sampled_from((1, 2, 3, 5, 10))), "scale": scale,
            "keywords": keywords, "slots": slots, "positions": positions, "params": params,
            "transformers": transformers,
            "max_completions": draw(st.sampled_from((1, 4, 64))),
            "max_vote_completions": draw(st.sampled_from((1, 4, 1024)))}


def _brute_force(case: dict[str, Any], results: list) -> tuple[float | None, float | None]:
    def evaluate(keywords: list, keyword_pools: list) -> Any:
        return evaluate_keywords(
            case["metric"], [[grades for _doc, grades in r] for r in keywords],
            k=case["k"], scale=case["scale"], params=case["params"],
            transformers=case["transformers"],
        )

    return _keyword_bounds([(("p", i), g) for i, g in enumerate(results)], [],
                           case["scale"], evaluate)


def _check(case: dict[str, Any]) -> None:
    grades, ungraded = _arrays(case["keywords"], case["slots"], case["positions"])
    got = bounds_batch(case["metric"], grades, ungraded, k=case["k"], scale=case["scale"],
                       params=case["params"], transformers=case["transformers"],
                       max_completions=case["max_completions"],
                       max_vote_completions=case["max_vote_completions"])
    for row, results in enumerate(case["keywords"]):
        lower, upper = _brute_force(case, results)
        mine = [None if math.isnan(v) else float(v) for v in (got.lower[row], got.upper[row])]
        if got.exact[row]:
            for value, expected in zip(mine, (lower, upper), strict=True):
                assert (value is None) == (expected is None), (row, mine, lower, upper)
                if value is not None:
                    assert math.isclose(value, expected, rel_tol=1e-9, abs_tol=1e-9), \
                        (row, mine, lower, upper)
        elif lower is not None:
            assert mine[0] <= lower + 1e-9 and mine[1] >= upper - 1e-9, (row, mine, lower, upper)


@pytest.mark.parametrize("code", _CODES)
def test_batch_bounds_equal_brute_force_keyword_by_keyword(code: str) -> None:
    @settings(max_examples=examples(60), deadline=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(_batches(code))
    def check(case: dict[str, Any]) -> None:
        _check(case)

    check()


def test_a_fully_graded_keyword_is_its_value_and_exact():
    grades, ungraded = _arrays([[[1, 0, 1], [0, 0, 0]], [[1, None, 1], [None, None, None]]], 3, 2)
    got = bounds_batch("ap", grades, ungraded, k=2, scale="binary")
    assert (got.lower[0], got.upper[0], got.exact[0]) == (1.0, 1.0, True)
    # Keyword 2: position 1 is relevant whatever its open slot says (2 of 3 already voted 1);
    # position 2 ends 0 (AP = 1) or 1 (AP = (1 + 1) / 2 = 1): both completions give 1.
    assert (got.lower[1], got.upper[1], got.exact[1]) == (1.0, 1.0, True)


def test_ap_enumerates_the_undecided_positions():
    # Binary, one slot: [null, 1, null] at k = 3. Completions: 0,1,0 → 1/2; 1,1,0 → 1;
    # 0,1,1 → (1/2 + 2/3) / 2 = 7/12; 1,1,1 → 1. So [1/2, 1], exact.
    grades, ungraded = _arrays([[[None], [1], [None]]], 1, 3)
    got = bounds_batch("ap", grades, ungraded, k=3, scale="binary")
    assert got.lower[0] == pytest.approx(0.5) and got.upper[0] == pytest.approx(1.0)
    assert bool(got.exact[0]) is True


def test_ndcg_local_enumerates_outcomes_then_past_the_cap_is_the_labelled_ratio_range():
    # Graded, one slot: [3, null] at k = 2, linear gains. v2 = 0..3 each ranks ideally
    # (3 ≥ v2), so every completion gives nDCG 1: exact [1, 1] by its 4 outcomes.
    grades, ungraded = _arrays([[[3], [None]]], 1, 2)
    got = bounds_batch("ndcg", grades, ungraded, k=2, scale="graded")
    assert (got.lower[0], got.upper[0], bool(got.exact[0])) == (1.0, 1.0, True)
    # With room for 1 completion: low fill [3, 0], DCG = IDCG = 3; high fill [3, 3],
    # DCG = IDCG = 3 + 3/log2(3). Range 3 / (3 + 3/log2 3) .. min(1, 3 / 3) = 1, labelled.
    got = bounds_batch("ndcg", grades, ungraded, k=2, scale="graded", max_completions=1)
    assert got.lower[0] == pytest.approx(3 / (3 + 3 / math.log2(3)))
    assert got.upper[0] == pytest.approx(1.0)
    assert bool(got.exact[0]) is False


def test_pool_metrics_are_refused_by_the_batch_path():
    grades, ungraded = _arrays([[[1]]], 1, 1)
    assert needs_pool("recall", resolve_params(None))
    with pytest.raises(MetricInputError, match="reads the pool"):
        bounds_batch("recall", grades, ungraded, k=1, scale="binary")


@st.composite
def _several(draw: Any) -> dict[str, Any]:
    """One grade array and 1..6 metrics of it, as a recompute bounds them."""
    case = draw(_batches(draw(st.sampled_from(_CODES))).filter(
        lambda drawn: drawn["scale"].is_builtin))
    requests = []
    for code in draw(st.lists(st.sampled_from(_CODES), min_size=1, max_size=6)):
        spec = metric_spec(code)
        params: dict[str, Any] = {}
        if "gain" in spec.params:
            params["gain"] = draw(st.sampled_from(("linear", "exponential")))
        if "ideal" in spec.params:
            params["ideal"] = draw(st.sampled_from(("local", "max")))
        requests.append((code, draw(st.sampled_from((1, 2, 3, 5, 10))), params))
    # Built-in scales have default transformers to every metric's scale; a transformer
    # drawn for the first metric's target may not map the others'.
    return {**case, "requests": requests, "transformers": None}


@settings(max_examples=examples(150), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(_several())
def test_many_metrics_bounded_together_equal_each_bounded_alone(case: dict[str, Any]) -> None:
    grades, ungraded = _arrays(case["keywords"], case["slots"], case["positions"])
    values = evaluate_batch_many(case["requests"], grades, scale=case["scale"])
    together = bounds_batch_many(case["requests"], grades, ungraded, scale=case["scale"],
                                 values=values)
    assert len(together) == len(case["requests"])
    for (code, k, params), mine, value in zip(case["requests"], together, values, strict=True):
        alone = bounds_batch(code, grades, ungraded, k=k, scale=case["scale"], params=params,
                             values=value)
        for got, expected in zip(mine, alone, strict=True):
            np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12, equal_nan=True)


def test_monotone_metrics_together_are_their_two_fills():
    # Graded, 1 slot: [2, null] at k = 2. P@2 (cut-off 2: graded ≥ 2 relevant): low fill
    # [2, 0] → 1/2, high [2, 3] → 1. CG@2: 2 + 0 = 2 .. 2 + 3 = 5.
    grades, ungraded = _arrays([[[2], [None]]], 1, 2)
    requests = [("precision", 2, {}), ("cg", 2, {})]
    values = evaluate_batch_many(requests, grades, scale="graded")
    precision, cg = bounds_batch_many(requests, grades, ungraded, scale="graded",
                                      values=values)
    assert (precision.lower[0], precision.upper[0]) == (0.5, 1.0)
    assert (cg.lower[0], cg.upper[0]) == (2.0, 5.0)
    assert bool(precision.exact[0]) and bool(cg.exact[0])


def test_a_shorter_keyword_on_a_scale_with_negative_grades_keeps_its_ideal():
    """Hypothesis's find: on a -1..3 scale, a keyword of 3 results in a 4-position array.
    Its completion (-2/3 mean at position 1) had the padding sort as a null's 0 in the local
    ideal, IDCG 1/3 - (2/3)/log2(5) and nDCG -10.82 where the spec's v_1..v_3 give 0 (IDCG
    1/3 - (2/3)/2 = 0); the brute force's lower bound is -1 (the -1/3 mean)."""
    _check({"metric": "ndcg", "k": 5, "scale": Scale("signed", -1, 3),
            "keywords": [[[None, None, None], [0, 0, 0], [0, 0, 1]]], "slots": 3,
            "positions": 4, "params": {"gain": "linear", "ideal": "local"},
            "transformers": None, "max_completions": 64, "max_vote_completions": 1})
