"""Export qrels from one team's graded evaluation, import them into a new team: the pool
metrics of a keyword come out the same in both teams."""

import io

import pytest
from rest_framework.test import APIClient

from evaluations.models import Evaluation
from metrics.models import KeywordMetricValue
from metrics.services import evaluation_metrics_recompute
from tests.metrics.builders import build_evaluation, set_grades, slot

pytestmark = pytest.mark.django_db

POOL_METRICS = [("recall", 2, {}), ("best", 2, {}), ("ndcg", 2, {"ideal": "pool"})]


def _values(evaluation) -> dict[str, float | None]:
    return {
        f"{code}@{k}": value
        for code, k, value in KeywordMetricValue.objects.filter(
            keyword__evaluation=evaluation, keyword__normalized_text="laptop")
        .values_list("metric__code", "metric__k", "value")
    }


def _second_evaluation(team, grader, capture):
    """Two results for "laptop": d5 (graded 2 here) and d1 (left for the pool to know)."""
    evaluation = build_evaluation(team=team, scale="graded", strategy=1,
                                  keywords={"laptop": ["d5", "d1"]}, metrics=POOL_METRICS)
    with capture(execute=True):
        set_grades([grader], [(slot(evaluation, "laptop", 1), 2)])
    return evaluation


def test_exported_qrels_imported_into_a_new_team_give_the_same_pool_values(
        personas, django_capture_on_commit_callbacks):
    capture = django_capture_on_commit_callbacks
    source = build_evaluation(team=personas.team, scale="graded", strategy=1,
                              keywords={"Laptop": ["d1", "d2", "d3", "d4"], "phone": ["p1"]},
                              metrics=[("ndcg", 4, {})], status=Evaluation.Status.FINISHED)
    with capture(execute=True):
        set_grades([personas.lead], [
            (slot(source, "laptop", 1), 3), (slot(source, "laptop", 2), 0),
            (slot(source, "laptop", 3), 3), (slot(source, "laptop", 4), 1),
            (slot(source, "phone", 1), 2),
        ])
    original = _second_evaluation(personas.team, personas.grader, capture)
    evaluation_metrics_recompute(evaluation_id=original.pk)
    expected = _values(original)
    # d1 and d3 (grade 3) are the best known and d1 is at position 2: best = 1. Relevant
    # documents known: d5, d1, d3, d4; of the results only d5 is graded here: recall 1/4.
    assert expected["recall@2"] == 0.25 and expected["best@2"] == 1.0
    assert expected["ndcg@2"] is not None

    exporter = APIClient()
    exporter.force_authenticate(personas.lead)
    url = f"/api/v1/evaluations/{source.pk}/judgments/"
    qrels = exporter.get(url, {"format": "trec"}).content
    mapping = exporter.get(url, {"format": "trec_mapping"}).content
    assert qrels == b"1 0 d1 3\n1 0 d2 0\n1 0 d3 3\n1 0 d4 1\n2 0 p1 2\n"

    other_team = personas.other_team
    copy = _second_evaluation(other_team, personas.outsider, capture)
    before = _values(copy)
    assert before != expected  # without the pool, the new team knows only its own results

    importer = APIClient()
    importer.force_authenticate(personas.outsider)
    files = {"format": "trec", "file": io.BytesIO(qrels), "mapping": io.BytesIO(mapping)}
    files["file"].name, files["mapping"].name = "qrels.txt", "mapping.tsv"
    with capture(execute=True):
        response = importer.post(f"/api/v1/evaluations/{copy.pk}/judgments/", files,
                                 format="multipart")
    assert response.status_code == 201, response.json()
    assert response.json()["imported"] == 5 and response.json()["dirty_keywords"] == 1
    # Recomputed after commit by the pipeline, and equal to a from-scratch recompute.
    assert _values(copy) == expected
    evaluation_metrics_recompute(evaluation_id=copy.pk)
    assert _values(copy) == expected
