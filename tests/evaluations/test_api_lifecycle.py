"""API parity with the pages: clone, archive and restore an evaluation; restore endpoints
and search models. Same roles as the pages: 404 outside the team, 403 below the role."""

import pytest
from rest_framework.test import APIClient

from evaluations.models import Evaluation
from metrics.models import MetricMean
from tests.evaluations.factories import (
    EndpointFactory,
    EvaluationFactory,
    EvaluationMetricFactory,
    KeywordFactory,
    SearchModelFactory,
)

pytestmark = pytest.mark.django_db

ARCHIVED = "2025-01-01T00:00:00Z"


def client_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def configured_evaluation(team) -> Evaluation:
    evaluation = EvaluationFactory(
        model__endpoint__team=team, name="Spring", status="active", scale="graded",
        strategy=3, tags=["q1"], guidelines="Be kind.", transformers={"graded->binary": {
            "0": 0, "1": 0, "2": 1, "3": 1}})
    for position, text in enumerate(["boots", "hats", "red scarf"], start=1):
        KeywordFactory(evaluation=evaluation, text=text, position=position,
                       fetch_status="fetched")
    MetricMean.objects.create(metric=EvaluationMetricFactory(
        evaluation=evaluation, code="ndcg", k=10, params={"gain": "exponential"}, position=0),
        value=0.5)
    EvaluationMetricFactory(evaluation=evaluation, code="precision", k=5, position=1)
    return evaluation


def configuration(evaluation: Evaluation) -> dict:
    return {
        "model": evaluation.model_id, "scale": evaluation.scale,
        "strategy": evaluation.strategy, "tags": evaluation.tags,
        "guidelines": evaluation.guidelines, "transformers": evaluation.transformers,
        "keywords": list(evaluation.keywords.order_by("position").values_list("text", flat=True)),
        "metrics": list(evaluation.metric_configs.order_by("position")
                        .values_list("code", "k", "params")),
    }


# --- clone -----------------------------------------------------------------------------


def test_clone_copies_keywords_and_metrics_like_the_page(client, personas):
    evaluation = configured_evaluation(personas.team)
    response = client_for(personas.lead).post(
        f"/api/v1/evaluations/{evaluation.pk}/clone/", {"name": "Spring again"}, format="json")
    assert response.status_code == 201, response.json()
    body = response.json()
    clone = Evaluation.objects.get(pk=body["id"])
    assert body["name"] == "Spring again" and body["status"] == "pending"
    assert body["keyword_count"] == 3 and body["fetch"]["fetched"] == 0
    assert [(m["code"], m["k"], m["params"], m["value"]) for m in body["metrics"]] == [
        ("ndcg", 10, {"gain": "exponential"}, None), ("precision", 5, {}, None)]
    assert configuration(clone) == configuration(evaluation)
    assert clone.created_by == personas.lead
    # The page's clone makes the same copy.
    client.force_login(personas.lead)
    client.post(f"/evaluations/{evaluation.pk}/clone/")
    page_clone = Evaluation.objects.get(name="Spring (copy)")
    assert configuration(page_clone) == configuration(clone)


def test_clone_without_a_name_is_named_a_copy(personas):
    evaluation = configured_evaluation(personas.team)
    response = client_for(personas.lead).post(f"/api/v1/evaluations/{evaluation.pk}/clone/")
    assert response.status_code == 201 and response.json()["name"] == "Spring (copy)"


def test_clone_rejects_a_blank_or_long_name_and_stores_nothing(personas):
    evaluation = configured_evaluation(personas.team)
    client = client_for(personas.lead)
    for name in ("   ", "x" * 201):
        response = client.post(f"/api/v1/evaluations/{evaluation.pk}/clone/", {"name": name},
                               format="json")
        assert response.status_code == 400 and list(response.json()) == ["name"]
    assert Evaluation.objects.count() == 1


def test_clone_needs_a_lead_of_the_team_and_a_post(personas):
    evaluation = configured_evaluation(personas.team)
    url = f"/api/v1/evaluations/{evaluation.pk}/clone/"
    response = client_for(personas.grader).post(url)
    assert response.status_code == 403 and "lead role" in response.json()["detail"]
    assert client_for(personas.outsider).post(url).status_code == 404
    assert client_for(personas.lead).get(url).status_code == 405
    assert client_for(personas.lead).post("/api/v1/evaluations/999999/clone/").status_code \
        == 404
    assert Evaluation.objects.count() == 1


# --- archive and restore an evaluation -------------------------------------------------


def test_archive_then_restore_an_evaluation(personas):
    evaluation = configured_evaluation(personas.team)
    client = client_for(personas.lead)
    response = client.post(f"/api/v1/evaluations/{evaluation.pk}/archive/")
    assert response.status_code == 200 and response.json()["archived_at"] is not None
    assert client.get("/api/v1/evaluations/").json()["count"] == 0
    assert client.get("/api/v1/evaluations/?archived=true").json()["count"] == 1
    response = client.post(f"/api/v1/evaluations/{evaluation.pk}/restore/")
    assert response.status_code == 200 and response.json()["archived_at"] is None
    assert [e["id"] for e in client.get("/api/v1/evaluations/").json()["results"]] == [
        evaluation.pk]
    evaluation.refresh_from_db()
    assert evaluation.keywords.count() == 3 and evaluation.status == "active"


