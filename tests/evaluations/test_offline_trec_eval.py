"""A CI job's flow over the API alone: offline models, their TREC run files, a query set,
qrels imported as grades, evaluations started, metrics read and a gate asked; the stored
metrics agree with trec_eval (pytrec_eval) to 1e-12, and with docs/METRICS.md worked by
hand for one keyword.

What trec_eval is given: the run cut at the evaluation's k (the snapshots stored), and
the qrels. P@5, RR@5 and nDCG@5 (ideal `pool`: the best grades the team knows for the
keyword, here the qrels) read the qrels whole; AP@5 normalises by the relevant documents
among the results (docs/METRICS.md), so trec_eval's map is given the qrels of the
results only, as tests/metrics_engine/test_crosscheck.py does."""

import io
from math import log2

import pytest
from rest_framework.test import APIClient

from tests.conftest import import_or_skip

pytrec_eval = import_or_skip("pytrec_eval", reason="pytrec-eval-terrier is in the dev extra")

pytestmark = pytest.mark.django_db

K = 5
KEYWORDS = ["red shoes", "hats", "socks"]  # topic ids 1, 2, 3: the query set's order
# The candidate's run: six results a topic (the sixth past k), lines out of rank order
# and topics not grouped.
RUN = """1 Q0 d2 2 9.1 new
2 Q0 h1 1 8.0 new
1 Q0 d1 1 9.5 new
3 Q0 s1 1 7.0 new
1 Q0 d3 3 8.7 new
1 Q0 d4 4 8.2 new
2 Q0 h2 2 7.5 new
1 Q0 d6 6 7.1 new
1 Q0 d5 5 7.9 new
2 Q0 h3 3 7.0 new
2 Q0 h4 4 6.0 new
2 Q0 h5 5 5.0 new
2 Q0 h6 6 4.0 new
3 Q0 s2 2 6.0 new
3 Q0 s3 3 5.0 new
3 Q0 s4 4 4.0 new
3 Q0 s5 5 3.0 new
3 Q0 s6 6 2.0 new
"""
# The baseline's run: each topic's results in reverse.
BASELINE_RUN = "".join(
    f"{topic} Q0 {prefix}{7 - rank} {rank} {10 - rank} old\n"
    for topic, prefix in ((1, "d"), (2, "h"), (3, "s")) for rank in range(1, 7))
# Graded qrels (0..3); x9 is judged but no run returns it.
QRELS = {
    "1": {"d1": 0, "d2": 3, "d3": 0, "d4": 1, "d5": 2, "d6": 3, "x9": 2},
    "2": {"h1": 3, "h2": 2, "h3": 0, "h4": 0, "h5": 1, "h6": 0},
    "3": {"s1": 0, "s2": 0, "s3": 0, "s4": 0, "s5": 0, "s6": 2},
}
METRICS = [{"code": "precision", "k": K}, {"code": "ap", "k": K}, {"code": "rr", "k": K},
           {"code": "ndcg", "k": K, "params": {"ideal": "pool"}}]


def client_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def named(content: str, name: str) -> io.BytesIO:
    file = io.BytesIO(content.encode())
    file.name = name
    return file


def offline_model_with_run(admin: APIClient, name: str, run: str, query_set_id: int) -> int:
    created = admin.post("/api/v1/models/offline/", {"name": name}, format="json")
    assert created.status_code == 201, created.json()
    model_id = created.json()["id"]
    uploaded = admin.post(f"/api/v1/models/{model_id}/run/", {
        "format": "trec", "query_set": query_set_id, "file": named(run, f"{name}.run")},
        format="multipart")
    assert uploaded.status_code == 201, uploaded.json()
    assert (uploaded.json()["keyword_count"], uploaded.json()["result_count"]) == (3, 18)
    return model_id


def evaluation_created(lead: APIClient, model_id: int, query_set_id: int) -> int:
    created = lead.post("/api/v1/evaluations/", {
        "name": f"Offline {model_id}", "model": model_id, "query_set": query_set_id,
        "scale": "graded", "strategy": 1, "metrics": METRICS, "transformers": {},
        "reuse_grades": "document"}, format="json")
    assert created.status_code == 201, created.json()
    return created.json()["id"]


def evaluation_started(lead: APIClient, evaluation_id: int, capture) -> None:
    with capture(execute=True):
        started = lead.post(f"/api/v1/evaluations/{evaluation_id}/start/")
    assert started.status_code == 200, started.json()


def stored_values(client: APIClient, evaluation_id: int) -> dict[str, dict[str, float]]:
    """keyword → {"precision": …, …} from the keywords API."""
    response = client.get(f"/api/v1/evaluations/{evaluation_id}/keywords/")
    assert response.status_code == 200
    return {row["text"]: {value["code"]: value["value"] for value in row["metrics"]}
            for row in response.json()["results"]}


