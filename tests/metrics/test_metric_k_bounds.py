"""A metric's k is stored in a small-integer column: 1..32767 through the evaluation form,
the evaluation API and a schedule, at the threshold; beyond, an error naming the field
(never a 500, never an overflow of the column on PostgreSQL). A metric given as a name
("ndcg@10") is accepted wherever metrics are given."""

import pytest
from django.core.exceptions import ValidationError
from rest_framework.test import APIClient

from evaluations.models import Evaluation, EvaluationMetric
from evaluations.services import configuration
from tests.evaluations.factories import SearchModelFactory

pytestmark = pytest.mark.django_db

HUGE = 99999999999999999999


def form_post(client, user, model, metrics: str):
    client.force_login(user)
    return client.post("/evaluations/new/", {
        "name": "Bounds", "model": model.pk, "keywords": "a", "scale": "graded",
        "strategy": "1", "metrics": metrics, "reuse_grades": "none"})


def api_post(user, model, metrics: list):
    client = APIClient()
    client.force_authenticate(user)
    return client.post("/api/v1/evaluations/", {
        "name": "Bounds", "model": model.pk, "scale": "graded", "strategy": 1,
        "keywords": ["a"], "metrics": metrics}, format="json")


@pytest.mark.parametrize("line", [f"ndcg@{HUGE}", "ndcg@32768", "P@32768 "])
def test_the_form_refuses_a_k_beyond_the_column(client, personas, line):
    model = SearchModelFactory(endpoint__team=personas.team)
    response = form_post(client, personas.lead, model, line)
    assert response.status_code == 400
    error = response.context["form"].errors["metrics"][0]
    assert error.startswith("Line 1: k must be between 1 and 32767 (got ")
    assert not Evaluation.objects.exists()


def test_the_form_accepts_k_at_the_column_maximum(client, personas):
    model = SearchModelFactory(endpoint__team=personas.team)
    form_post(client, personas.lead, model, "ndcg@32767")
    assert EvaluationMetric.objects.get().k == 32_767


@pytest.mark.parametrize(("metrics", "expected"), [
    ([{"code": "ndcg", "k": HUGE}], {"k": ["Ensure this value is less than or equal to 32767."]}),
    ([{"code": "ndcg", "k": 32_768}],
     {"k": ["Ensure this value is less than or equal to 32767."]}),
    ([{"code": f"ndcg@{HUGE}"}],
     {"k": ["k must be between 1 and 32767 (got 99999999999999999999)."]}),
    ([{"code": "ndcg", "k": 10**20}],
     {"k": ["Ensure this value is less than or equal to 32767."]}),
    ([f"ndcg@{'9' * 5000}"], {"code": ["Ensure this field has no more than 50 characters."]}),
    (["ndcg@40000"], {"k": ["k must be between 1 and 32767 (got 40000)."]}),
])
def test_the_api_refuses_a_k_beyond_the_column_on_its_item(personas, metrics, expected):
    model = SearchModelFactory(endpoint__team=personas.team)
    response = api_post(personas.lead, model, metrics)
    assert response.status_code == 400
    assert response.json() == {"metrics": {"0": expected}}
    assert not Evaluation.objects.exists()


def test_the_api_takes_metrics_as_names(personas):
    model = SearchModelFactory(endpoint__team=personas.team)
    response = api_post(personas.lead, model, ["ndcg@10", "P@5", {"code": "ap", "k": 32_767}])
    assert response.status_code == 201, response.json()
    assert list(EvaluationMetric.objects.values_list("code", "k")) == [
        ("ndcg", 10), ("precision", 5), ("ap", 32_767)]


def test_the_service_refuses_a_k_beyond_the_column_whoever_calls_it(personas):
    model = SearchModelFactory(endpoint__team=personas.team)
    with pytest.raises(ValidationError) as excinfo:
        configuration.evaluation_create(
            team=personas.team, created_by=personas.lead, model=model, name="Direct",
            scale="graded", strategy=1, keywords=["a"],
            metrics=[{"code": "ndcg", "k": 32_768, "params": {}}])
    assert excinfo.value.message_dict == {"metrics": ["item 1: k must be at most 32767."]}


@pytest.mark.parametrize("name", [f"ndcg@{'9' * 5000}", f"ndcg_cut_{'9' * 5000}"])
def test_the_form_refuses_a_cutoff_of_thousands_of_digits(client, personas, name):
    model = SearchModelFactory(endpoint__team=personas.team)
    response = form_post(client, personas.lead, model, name)
    assert response.status_code == 400
    error = response.context["form"].errors["metrics"][0]
    assert error.startswith("Line 1: ") and len(error) < 300
    assert not Evaluation.objects.exists()


@pytest.mark.parametrize("name", [f"ndcg@{'9' * 5000}", f"NDCG_cut_{'9' * 5000}"])
def test_the_registry_answers_a_cutoff_of_thousands_of_digits_with_its_own_error(name):
    import metrics_engine as core

    with pytest.raises(core.MetricInputError) as excinfo:
        core.resolve_metric_name(name)
    assert excinfo.value.field == "code" and len(str(excinfo.value)) < 300
