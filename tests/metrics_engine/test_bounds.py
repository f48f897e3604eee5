"""metrics_engine.bounds against the worked cases and against brute-force enumeration."""

import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import metrics_engine.bounds as bounds_module
from metrics.conformance import _keyword_bounds
from metrics_engine import (
    METRICS,
    SCALES,
    Scale,
    evaluate_keyword,
    evaluate_keywords,
    metric_spec,
)
from metrics_engine.bounds import KeywordBounds, bounds_mean, keyword_bounds
from metrics_engine.registry import metric_scale
from tests.property_depth import examples


def _bounds_of(case: dict[str, Any], results: list[dict], pool: list[dict]) -> KeywordBounds:
    return keyword_bounds(
        case["metric"], [entry["grades"] for entry in results], k=case["k"],
        scale=case["scale"], params=case.get("params"), transformers=case.get("transformers"),
        pool=[(entry["doc"], entry["grades"]) for entry in pool],
        doc_ids=[entry["doc"] for entry in results],
    )


def test_every_worked_bounds_case(public_cases):
    cases = [case for case in public_cases if case.get("bounds") is True]
    assert [case["id"] for case in cases] == [f"b{n:02d}" for n in range(1, 13)] + ["w05"]
    for case in cases:
        if "keywords" in case:
            got = bounds_mean((_bounds_of(case, results, []) for results in case["keywords"]),
                              case.get("weights"))
        else:
            got = _bounds_of(case, case["results"], case.get("pool", []))
        assert got.exact, case["id"]
        for field in ("lower", "upper"):
            expected, actual = case["expect"][field], getattr(got, field)
            if expected is None:
                assert actual is None, (case["id"], field)
            else:
                assert actual == pytest.approx(expected, abs=1e-12), (case["id"], field)


def test_a_fully_graded_keyword_is_its_value():
    results = [[3, 1], [0, 2], [2, 2]]
    value = evaluate_keyword("ndcg", results, k=3, scale="graded")
    assert keyword_bounds("ndcg", results, k=3, scale="graded") == (value, value, True)


