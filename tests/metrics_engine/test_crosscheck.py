"""Cross-check against ranx, pytrec_eval (trec_eval) and rbo where definitions coincide.

On fully judged runs of 10 results with one grade each, and k = 10:
P@10 (= hits / 10 = hits / judged), AP with qrels = the retrieved documents, RR, Recall
and nDCG with ideal: pool against qrels = pool (retrieved + extra judged documents), DCG
with linear (Järvelin) and exponential (Burges) gain. Relevant = grade ≥ 1, which is what
the default graded → binary transformer does. RBO_EXT against the rbo package.
"""

import random

import numpy as np
import pytest

from metrics_engine import build_pool, evaluate_batch, rbo
from tests.conftest import import_or_skip

pytrec_eval = import_or_skip("pytrec_eval", reason="pytrec-eval-terrier is in the dev extra")
rbo_package = import_or_skip("rbo", reason="rbo is in the dev extra; CI installs it")

KEYWORDS, POSITIONS, EXTRA = 60, 10, 4


@pytest.fixture(scope="module")
def ranx():
    # Imported by the tests that use it, not when the module is collected: ranx brings
    # numba, pandas and scipy, ~5 s of CPU that every test process paid to collect.
    return import_or_skip("ranx", reason="ranx is in the dev extra; CI installs it")


@pytest.fixture(scope="module")
def judged_runs():
    rng = np.random.default_rng(20240501)
    grades = rng.integers(0, 4, size=(KEYWORDS, POSITIONS, 1)).astype(np.float64)
    grades[::7] = 0.0  # some keywords with nothing relevant
    extra = rng.integers(0, 4, size=(KEYWORDS, EXTRA))
    docs = [[f"q{q}d{i}" for i in range(POSITIONS)] for q in range(KEYWORDS)]
    retrieved = {
        f"q{q}": {docs[q][i]: int(grades[q, i, 0]) for i in range(POSITIONS)}
        for q in range(KEYWORDS)
    }
    pooled = {
        f"q{q}": {**retrieved[f"q{q}"], **{f"q{q}x{j}": int(extra[q, j]) for j in range(EXTRA)}}
        for q in range(KEYWORDS)
    }
    run = {
        f"q{q}": {docs[q][i]: float(POSITIONS - i) for i in range(POSITIONS)}
        for q in range(KEYWORDS)
    }
    pool = build_pool([
        (
            [(docs[q][i], [int(grades[q, i, 0])]) for i in range(POSITIONS)],
            [(f"q{q}x{j}", [int(extra[q, j])]) for j in range(EXTRA)],
        )
        for q in range(KEYWORDS)
    ])
    return grades, pool, retrieved, pooled, run


def ours(metric, judged_runs, **params):
    grades, pool, *_ = judged_runs
    return evaluate_batch(metric, grades, k=POSITIONS, scale="graded", params=params, pool=pool)


def ranx_scores(ranx, qrels, run, metric):
    qrels_object, run_object = ranx.Qrels.from_dict(qrels), ranx.Run.from_dict(run)
    ranx.evaluate(qrels_object, run_object, metric)
    return np.array([run_object.scores[metric][f"q{q}"] for q in range(KEYWORDS)])


def trec_scores(qrels, run, measure, key):
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {measure})
    results = evaluator.evaluate(run)
    return np.array([results[f"q{q}"][key] for q in range(KEYWORDS)])


@pytest.mark.parametrize(
    ("metric", "params", "ranx_metric", "qrels_kind"),
    [
        ("precision", {}, "precision@10", "retrieved"),
        ("ap", {}, "map@10", "retrieved"),
        ("rr", {}, "mrr@10", "retrieved"),
        ("recall", {}, "recall@10", "pooled"),
        ("dcg", {"gain": "linear"}, "dcg@10", "retrieved"),
        ("dcg", {"gain": "exponential"}, "dcg_burges@10", "retrieved"),
        ("ndcg", {"ideal": "pool", "gain": "linear"}, "ndcg@10", "pooled"),
        ("ndcg", {"ideal": "pool", "gain": "exponential"}, "ndcg_burges@10", "pooled"),
    ],
)
def test_it_agrees_with_ranx(ranx, judged_runs, metric, params, ranx_metric, qrels_kind):
    _, _, retrieved, pooled, run = judged_runs
    qrels = retrieved if qrels_kind == "retrieved" else pooled
    expected = ranx_scores(ranx, qrels, run, ranx_metric)
    actual = ours(metric, judged_runs, **params)
    defined = ~np.isnan(actual)  # recall is null where the pool has nothing relevant
    assert defined.sum() >= KEYWORDS * 0.8
    np.testing.assert_allclose(actual[defined], expected[defined], rtol=0, atol=1e-9)


@pytest.mark.parametrize(
    ("metric", "params", "measure", "key", "qrels_kind"),
    [
        ("precision", {}, "P.10", "P_10", "retrieved"),
        ("ap", {}, "map", "map", "retrieved"),
        ("rr", {}, "recip_rank", "recip_rank", "retrieved"),
        ("recall", {}, "recall.10", "recall_10", "pooled"),
        ("ndcg", {"ideal": "pool"}, "ndcg_cut.10", "ndcg_cut_10", "pooled"),
    ],
)
def test_it_agrees_with_trec_eval(judged_runs, metric, params, measure, key, qrels_kind):
    _, _, retrieved, pooled, run = judged_runs
    qrels = retrieved if qrels_kind == "retrieved" else pooled
    expected = trec_scores(qrels, run, measure, key)
    actual = ours(metric, judged_runs, **params)
    defined = ~np.isnan(actual)
    assert defined.sum() >= KEYWORDS * 0.8
    np.testing.assert_allclose(actual[defined], expected[defined], rtol=0, atol=1e-9)


def test_recall_is_null_where_trec_eval_says_zero(judged_runs):
    # docs/METRICS.md: R_pool = 0 → null (left out of the mean); trec_eval reports 0 there.
    actual = ours("recall", judged_runs)
    _, _, _, pooled, _ = judged_runs
    nothing_relevant = [all(rel == 0 for rel in pooled[f"q{q}"].values()) for q in range(KEYWORDS)]
    assert np.isnan(actual).tolist() == nothing_relevant


def test_rbo_ext_agrees_with_the_rbo_package():
    rng = random.Random(7)
    universe = [f"d{i}" for i in range(30)]
    for _ in range(300):
        first = rng.sample(universe, rng.randint(1, 20))
        second = rng.sample(universe, rng.randint(1, 20))
        k = rng.randint(1, 25)
        p = rng.choice([0.5, 0.8, 0.9, 0.95, 0.98])
        expected = rbo_package.RankingSimilarity(first[:k], second[:k]).rbo_ext(p)
        assert rbo(first, second, k=k, p=p) == pytest.approx(expected, abs=1e-9)
