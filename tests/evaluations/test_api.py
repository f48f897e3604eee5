"""The endpoints, models and evaluations API (docs/ARCHITECTURE.md /api/v1/)."""

import pytest
from django.test import TestCase
from rest_framework.test import APIClient

from evaluations.models import Endpoint, Evaluation, Keyword, SearchModel
from metrics.models import EvaluationRecomputeState, MetricMean
from searchtweak.models import Role
from tests.evaluations.factories import (
    EndpointFactory,
    EvaluationFactory,
    EvaluationMetricFactory,
    KeywordFactory,
    SearchModelFactory,
)
from tests.evaluations.servers import running_server
from tests.searchtweak.factories import MembershipFactory

pytestmark = pytest.mark.django_db

ENDPOINT = {"name": "Products", "url": "https://search.test/products", "method": "GET",
            "headers": {"Authorization": "ApiKey abcdef0123456789", "Accept-Language": "en"},
            "mapper": {"documents": "hits.hits", "id": "_id", "name": "_source.title",
                       "image": None, "fields": {"Price": "_source.price"}}}


def client_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_an_admin_creates_an_endpoint_and_never_sees_the_secret_again(personas):
    response = client_for(personas.admin).post("/api/v1/endpoints/", ENDPOINT, format="json")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["headers"] == {"Accept-Language": "en", "Authorization": "••••6789"}
    assert body["secret_header_names"] == ["Authorization"]
    assert body["team"] == personas.team.pk
    assert body["mapper"]["fields"] == {"Price": "_source.price"}
    fetched = client_for(personas.admin).get(f"/api/v1/endpoints/{body['id']}/").json()
    assert fetched["headers"] == {"Accept-Language": "en", "Authorization": "••••6789"}
    assert "abcdef" not in str(fetched)


@pytest.mark.parametrize("persona", ["lead", "grader"])
def test_below_admin_the_api_hides_endpoint_configuration_as_the_page_does(personas, persona):
    endpoint = EndpointFactory(team=personas.team, headers={"X-Team": "acme"})
    client = client_for(getattr(personas, persona))
    client.force_login(getattr(personas, persona))  # for the page
    # The edit page and the API's detail: one rule, the same 403.
    assert client.get(f"/endpoints/{endpoint.pk}/").status_code == 403
    response = client.get(f"/api/v1/endpoints/{endpoint.pk}/")
    assert response.status_code == 403
    assert response.json() == {"detail": "This needs the admin role."}
    # The list leaves out headers, mapper, timeout and the URL, which can carry keys
    # (?api_key=) and internal host names; the list page leaves the URL out too.
    endpoint.url = "https://search.internal.test/s?api_key=secret-in-url"
    endpoint.save(update_fields=["url"])
    listed = client.get("/api/v1/endpoints/").json()["results"]
    assert listed == [{"id": endpoint.pk, "team": personas.team.pk, "name": endpoint.name,
                       "method": endpoint.method,
                       "created_at": listed[0]["created_at"], "archived_at": None}]
    assert "secret-in-url" not in client.get("/endpoints/").content.decode()


def test_an_admin_lists_endpoints_with_their_configuration_only_in_their_admin_teams(
        personas):
    mine = EndpointFactory(team=personas.team, headers={"X-Team": "acme"})
    # The admin is a grader in the other team: its endpoint is listed without configuration.
    MembershipFactory(team=personas.other_team, user=personas.admin, role=Role.GRADER)
    theirs = EndpointFactory(team=personas.other_team, headers={"X-Team": "other"})
    listed = {row["id"]: row for row in
              client_for(personas.admin).get("/api/v1/endpoints/").json()["results"]}
    assert listed[mine.pk]["headers"] == {"X-Team": "acme"}
    assert listed[mine.pk]["url"] == mine.url
    assert listed[mine.pk]["mapper"]["documents"] == "docs"
    assert listed[mine.pk]["timeout_seconds"] == mine.timeout_seconds
    assert not {"url", "headers", "secret_header_names", "mapper", "timeout_seconds"} & set(
        listed[theirs.pk])


