"""The names people type for metrics, through the evaluation form and the API: stored as the
registry's codes, or answered with the nearest code, the field named, nothing saved."""

import pytest
from rest_framework.test import APIClient

from evaluations.models import Evaluation
from tests.evaluations.factories import (
    EvaluationFactory,
    EvaluationMetricFactory,
    SearchModelFactory,
)

pytestmark = pytest.mark.django_db


def form_post(client, user, model, metrics: str):
    client.force_login(user)
    return client.post("/evaluations/new/", {
        "name": "Aliases", "model": model.pk, "keywords": "a", "scale": "graded",
        "strategy": "1", "metrics": metrics, "reuse_grades": "none"})


def api_client(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def api_payload(model, metrics: list[dict]) -> dict:
    return {"name": "Aliases", "model": model.pk, "scale": "graded", "strategy": 1,
            "keywords": ["a"], "metrics": metrics}


def test_the_form_stores_the_names_people_type_as_codes(client, personas):
    model = SearchModelFactory(endpoint__team=personas.team)
    response = form_post(client, personas.lead, model, "P@10\nmap@10\nmrr@5\n"
                         "ndcg_cut_10 gain=exponential\nrecall@10\nerr@3\nmp@20")
    evaluation = Evaluation.objects.get(name="Aliases")
    assert response.url == f"/evaluations/{evaluation.pk}/"
    assert list(evaluation.metric_configs.order_by("position")
                .values_list("code", "k", "params")) == [
        ("precision", 10, {}), ("ap", 10, {}), ("rr", 5, {}),
        ("ndcg", 10, {"gain": "exponential"}), ("recall", 10, {}), ("err", 3, {}),
        ("precision", 20, {})]
    # The edit form shows the codes back.
    page = client.get(f"/evaluations/{evaluation.pk}/edit/")
    assert page.context["form"].initial["metrics"].splitlines()[:4] == [
        "precision@10", "ap@10", "rr@5", "ndcg@10 gain=exponential"]


def test_the_form_answers_a_misspelt_code_with_the_nearest_one(client, personas):
    model = SearchModelFactory(endpoint__team=personas.team)
    response = form_post(client, personas.lead, model, "precision@10\nndgc@10")
    assert response.status_code == 400
    assert response.context["form"].errors["metrics"] == [
        "Line 2: unknown metric code 'ndgc'; did you mean 'ndcg'?"]
    assert "did you mean" in response.content.decode()
    assert not Evaluation.objects.exists()


def test_the_form_still_asks_for_a_cutoff(client, personas):
    model = SearchModelFactory(endpoint__team=personas.team)
    response = form_post(client, personas.lead, model, "map")
    assert response.context["form"].errors["metrics"] == [
        "Line 1: write code@k, e.g. ndcg@10."]
    assert not Evaluation.objects.exists()


def test_the_api_stores_the_names_people_type_as_codes(personas):
    model = SearchModelFactory(endpoint__team=personas.team)
    response = api_client(personas.lead).post("/api/v1/evaluations/", api_payload(model, [
        {"code": "P@10"}, {"code": "map", "k": 10}, {"code": "ndcg_cut_10", "k": 10},
        {"code": "MRR@5", "params": {}},
    ]), format="json")
    assert response.status_code == 201, response.json()
    assert [(m["code"], m["k"]) for m in response.json()["metrics"]] == [
        ("precision", 10), ("ap", 10), ("ndcg", 10), ("rr", 5)]
    evaluation = Evaluation.objects.get(name="Aliases")
    assert list(evaluation.metric_configs.order_by("position").values_list("code", "k")) == [
        ("precision", 10), ("ap", 10), ("ndcg", 10), ("rr", 5)]


@pytest.mark.parametrize(("metric", "errors"), [
    ({"code": "ndgc", "k": 10},
     {"code": ["unknown metric code 'ndgc'; did you mean 'ndcg'?"]}),
    ({"code": "precison@5"},
     {"code": ["unknown metric code 'precison'; did you mean 'precision'?"]}),
    ({"code": "ndcg"}, {"k": ["This field is required unless the code carries it "
                              "(e.g. ndcg@10)."]}),
    ({"code": "ndcg@10", "k": 5}, {"k": ["5 differs from the cutoff in code 'ndcg@10'."]}),
])
def test_the_api_answers_a_bad_code_naming_the_field_and_saves_nothing(personas, metric, errors):
    model = SearchModelFactory(endpoint__team=personas.team)
    response = api_client(personas.lead).post(
        "/api/v1/evaluations/", api_payload(model, [{"code": "ap", "k": 3}, metric]),
        format="json")
    assert response.status_code == 400
    assert response.json() == {"metrics": {"1": errors}}  # DRF: the list index, then the field
    assert not Evaluation.objects.exists()


def test_the_api_update_takes_aliases_too(personas):
    evaluation = EvaluationFactory(model__endpoint__team=personas.team)
    EvaluationMetricFactory(evaluation=evaluation, code="ap", k=10)
    response = api_client(personas.lead).patch(
        f"/api/v1/evaluations/{evaluation.pk}/", {"metrics": [{"code": "ndcg_cut_5"}]},
        format="json")
    assert response.status_code == 200, response.json()
    assert list(evaluation.metric_configs.values_list("code", "k")) == [("ndcg", 5)]


def test_the_api_update_asks_for_a_code_even_in_a_partial_update(personas):
    evaluation = EvaluationFactory(model__endpoint__team=personas.team)
    EvaluationMetricFactory(evaluation=evaluation, code="ap", k=10)
    response = api_client(personas.lead).patch(
        f"/api/v1/evaluations/{evaluation.pk}/", {"metrics": [{"k": 5}]}, format="json")
    assert response.status_code == 400
    assert response.json() == {
        "metrics": {"0": {"code": ["name a metric code, e.g. ndcg or ndcg@10"]}}}
    assert list(evaluation.metric_configs.values_list("code", "k")) == [("ap", 10)]