def test_the_monotone_path_fills_ten_positions_without_enumerating(monkeypatch):
    def no_enumeration(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("DCG must not enumerate")

    monkeypatch.setattr(bounds_module, "_distinct_outcomes", no_enumeration)
    results = [[None]] * 10
    # No timing: with enumeration patched to fail, finishing at all is the proof (a timed
    # assertion only measured the machine's load).
    got = keyword_bounds("dcg", results, k=10, scale="graded")
    assert got == (
        evaluate_keyword("dcg", [[0]] * 10, k=10, scale="graded"),
        evaluate_keyword("dcg", [[3]] * 10, k=10, scale="graded"),
        True,
    )
    assert got.lower == 0.0
    assert got.upper == pytest.approx(3 * sum(1 / math.log2(i + 1) for i in range(1, 11)))


def test_a_transformer_that_is_not_monotone_fills_by_transformed_grade():
    # graded → binary with 3 → 0: the lowest fill is a 3 or a 0, the highest a 1 or a 2.
    transformers = {"graded->binary": {"0": 0, "1": 1, "2": 1, "3": 0}}
    got = keyword_bounds("precision", [[3], [None], [None]], k=3, scale="graded",
                         transformers=transformers)
    assert got == (0.0, 2 / 3, True)


def test_ap_is_not_monotone():
    # [1, 0, ?]: 0 keeps AP at 1, a 1 lowers it to (1 + 2/3) / 2.
    got = keyword_bounds("ap", [[1], [0], [None]], k=3, scale="binary")
    assert got == (pytest.approx(5 / 6), 1.0, True)


def test_recall_is_not_monotone_through_its_pool():
    # A relevant pool document lowers recall; with no relevant document it is null.
    got = keyword_bounds("recall", [[None]], k=1, scale="binary", pool=[("x", [None])],
                         doc_ids=["d"])
    assert got == (0.0, 1.0, True)


def test_interchangeable_pool_documents_are_counted_not_enumerated():
    # 20 ungraded pool documents alone are 2^20 completions; only how many end relevant
    # matters to recall (21 choices), times 2^5 for the results.
    pool = [(f"p{i}", [1, 0, None]) for i in range(20)]
    got = keyword_bounds("recall", [[None]] * 5, k=10, scale="binary", pool=pool)
    assert got == (0.0, 1.0, True)
    pool = [("x", [1, None]), *((f"p{i}", [0, None, 1]) for i in range(10))]
    got = keyword_bounds("recall", [[1], [None]], k=10, scale="binary", pool=pool)
    # Best: the second result relevant, x a tie and every p 0 → 2/2; worst: the second
    # result not relevant, x and every p relevant → 1/12.
    assert got == (pytest.approx(1 / 12), 1.0, True)


def test_only_documents_at_no_position_are_interchangeable(monkeypatch):
    # Two ungraded results are ordered (DCG weighs them apart): 4 x 4 outcomes; the pool
    # document x is read only through its value: 4 more, so 64 completions are evaluated.
    evaluated = []
    original = bounds_module.evaluate_keywords

    def spy(metric: str, keywords: list, **kwargs: Any) -> Any:
        evaluated.append(len(keywords))
        return original(metric, keywords, **kwargs)

    monkeypatch.setattr(bounds_module, "evaluate_keywords", spy)
    keyword_bounds("ndcg", [[None], [None]], k=2, scale="graded", params={"ideal": "pool"},
                   pool=[("x", [None])])
    assert evaluated == [64]


def test_ap_over_many_positions_enumerates_outcomes_not_grades():
    # 12 ungraded positions on the detail scale: 10^12 completions, 2^12 relevance patterns.
    got = keyword_bounds("ap", [[None]] * 12, k=12, scale="detail")
    assert got == (0.0, 1.0, True)


def test_too_many_outcomes_give_wider_sound_bounds():
    results = [[None]] * 8 + [[3], [0]]
    got = keyword_bounds("ndcg", results, k=10, scale="graded")
    assert not got.exact
    assert 0.0 <= got.lower <= got.upper <= 1.0


def test_bounds_mean_leaves_null_keywords_out():
    got = bounds_mean([KeywordBounds(0.2, 0.6, True), KeywordBounds(None, None, True),
                       KeywordBounds(0.4, 1.0, False)])
    assert got.lower == pytest.approx(0.3)
    assert got.upper == pytest.approx(0.8)
    assert got.exact is False
    assert bounds_mean([]) == (None, None, True)


# --- the property: every metric, scale, parameter and transformer against brute force ---

# The built-ins and an admin scale with a negative grade (graded metrics run on it as is).
_SCALES = (*SCALES.values(), Scale("signed", -1, 3))
# Brute force enumerates L^holes completions: keep it near 4096 per example.
_MAX_HOLES = {"binary": 8, "graded": 5, "detail": 3, "signed": 5}
_DOCS = ("a", "b", "c", "d", "e")


@st.composite
def _keywords(draw: Any, code: str) -> dict[str, Any]:
    spec = metric_spec(code)
    scale = draw(st.sampled_from(_SCALES))
    target = metric_scale(spec, scale)
    grade = st.one_of(st.none(), st.integers(scale.lo, scale.hi))
    slots = st.lists(grade, min_size=1, max_size=3)
    results = draw(st.lists(slots, max_size=6))
    doc_ids = draw(st.lists(st.sampled_from(_DOCS), min_size=len(results),
                            max_size=len(results)))
    pool = draw(st.lists(st.tuples(st.sampled_from((*_DOCS, "x", "y")), slots), max_size=3))
    holes = sum(g is None for grades in [*results, *(g for _d, g in pool)] for g in grades)
    if holes > _MAX_HOLES[scale.code]:
        # Keep the first holes, grade the rest at random.
        def trim(grades: list) -> list:
            nonlocal holes
            out = []
            for g in grades:
                if g is None and holes > _MAX_HOLES[scale.code]:
                    holes -= 1
                    g = draw(st.integers(scale.lo, scale.hi))
                out.append(g)
            return out

        results = [trim(grades) for grades in results]
        pool = [(doc, trim(grades)) for doc, grades in pool]
    params: dict[str, Any] = {}
    if "gain" in spec.params:
        params["gain"] = draw(st.sampled_from(("linear", "exponential")))
    if "ideal" in spec.params:
        params["ideal"] = draw(st.sampled_from(("local", "pool", "max")))
    if "beta" in spec.params:
        params["beta"] = draw(st.sampled_from((0.5, 1.0, 2.0)))
    transformers = None
    if scale != target and (not scale.is_builtin or draw(st.booleans())):
        transformers = {f"{scale.code}->{target.code}": {
            str(g): draw(st.integers(target.lo, target.hi)) for g in scale.grades
        }}
    return {
        "metric": code, "k": draw(st.sampled_from((1, 2, 3, 5, 10))), "scale": scale,
        "results": results, "doc_ids": doc_ids, "pool": pool if draw(st.booleans()) else [],
        "params": params, "transformers": transformers,
    }


def _brute_force(case: dict[str, Any]) -> tuple[float | None, float | None]:
    def evaluate(keywords: list, keyword_pools: list) -> Any:
        return evaluate_keywords(
            case["metric"], [[grades for _doc, grades in results] for results in keywords],
            k=case["k"], scale=case["scale"], params=case["params"],
            transformers=case["transformers"], pools=keyword_pools,
            doc_ids=[[doc for doc, _grades in results] for results in keywords],
        )

    results = list(zip(case["doc_ids"], case["results"], strict=True))
    return _keyword_bounds(results, case["pool"], case["scale"], evaluate)


def _check(case: dict[str, Any]) -> None:
    got = keyword_bounds(
        case["metric"], case["results"], k=case["k"], scale=case["scale"],
        params=case["params"], transformers=case["transformers"], pool=case["pool"],
        doc_ids=case["doc_ids"],
    )
    lower, upper = _brute_force(case)
    if got.exact:
        for mine, theirs in ((got.lower, lower), (got.upper, upper)):
            assert (mine is None) == (theirs is None), (got, lower, upper)
            if mine is not None:
                assert math.isclose(mine, theirs, rel_tol=1e-9, abs_tol=1e-9), (got, lower, upper)
    elif lower is not None:
        assert got.lower is not None and got.upper is not None
        assert got.lower <= lower + 1e-9 and got.upper >= upper - 1e-9, (got, lower, upper)


_HEALTH = [HealthCheck.too_slow, HealthCheck.data_too_large]


@pytest.mark.parametrize("code", sorted(METRICS))
def test_bounds_equal_brute_force(code: str) -> None:
    @settings(max_examples=examples(100), deadline=None, suppress_health_check=_HEALTH)
    @given(_keywords(code))
    def check(case: dict[str, Any]) -> None:
        _check(case)

    check()


@pytest.mark.parametrize("code", sorted(METRICS))
def test_wider_bounds_contain_brute_force(code: str, monkeypatch) -> None:
    # With no room to enumerate, every metric off the monotone path takes path 3.
    monkeypatch.setattr(bounds_module, "MAX_COMPLETIONS", 1)

    @settings(max_examples=examples(40), deadline=None, suppress_health_check=_HEALTH)
    @given(_keywords(code))
    def check(case: dict[str, Any]) -> None:
        _check(case)

    check()


def test_a_comparison_is_decided_only_when_the_means_bounds_do_not_overlap():
    from metrics_engine import bounds_decision

    a = KeywordBounds(0.40, 0.55, True)
    assert bounds_decision(a, KeywordBounds(0.56, 0.90, True)) == 1
    assert bounds_decision(a, KeywordBounds(0.10, 0.39, True)) == -1
    # Touching is not decided: B could still equal A.
    assert bounds_decision(a, KeywordBounds(0.55, 0.90, True)) == 0
    assert bounds_decision(a, KeywordBounds(0.20, 0.40, True)) == 0
    assert bounds_decision(a, KeywordBounds(0.45, 0.50, True)) == 0
    assert bounds_decision(a, KeywordBounds(None, None, True)) == 0
