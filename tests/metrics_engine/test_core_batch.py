"""evaluate_batch on many keywords equals the per-keyword path and a plain reference.

The reference below is a deliberately naive, scalar transcription of docs/METRICS.md (lists,
loops, no numpy): an independent oracle for both entry points.
"""

import math
from unittest import mock

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given, settings

from metrics_engine import (
    METRICS,
    SCALES,
    MetricInputError,
    Scale,
    build_pool,
    default_transformer,
    evaluate_batch,
    evaluate_batch_many,
    evaluate_keyword,
    grade_lists_to_array,
    positions_present,
)
from tests.property_depth import examples


def reference_aggregate(grades, transformer, majority):
    mapped = [transformer[grade] for grade in grades if grade is not None]
    if not mapped:
        return None
    if majority:
        ones, zeros = mapped.count(1), mapped.count(0)
        return None if ones == zeros else float(ones > zeros)
    return sum(mapped) / len(mapped)


def reference_value(metric, results, k, scale, params, extra_pool):
    """docs/METRICS.md stage 2 on (doc, grades) results, written for clarity only."""
    needs = METRICS[metric].scale
    target = SCALES[needs]
    transformer = default_transformer(scale, target)
    majority = needs == "binary"
    values = [reference_aggregate(g, transformer, majority) for _, g in results[:k]]
    # recall and best on a search that returned nothing (m = 0) fall through to their own
    # null conditions: the search missed the pool.
    if all(v is None for v in values) and not (metric in ("recall", "best") and not values):
        return None
    pooled_grades = {}
    for doc, grades in [*results, *extra_pool]:
        pooled_grades.setdefault(doc, []).extend(grades)
    pooled = {
        doc: reference_aggregate(g, transformer, majority) for doc, g in pooled_grades.items()
    }
    known = [v for v in pooled.values() if v is not None]
    zeroed = [0.0 if v is None else v for v in values]
    gain = params.get("gain", "linear")
    beta = params.get("beta", 1)

    def g(v):
        return v if gain == "linear" else 2**v - 1

    def dcg(vs):
        return sum(g(v) / math.log2(i + 1) for i, v in enumerate(vs, start=1))

    def precision():
        judged = [v for v in values if v is not None]
        return sum(judged) / len(judged)

    def recall():
        relevant = sum(1 for v in known if v == 1)
        return None if relevant == 0 else sum(1 for v in values if v == 1) / relevant

    if metric == "precision":
        return precision()
    if metric == "ap":
        hits, total = 0, 0.0
        for i, v in enumerate(values, start=1):
            if v == 1:
                hits += 1
                total += hits / i
        return total / hits if hits else 0.0
    if metric == "rr":
        return next((1 / i for i, v in enumerate(values, start=1) if v == 1), 0.0)
    if metric in ("cg", "cg_d"):
        return sum(zeroed)
    if metric in ("dcg", "dcg_d"):
        return dcg(zeroed)
    if metric in ("ndcg", "ndcg_d"):
        ideal = params.get("ideal", "local")
        if ideal == "local":
            best_order = sorted(zeroed, reverse=True)
        elif ideal == "pool":
            best_order = sorted(known, reverse=True)[:k]
        else:
            best_order = [target.hi] * k
        idcg = dcg(best_order)
        return 0.0 if idcg == 0 else dcg(zeroed) / idcg
    if metric in ("err", "err_018"):
        power = 1.0 if metric == "err" else 0.18
        total, reach = 0.0, 1.0
        for i, v in enumerate(zeroed, start=1):
            stop = (2**v - 1) / 2**target.hi
            total += reach * stop / i**power
            reach *= 1 - stop
        return total
    if metric == "recall":
        return recall()
    if metric == "f_score":
        p, r = precision(), recall()
        if r is None:
            return None
        if p + r == 0:
            return 0.0
        return (1 + beta**2) * p * r / (beta**2 * p + r)
    if metric == "best":
        if not known:
            return None
        top = max(known)
        docs = [doc for doc, _ in results[:k]]
        return float(top > 0 and any(pooled[doc] == top for doc in docs))
    raise AssertionError(metric)


@st.composite
def evaluations(draw):
    scale = draw(st.sampled_from(["binary", "graded", "detail"]))
    lo, hi = SCALES[scale].lo, SCALES[scale].hi
    slot_count = draw(st.sampled_from([1, 3]))
    grade = st.one_of(st.none(), st.integers(lo, hi))
    doc = st.sampled_from(["a", "b", "c", "d", "e", "f"])
    entry = st.tuples(doc, st.lists(grade, min_size=slot_count, max_size=slot_count))
    keywords = draw(st.lists(st.lists(entry, max_size=7), min_size=1, max_size=12))
    pools = draw(st.lists(st.lists(entry, max_size=3), min_size=len(keywords),
                          max_size=len(keywords)))
    metric = draw(st.sampled_from(list(METRICS)))
    params = {}
    if "gain" in METRICS[metric].params:
        params["gain"] = draw(st.sampled_from(["linear", "exponential"]))
    if "ideal" in METRICS[metric].params:
        params["ideal"] = draw(st.sampled_from(["local", "pool", "max"]))
    if "beta" in METRICS[metric].params:
        params["beta"] = draw(st.sampled_from([0.5, 1, 2]))
    k = draw(st.integers(1, 9))
    return scale, keywords, pools, metric, params, k