@pytest.mark.parametrize("persona", ["lead", "grader"])
def test_below_admin_the_api_hides_search_model_configuration_as_the_page_does(personas,
                                                                               persona):
    model = SearchModelFactory(endpoint=EndpointFactory(team=personas.team),
                               headers={"X-Key": "k"}, body='{"q": "#query#"}',
                               default_keywords="shoes")
    client = client_for(getattr(personas, persona))
    client.force_login(getattr(personas, persona))  # for the page
    assert client.get(f"/models/{model.pk}/").status_code == 403
    assert client.get(f"/api/v1/models/{model.pk}/").status_code == 403
    [listed] = client.get("/api/v1/models/").json()["results"]
    # What the list page shows stays: a lead picks a model and its keywords by it.
    assert (listed["id"], listed["params"], listed["default_keywords"]) == (
        model.pk, {"q": "#query#"}, ["shoes"])
    assert not {"headers", "body", "body_format"} & set(listed)
    admin_view = client_for(personas.admin).get(f"/api/v1/models/{model.pk}/").json()
    assert (admin_view["headers"], admin_view["body"]) == ({"X-Key": "k"}, '{"q": "#query#"}')


def test_endpoint_input_errors_are_400_naming_the_field_and_store_nothing(personas):
    bad = {**ENDPOINT, "mapper": {**ENDPOINT["mapper"], "id": "_id["}}
    response = client_for(personas.admin).post("/api/v1/endpoints/", bad, format="json")
    assert response.status_code == 400
    assert list(response.json()) == ["mapper.id"]
    assert not Endpoint.objects.exists()


def test_only_admins_configure_endpoints(personas):
    response = client_for(personas.lead).post("/api/v1/endpoints/", ENDPOINT, format="json")
    assert response.status_code == 403
    endpoint = EndpointFactory(team=personas.team)
    assert client_for(personas.lead).patch(f"/api/v1/endpoints/{endpoint.pk}/",
                                           {"name": "x"}, format="json").status_code == 403


def test_endpoints_are_404_outside_the_callers_teams(personas):
    endpoint = EndpointFactory(team=personas.team)
    outsider = client_for(personas.outsider)
    url = f"/api/v1/endpoints/{endpoint.pk}/"
    assert outsider.get(url).status_code == 404
    assert outsider.patch(url, {"name": "x"}, format="json").status_code == 404
    assert outsider.delete(url).status_code == 404
    assert outsider.get("/api/v1/endpoints/").json()["count"] == 0
    assert Endpoint.objects.get(pk=endpoint.pk).name == endpoint.name


def test_endpoint_list_is_paginated(personas):
    for _ in range(3):
        EndpointFactory(team=personas.team)
    body = client_for(personas.grader).get("/api/v1/endpoints/?page_size=2").json()
    assert body["count"] == 3 and len(body["results"]) == 2
    assert body["next"].endswith("page=2&page_size=2") and body["previous"] is None


def test_patch_and_delete_an_endpoint(personas):
    endpoint = EndpointFactory(team=personas.team)
    admin = client_for(personas.admin)
    response = admin.patch(f"/api/v1/endpoints/{endpoint.pk}/", {"timeout_seconds": 3},
                           format="json")
    assert response.status_code == 200 and response.json()["timeout_seconds"] == 3
    SearchModelFactory(endpoint=endpoint)
    response = admin.delete(f"/api/v1/endpoints/{endpoint.pk}/")
    assert response.status_code == 200 and response.json()["archived_at"] is not None
    unused = EndpointFactory(team=personas.team)
    assert admin.delete(f"/api/v1/endpoints/{unused.pk}/").status_code == 204


def test_wrong_method_is_405(personas):
    endpoint = EndpointFactory(team=personas.team)
    assert client_for(personas.admin).put(f"/api/v1/endpoints/{endpoint.pk}/", {},
                                          format="json").status_code == 405
    assert client_for(personas.lead).get("/api/v1/evaluations/1/start/").status_code == 405


def test_models_are_created_on_a_team_endpoint_only(personas):
    mine = EndpointFactory(team=personas.team)
    foreign = EndpointFactory(team=personas.other_team)
    admin = client_for(personas.admin)
    payload = {"name": "BM25", "endpoint": foreign.pk, "params": {"q": "#query#", "size": 10},
               "default_keywords": ["shoes", "hats"]}
    response = admin.post("/api/v1/models/", payload, format="json")
    assert response.status_code == 400
    assert response.json() == {"endpoint": ["No such endpoint in this team."]}
    response = admin.post("/api/v1/models/", {**payload, "endpoint": mine.pk}, format="json")
    assert response.status_code == 201
    body = response.json()
    assert (body["params"], body["default_keywords"]) == ({"q": "#query#", "size": 10},
                                                          ["shoes", "hats"])
    assert SearchModel.objects.get(pk=body["id"]).team == personas.team