def trec_eval(run: str) -> dict[str, dict[str, float]]:
    """pytrec_eval on the run cut at K: topic → {"precision", "ap", "rr", "ndcg"}."""
    ranked: dict[str, dict[str, float]] = {}
    for line in run.splitlines():
        qid, _, doc, rank, _, _ = line.split()
        if int(rank) <= K:
            # trec_eval orders by score: rank K + 1 - rank keeps the run's order.
            ranked.setdefault(qid, {})[doc] = float(K + 1 - int(rank))
    whole = pytrec_eval.RelevanceEvaluator(QRELS, {"P.5", "recip_rank", "ndcg_cut.5"})
    retrieved_qrels = {qid: {doc: grade for doc, grade in QRELS[qid].items() if doc in docs}
                       for qid, docs in ranked.items()}
    retrieved = pytrec_eval.RelevanceEvaluator(retrieved_qrels, {"map_cut.5"})
    scores, ap = whole.evaluate(ranked), retrieved.evaluate(ranked)
    return {KEYWORDS[int(qid) - 1]: {
        "precision": scores[qid]["P_5"], "ap": ap[qid]["map_cut_5"],
        "rr": scores[qid]["recip_rank"], "ndcg": scores[qid]["ndcg_cut_5"]}
        for qid in ranked}


def test_a_ci_job_runs_offline_models_through_the_api_and_trec_eval_agrees(
        personas, django_capture_on_commit_callbacks):
    capture = django_capture_on_commit_callbacks
    admin, lead = client_for(personas.admin), client_for(personas.lead)
    query_set = lead.post("/api/v1/query-sets/", {"name": "Nightly", "keywords": KEYWORDS},
                          format="json")
    assert query_set.status_code == 201, query_set.json()
    query_set_id = query_set.json()["id"]
    baseline_model = offline_model_with_run(admin, "bm25", BASELINE_RUN, query_set_id)
    candidate_model = offline_model_with_run(admin, "hybrid", RUN, query_set_id)

    # The qrels go to the team's pool through the first evaluation, before anything
    # starts: each evaluation's fetch then fills its slots from them (reuse by document).
    baseline_id = evaluation_created(lead, baseline_model, query_set_id)
    candidate_id = evaluation_created(lead, candidate_model, query_set_id)
    qrels = "".join(f"{qid} 0 {doc} {grade}\n" for qid, docs in QRELS.items()
                    for doc, grade in docs.items())
    mapping = "".join(f"{n}\t{text}\n" for n, text in enumerate(KEYWORDS, start=1))
    with capture(execute=True):
        imported = lead.post(f"/api/v1/evaluations/{baseline_id}/judgments/", {
            "format": "trec", "file": named(qrels, "qrels.txt"),
            "mapping": named(mapping, "topics.tsv")}, format="multipart")
    assert imported.status_code == 201, imported.json()
    assert imported.json()["imported"] == 19
    evaluation_started(lead, baseline_id, capture)
    evaluation_started(lead, candidate_id, capture)

    values = stored_values(lead, candidate_id)
    expected = trec_eval(RUN)
    assert set(values) == set(expected) == set(KEYWORDS)
    for keyword in KEYWORDS:
        for code in ("precision", "ap", "rr", "ndcg"):
            assert values[keyword][code] == pytest.approx(expected[keyword][code], abs=1e-12,
                                                          rel=0), (keyword, code)

    # "red shoes" by hand (docs/METRICS.md): grades of d1..d5 are 0 3 0 1 2, relevant
    # (grade >= 1) at 2, 4 and 5.
    shoes = values["red shoes"]
    assert shoes["precision"] == pytest.approx(3 / 5, abs=1e-12)
    assert shoes["ap"] == pytest.approx((1 / 2 + 2 / 4 + 3 / 5) / 3, abs=1e-12)
    assert shoes["rr"] == pytest.approx(1 / 2, abs=1e-12)
    dcg = 3 / log2(3) + 1 / log2(5) + 2 / log2(6)
    # The pool's five best grades: d2 3, d6 3, d5 2, x9 2, d4 1.
    ideal = 3 / log2(2) + 3 / log2(3) + 2 / log2(4) + 2 / log2(5) + 1 / log2(6)
    assert shoes["ndcg"] == pytest.approx(dcg / ideal, abs=1e-12)
    # "socks" has nothing relevant in its first five: every value 0.
    assert values["socks"] == {"precision": 0.0, "ap": 0.0, "rr": 0.0, "ndcg": 0.0}

    # The baseline's values agree as well (its own run, the same grades).
    baseline = stored_values(lead, baseline_id)
    old = trec_eval(BASELINE_RUN)
    for keyword, codes in old.items():
        for code, value in codes.items():
            assert baseline[keyword][code] == pytest.approx(value, abs=1e-12), (keyword, code)

    # The means the CI job reads, and its gate against the baseline.
    means = lead.get(f"/api/v1/evaluations/{candidate_id}/metrics/").json()
    by_code = {row["code"]: row for row in means["metrics"]}
    assert by_code["precision"]["value"] == pytest.approx(
        sum(expected[k]["precision"] for k in KEYWORDS) / 3, abs=1e-12)
    assert by_code["precision"]["keyword_count"] == 3
    gate = lead.post(f"/api/v1/evaluations/{candidate_id}/gate/", {
        "baseline": baseline_id, "min_shared_keywords": 3, "undecided": "fail"},
        format="json")
    assert gate.status_code == 200, gate.json()
    # Every shared keyword graded in full: the change is final (bounds), a regression,
    # and each metric's change is the difference of trec_eval's means.
    assert (gate.json()["verdict"], gate.json()["passed"]) == ("regressed", False)
    for row in gate.json()["metrics"]:
        change = sum(expected[k][row["code"]] - old[k][row["code"]] for k in KEYWORDS) / 3
        assert row["mean_delta"] == pytest.approx(change, abs=1e-12), row["code"]
        assert (row["verdict"], row["decided_by"]) == ("regressed", "bounds")