def test_a_fetching_evaluation_is_not_archived(personas):
    evaluation = EvaluationFactory(model__endpoint__team=personas.team, status="fetching")
    response = client_for(personas.lead).post(f"/api/v1/evaluations/{evaluation.pk}/archive/")
    assert response.status_code == 400
    assert response.json() == {"status": ["Pause the evaluation before archiving it."]}
    evaluation.refresh_from_db()
    assert evaluation.archived_at is None


def test_evaluation_archive_and_restore_follow_the_page_roles(personas):
    evaluation = EvaluationFactory(model__endpoint__team=personas.team, archived_at=ARCHIVED)
    for action in ("archive", "restore"):
        url = f"/api/v1/evaluations/{evaluation.pk}/{action}/"
        assert client_for(personas.grader).post(url).status_code == 403
        assert client_for(personas.outsider).post(url).status_code == 404
        assert client_for(personas.lead).get(url).status_code == 405
    evaluation.refresh_from_db()
    assert evaluation.archived_at is not None


# --- restore endpoints and models ------------------------------------------------------


def test_restore_an_endpoint_after_deleting_a_used_one(personas):
    model = SearchModelFactory(endpoint__team=personas.team)
    endpoint = model.endpoint
    client = client_for(personas.admin)
    assert client.delete(f"/api/v1/endpoints/{endpoint.pk}/").json()["archived_at"] is not None
    assert client.get("/api/v1/endpoints/").json()["count"] == 0
    response = client.post(f"/api/v1/endpoints/{endpoint.pk}/restore/")
    assert response.status_code == 200 and response.json()["archived_at"] is None
    assert [e["id"] for e in client.get("/api/v1/endpoints/").json()["results"]] == [
        endpoint.pk]


def test_endpoint_restore_is_for_admins_of_the_team(personas):
    endpoint = EndpointFactory(team=personas.team, archived_at=ARCHIVED)
    url = f"/api/v1/endpoints/{endpoint.pk}/restore/"
    response = client_for(personas.lead).post(url)
    assert response.status_code == 403 and "admin role" in response.json()["detail"]
    assert client_for(personas.outsider).post(url).status_code == 404
    assert client_for(personas.admin).get(url).status_code == 405
    endpoint.refresh_from_db()
    assert endpoint.archived_at is not None


def test_restore_a_model_and_refuse_one_on_an_archived_endpoint(personas):
    model = SearchModelFactory(endpoint__team=personas.team, archived_at=ARCHIVED)
    stranded = SearchModelFactory(endpoint__team=personas.team, archived_at=ARCHIVED,
                                  endpoint__archived_at=ARCHIVED)
    client = client_for(personas.admin)
    response = client.post(f"/api/v1/models/{model.pk}/restore/")
    assert response.status_code == 200 and response.json()["archived_at"] is None
    response = client.post(f"/api/v1/models/{stranded.pk}/restore/")
    assert response.status_code == 400 and list(response.json()) == ["endpoint"]
    stranded.refresh_from_db()
    assert stranded.archived_at is not None
    assert [m["id"] for m in client.get("/api/v1/models/").json()["results"]] == [model.pk]


def test_model_restore_is_for_admins_of_the_team(personas):
    model = SearchModelFactory(endpoint__team=personas.team, archived_at=ARCHIVED)
    url = f"/api/v1/models/{model.pk}/restore/"
    assert client_for(personas.lead).post(url).status_code == 403
    assert client_for(personas.outsider).post(url).status_code == 404
    assert client_for(personas.admin).put(url).status_code == 405
    model.refresh_from_db()
    assert model.archived_at is not None


def test_the_schema_documents_clone_archive_and_restore(personas):
    schema = client_for(personas.grader).get("/api/schema/?format=json").json()
    operations = {path: {method: op["operationId"] for method, op in methods.items()
                         if isinstance(op, dict) and "operationId" in op}
                  for path, methods in schema["paths"].items()}
    assert operations["/api/v1/evaluations/{evaluation_id}/clone/"] == {
        "post": "evaluations_clone"}
    assert operations["/api/v1/evaluations/{evaluation_id}/archive/"] == {
        "post": "evaluations_archive"}
    assert operations["/api/v1/evaluations/{evaluation_id}/restore/"] == {
        "post": "evaluations_restore"}
    assert operations["/api/v1/endpoints/{endpoint_id}/restore/"] == {
        "post": "endpoints_restore"}
    assert operations["/api/v1/models/{model_id}/restore/"] == {"post": "models_restore"}
    clone = schema["paths"]["/api/v1/evaluations/{evaluation_id}/clone/"]["post"]
    assert "201" in clone["responses"]
    body = clone["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    component = schema["components"]["schemas"][body.rsplit("/", 1)[1]]
    assert component["properties"]["name"]["maxLength"] == 200