def test_model_test_runs_one_query_against_the_engine(personas):
    with running_server() as server:
        endpoint = EndpointFactory(team=personas.team, url=f"{server.url}/search",
                                   mapper={"documents": "hits.hits", "id": "_id",
                                           "name": "_source.title", "image": None,
                                           "fields": {}})
        model = SearchModelFactory(endpoint=endpoint)
        response = client_for(personas.lead).post(f"/api/v1/models/{model.pk}/test/",
                                                  {"query": "boots"}, format="json")
        as_admin = client_for(personas.admin).post(f"/api/v1/models/{model.pk}/test/",
                                                   {"query": "boots"}, format="json").json()
    body = response.json()
    assert response.status_code == 200
    assert (body["ok"], body["status_code"], body["error"]) == (True, 200, "")
    assert [d["doc_id"] for d in body["documents"]] == ["boots-1", "boots-2", "boots-3"]
    # The raw answer is for admins only: whatever answered may say more than its documents.
    assert body["raw"] == ""
    assert '"_id": "boots-1"' in as_admin["raw"]


def test_model_test_reports_the_failing_mapper_field(personas):
    with running_server() as server:
        endpoint = EndpointFactory(team=personas.team, url=f"{server.url}/search",
                                   mapper={"documents": "hits.hits", "id": "_source.sku",
                                           "name": "_source.title", "image": None,
                                           "fields": {}})
        model = SearchModelFactory(endpoint=endpoint)
        body = client_for(personas.admin).post(f"/api/v1/models/{model.pk}/test/",
                                               {"query": "boots"}, format="json").json()
    assert body["ok"] is False and body["error_field"] == "mapper.id"
    assert body["error"].startswith("mapper.id: '_source.sku' found no id")


def test_model_test_is_404_for_outsiders_and_403_for_graders(personas):
    model = SearchModelFactory(endpoint__team=personas.team)
    url = f"/api/v1/models/{model.pk}/test/"
    assert client_for(personas.outsider).post(url, {"query": "x"}).status_code == 404
    assert client_for(personas.grader).post(url, {"query": "x"}).status_code == 403


def test_a_lead_creates_an_evaluation_and_reads_it_back(personas):
    model = SearchModelFactory(endpoint__team=personas.team)
    payload = {"name": "Spring", "model": model.pk, "scale": "graded", "strategy": 3,
               "keywords": ["red shoes", "red shoes", "", "hats"],
               "metrics": [{"code": "ndcg", "k": 10, "params": {}},
                           {"code": "precision", "k": 5}],
               "transformers": {}, "tags": ["spring"]}
    response = client_for(personas.lead).post("/api/v1/evaluations/", payload, format="json")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert (body["status"], body["progress"], body["keyword_count"]) == ("pending", 0.0, 2)
    # No bounds yet either: nothing is fetched.
    none = {"value": None, "keyword_count": 0, "lower": None, "upper": None,
            "bounds_exact": True}
    assert body["metrics"] == [{"code": "ndcg", "k": 10, "params": {}, **none},
                               {"code": "precision", "k": 5, "params": {}, **none}]
    assert body["fetch"] == {"total": 2, "fetched": 0, "failed": 0, "pending": 2, "percent": 0,
                             "all_failed": False, "errors": []}


def test_evaluation_detail_shows_metric_values_written_by_the_metrics_app(personas):
    evaluation = EvaluationFactory(model__endpoint__team=personas.team)
    EvaluationRecomputeState.objects.create(evaluation=evaluation, progress=40.0)
    config = EvaluationMetricFactory(evaluation=evaluation, code="ap", k=10)
    MetricMean.objects.create(metric=config, value=0.5, keyword_count=7, lower=0.25,
                              upper=0.75, bounds_exact=False)
    body = client_for(personas.grader).get(f"/api/v1/evaluations/{evaluation.pk}/").json()
    assert body["progress"] == 40.0
    assert body["metrics"] == [
        {"code": "ap", "k": 10, "params": {}, "value": 0.5, "keyword_count": 7,
         "lower": 0.25, "upper": 0.75, "bounds_exact": False}]