def same(left, right, tolerance):
    if left is None or (isinstance(left, float) and math.isnan(left)):
        return right is None or (isinstance(right, float) and math.isnan(right))
    return right is not None and not math.isnan(right) and abs(left - right) <= tolerance


@settings(max_examples=examples(400), deadline=None)
@given(evaluations())
def test_batch_equals_per_keyword_path_and_reference(case):
    scale, keywords, pools, metric, params, k = case
    grades = grade_lists_to_array([[g for _, g in results] for results in keywords],
                                  SCALES[scale])
    pool = build_pool(list(zip(keywords, pools, strict=True)))
    # Tiny blocks make one call cross several block boundaries.
    with mock.patch("metrics_engine.batch._BLOCK_ELEMENTS", 7):
        batch = evaluate_batch(metric, grades, k=k, scale=scale, params=params, pool=pool)
    for index, results in enumerate(keywords):
        single = evaluate_keyword(
            metric, [g for _, g in results], k=k, scale=scale, params=params,
            doc_ids=[doc for doc, _ in results], pool=pools[index],
        )
        expected = reference_value(metric, results, k, scale, params, pools[index])
        assert same(expected, single, 1e-9), (index, expected, single)
        assert same(single, float(batch[index]), 1e-12), (index, single, batch[index])


@settings(max_examples=examples(100), deadline=None)
@given(evaluations())
def test_many_metrics_at_once_equal_one_at_a_time(case):
    scale, keywords, pools, _, params, k = case
    grades = grade_lists_to_array([[g for _, g in results] for results in keywords],
                                  SCALES[scale])
    pool = build_pool(list(zip(keywords, pools, strict=True)))
    requests = [(code, k + offset, params) for offset, code in enumerate(METRICS)]
    together = evaluate_batch_many(requests, grades, scale=scale, pool=pool)
    for (code, code_k, _), values in zip(requests, together, strict=True):
        alone = evaluate_batch(code, grades, k=code_k, scale=scale, params=params, pool=pool)
        np.testing.assert_array_equal(values, alone)


def test_keywords_with_no_positions_are_null():
    grades = np.full((3, 0, 3), np.nan)
    for metric in ("precision", "ap", "rr", "ndcg", "err"):
        assert np.isnan(evaluate_batch(metric, grades, k=10, scale="graded")).all()


def test_positions_the_search_did_not_return_are_no_part_of_the_local_ideal():
    """On a scale with a negative grade, a position no search returned must not sort as a
    null's 0 in nDCG's local ideal (it pushed the -1 a rank down), however wide the array of
    the keywords computed with it. By hand, v = (-1, 0, 1), k = 5, linear gains:
    DCG = -1 + 0 + 1/log2(4) = -0.5; IDCG = 1 + 0 - 1/log2(4) = 0.5; nDCG = -1. With a 4th
    result returned but ungraded (a null, 0 in the ideal): IDCG = 1 + 0 + 0 - 1/log2(5)."""
    signed = Scale("signed", -1, 3)
    params = {"gain": "linear", "ideal": "local"}
    grades = np.array([[[-1.0], [0.0], [1.0], [np.nan]]] * 2)
    ungraded = np.zeros(grades.shape, dtype=bool)
    ungraded[1, 3, 0] = True  # the second keyword's 4th result was returned, not graded
    values = evaluate_batch("ndcg", grades, k=5, scale=signed, params=params,
                            present=positions_present(grades, ungraded))
    assert values[0] == -1.0
    assert values[1] == pytest.approx(-0.5 / (1 - 1 / math.log2(5)), abs=1e-12)
    assert values[0] == evaluate_keyword("ndcg", [[-1], [0], [1]], k=5, scale=signed,
                                         params=params)
    # Unchanged without the mask: every position of the array counts as returned.
    assert evaluate_batch("ndcg", grades, k=5, scale=signed, params=params)[0] == values[1]


def test_a_present_mask_of_the_wrong_shape_is_refused():
    with pytest.raises(MetricInputError, match="present"):
        evaluate_batch("ndcg", np.zeros((2, 3, 1)), k=3, scale="graded",
                       present=np.ones((2, 2), dtype=bool))