def test_evaluation_bad_input_is_400_and_stores_nothing(personas):
    model = SearchModelFactory(endpoint__team=personas.team)
    payload = {"name": "Bad", "model": model.pk, "scale": "graded", "strategy": 3,
               "keywords": ["a"], "metrics": [{"code": "ndcg", "k": 0}]}
    response = client_for(personas.lead).post("/api/v1/evaluations/", payload, format="json")
    assert response.status_code == 400
    assert response.json() == {
        "metrics": {"0": {"k": ["Ensure this value is greater than or equal to 1."]}}}
    assert not Evaluation.objects.exists() and not Keyword.objects.exists()


def test_graders_cannot_create_or_start_evaluations(personas):
    evaluation = EvaluationFactory(model__endpoint__team=personas.team)
    grader = client_for(personas.grader)
    assert grader.post("/api/v1/evaluations/", {}, format="json").status_code == 403
    assert grader.post(f"/api/v1/evaluations/{evaluation.pk}/start/").status_code == 403
    assert grader.get(f"/api/v1/evaluations/{evaluation.pk}/").status_code == 200


def test_evaluations_are_404_outside_the_callers_teams(personas):
    evaluation = EvaluationFactory(model__endpoint__team=personas.team)
    outsider = client_for(personas.outsider)
    for suffix in ("", "start/", "pause/", "finish/"):
        method = outsider.get if not suffix else outsider.post
        assert method(f"/api/v1/evaluations/{evaluation.pk}/{suffix}").status_code == 404
    assert outsider.delete(f"/api/v1/evaluations/{evaluation.pk}/").status_code == 404
    assert outsider.get("/api/v1/evaluations/").json()["count"] == 0
    assert Evaluation.objects.filter(pk=evaluation.pk).exists()


def test_start_pause_finish_through_the_api(personas):
    with running_server() as server:
        endpoint = EndpointFactory(team=personas.team, url=f"{server.url}/search",
                                   mapper={"documents": "hits.hits", "id": "_id",
                                           "name": "_source.title", "image": None,
                                           "fields": {}})
        evaluation = EvaluationFactory(model=SearchModelFactory(endpoint=endpoint))
        KeywordFactory(evaluation=evaluation, text="boots")
        EvaluationMetricFactory(evaluation=evaluation)
        lead = client_for(personas.lead)
        base = f"/api/v1/evaluations/{evaluation.pk}"
        with TestCase.captureOnCommitCallbacks(execute=True):
            body = lead.post(f"{base}/start/").json()
    assert body["status"] in ("fetching", "active")
    body = lead.get(f"{base}/").json()
    assert body["status"] == "active"
    assert body["fetch"] == {"total": 1, "fetched": 1, "failed": 0, "pending": 0, "percent": 100,
                             "all_failed": False, "errors": []}
    response = lead.post(f"{base}/start/")
    assert response.status_code == 400
    assert response.json() == {"status": ["Only a pending evaluation can start (it is active)."]}
    assert lead.post(f"{base}/finish/").json()["status"] == "finished"
    assert lead.post(f"{base}/finish/").json()["status"] == "finished"
    assert lead.post(f"{base}/pause/").status_code == 400


def test_patch_an_evaluation_and_refuse_frozen_fields(personas):
    evaluation = EvaluationFactory(model__endpoint__team=personas.team, status="active",
                                   started_at="2025-01-01T00:00:00Z")
    lead = client_for(personas.lead)
    url = f"/api/v1/evaluations/{evaluation.pk}/"
    response = lead.patch(url, {"name": "New name", "tags": ["x"]}, format="json")
    assert response.status_code == 200 and response.json()["name"] == "New name"
    response = lead.patch(url, {"strategy": 3}, format="json")
    assert response.status_code == 400
    assert response.json() == {"strategy": ["cannot change after the evaluation has started"]}


def test_delete_an_evaluation(personas):
    evaluation = EvaluationFactory(model__endpoint__team=personas.team)
    assert client_for(personas.lead).delete(
        f"/api/v1/evaluations/{evaluation.pk}/").status_code == 204
    assert not Evaluation.objects.filter(pk=evaluation.pk).exists()


def test_the_schema_documents_the_evaluations_api(personas):
    response = client_for(personas.grader).get("/api/schema/?format=json")
    paths = response.json()["paths"]
    for path in ("/api/v1/endpoints/", "/api/v1/models/{model_id}/test/",
                 "/api/v1/evaluations/{evaluation_id}/start/"):
        assert path in paths
