"""The endpoints, models and evaluations pages: happy path, wrong method, outsider, bad input."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from evaluations.models import Endpoint, Evaluation, Keyword, SearchModel
from metrics.models import MetricMean
from tests.evaluations.factories import (
    EndpointFactory,
    EvaluationFactory,
    EvaluationMetricFactory,
    KeywordFactory,
    SearchModelFactory,
    SnapshotFactory,
)
from tests.evaluations.servers import running_server

pytestmark = pytest.mark.django_db

ENDPOINT_POST = {"name": "Shop", "url": "https://search.test/s", "method": "GET",
                 "timeout_seconds": "5", "headers": "Accept-Language: en",
                 "secret_headers": "X-Api-Key: k-1234567890abcdef", "preset": "elasticsearch",
                 "mapper_documents": "", "mapper_id": "", "mapper_name": "",
                 "mapper_image": "", "mapper_fields": ""}


def login(client, user):
    client.force_login(user)
    return client


def test_an_admin_creates_an_endpoint_from_a_preset(client, personas):
    response = login(client, personas.admin).post("/endpoints/new/", ENDPOINT_POST)
    endpoint = Endpoint.objects.get(name="Shop")
    assert response.status_code == 302 and response.url == f"/models/new/?endpoint={endpoint.pk}"
    assert endpoint.mapper["documents"] == "hits.hits" and endpoint.mapper["id"] == "_id"
    assert endpoint.headers == {"Accept-Language": "en"}
    page = client.get(f"/endpoints/{endpoint.pk}/").content.decode()
    assert "X-Api-Key: ••••cdef" in page and "k-1234567890" not in page


def test_endpoint_form_errors_point_at_the_mapper_field_and_save_nothing(client, personas):
    data = {**ENDPOINT_POST, "preset": "", "mapper_documents": "hits[", "mapper_id": "id",
            "mapper_name": "title"}
    response = login(client, personas.admin).post("/endpoints/new/", data)
    assert response.status_code == 400
    assert "invalid JMESPath" in str(response.context["form"].errors["mapper_documents"])
    assert not Endpoint.objects.exists()


def test_endpoint_pages_need_the_admin_role_and_membership(client, personas):
    endpoint = EndpointFactory(team=personas.team)
    assert login(client, personas.lead).get("/endpoints/new/").status_code == 403
    assert client.get("/endpoints/").status_code == 200
    login(client, personas.outsider)
    assert client.get(f"/endpoints/{endpoint.pk}/").status_code == 404
    assert client.post(f"/endpoints/{endpoint.pk}/delete/").status_code == 404
    assert Endpoint.objects.filter(pk=endpoint.pk).exists()
    assert login(client, personas.admin).put(f"/endpoints/{endpoint.pk}/delete/").status_code \
        == 405


def test_a_model_is_created_then_tested_on_its_page(client, personas):
    with running_server() as server:
        endpoint = EndpointFactory(team=personas.team, url=f"{server.url}/search", mapper={
            "documents": "hits.hits", "id": "_id", "name": "_source.title", "image": None,
            "fields": {"Rank": "_source.rank"}})
        login(client, personas.admin)
        response = client.post("/models/new/", {
            "name": "BM25", "endpoint": endpoint.pk, "params": "q=#query#\nsize=10",
            "body_format": "json", "body": "", "headers": "", "default_keywords": "boots",
            "description": ""})
        model = SearchModel.objects.get(name="BM25")
        assert response.url == f"/models/{model.pk}/test/"
        assert model.params == {"q": "#query#", "size": "10"}
        page = client.post(f"/models/{model.pk}/test/", {"query": "boots"}).content.decode()
    assert "boots result 1" in page and "boots-3" in page and "Raw response" in page
    assert server.received[0].query == {"q": ["boots"], "size": ["10"]}


def test_a_lead_testing_a_model_sees_the_documents_but_not_the_raw_answer(client, personas):
    with running_server() as server:
        endpoint = EndpointFactory(team=personas.team, url=f"{server.url}/search", mapper={
            "documents": "hits.hits", "id": "_id", "name": "_source.title", "image": None,
            "fields": {}})
        model = SearchModelFactory(endpoint=endpoint)
        page = login(client, personas.lead).post(
            f"/models/{model.pk}/test/", {"query": "boots"}).content.decode()
    assert "boots result 1" in page and "boots-3" in page
    assert "Raw response" not in page and "_source" not in page


def test_model_test_page_is_for_leads_and_members_only(client, personas):
    model = SearchModelFactory(endpoint__team=personas.team)
    assert login(client, personas.grader).get(f"/models/{model.pk}/test/").status_code == 403
    assert login(client, personas.outsider).get(f"/models/{model.pk}/test/").status_code == 404


def test_a_lead_creates_an_evaluation_with_an_uploaded_keyword_file(client, personas):
    model = SearchModelFactory(endpoint__team=personas.team)
    upload = SimpleUploadedFile("k.csv", b"keyword\nred shoes\nblue hat\nRed Shoes\n")
    response = login(client, personas.lead).post("/evaluations/new/", {
        "name": "Spring", "description": "", "model": model.pk,
        "keywords": "green scarf\n\nblue hat",
        "keywords_file": upload, "scale": "graded", "strategy": "3",
        "metrics": "ndcg@10 gain=exponential\nprecision@5", "transformers": "", "tags": "q1, q1",
        "guidelines": "", "reuse_grades": "none"})
    evaluation = Evaluation.objects.get(name="Spring")
    assert response.url == f"/evaluations/{evaluation.pk}/"
    assert list(evaluation.keywords.values_list("text", flat=True)) == [
        "green scarf", "blue hat", "red shoes"]
    assert list(evaluation.metric_configs.values_list("code", "k", "params")) == [
        ("ndcg", 10, {"gain": "exponential"}), ("precision", 5, {})]
    assert evaluation.tags == ["q1"]
    notices = [str(m) for m in response.wsgi_request._messages]
    assert ("Read as SearchTweak CSV (a .csv file with the header keyword): 3 keywords. "
            "Removed 2 duplicates and 1 blank line.") in notices


def test_a_bad_keyword_file_is_shown_line_by_line_and_saves_nothing(client, personas):
    model = SearchModelFactory(endpoint__team=personas.team)
    upload = SimpleUploadedFile("k.txt", b"red shoes\ncaf\xe9\nblue hat\n" + b"x" * 501 + b"\n")
    response = login(client, personas.lead).post("/evaluations/new/", {
        "name": "Bad file", "model": model.pk, "keywords": "", "keywords_file": upload,
        "scale": "graded", "strategy": "1", "metrics": "ndcg@10", "reuse_grades": "none"})
    assert response.status_code == 400
    assert response.context["form"].errors["keywords_file"] == [
        "Read as Plain text (no header, no commas: one keyword a line).",
        "line 2: not UTF-8 text (byte 0xe9 at column 4)"]
    assert not Evaluation.objects.exists()


def test_evaluation_form_rejects_bad_metrics_and_saves_nothing(client, personas):
    model = SearchModelFactory(endpoint__team=personas.team)
    response = login(client, personas.lead).post("/evaluations/new/", {
        "name": "Bad", "model": model.pk, "keywords": "a", "scale": "graded", "strategy": "1",
        "metrics": "ndcg@10 gain=cubic", "reuse_grades": "none"})
    assert response.status_code == 400
    assert "params.gain" in str(response.context["form"].errors["metrics"])
    assert not Evaluation.objects.exists()
    assert login(client, personas.grader).get("/evaluations/new/").status_code == 403


def test_the_evaluation_page_shows_progress_keywords_and_errors(client, personas):
    evaluation = EvaluationFactory(model__endpoint__team=personas.team, status="active")
    ok = KeywordFactory(evaluation=evaluation, text="boots", fetch_status="fetched",
                        fetch_status_code=200, fetch_duration_ms=12)
    SnapshotFactory(keyword=ok, position=1, doc_id="b1", name="Trail boot")
    KeywordFactory(evaluation=evaluation, text="hats", fetch_status="failed",
                   fetch_error="HTTP 404 from the endpoint (not retried)")
    MetricMean.objects.create(
        metric=EvaluationMetricFactory(evaluation=evaluation, code="ndcg", k=10),
        value=0.75, keyword_count=1)
    page = login(client, personas.grader).get(f"/evaluations/{evaluation.pk}/").content.decode()
    assert "HTTP 404 from the endpoint (not retried)" in page
    assert 'aria-valuenow="100"' in page and "0.7500" in page
    assert ">Start<" not in page  # graders see no lead actions
    assert client.get(f"/evaluations/{evaluation.pk}/progress/").json() == {
        "status": "active", "total": 2, "fetched": 1, "failed": 1, "pending": 0,
        "percent": 100}
    snapshots = client.get(f"/keywords/{ok.pk}/").content.decode()
    assert "Trail boot" in snapshots and "b1" in snapshots


def test_evaluation_actions_are_plain_posts(client, personas):
    with running_server() as server:
        endpoint = EndpointFactory(team=personas.team, url=f"{server.url}/search", mapper={
            "documents": "hits.hits", "id": "_id", "name": "_source.title", "image": None,
            "fields": {}})
        evaluation = EvaluationFactory(model=SearchModelFactory(endpoint=endpoint))
        KeywordFactory(evaluation=evaluation, text="boots")
        EvaluationMetricFactory(evaluation=evaluation)
        login(client, personas.lead)
        from django.test import TestCase
        with TestCase.captureOnCommitCallbacks(execute=True):
            response = client.post(f"/evaluations/{evaluation.pk}/start/")
    assert response.url == f"/evaluations/{evaluation.pk}/"
    evaluation.refresh_from_db()
    assert evaluation.status == "active"
    assert Keyword.objects.get(evaluation=evaluation).snapshots.count() == 3
    assert client.get(f"/evaluations/{evaluation.pk}/start/").status_code == 405
    client.post(f"/evaluations/{evaluation.pk}/clone/")
    assert Evaluation.objects.filter(name=f"{evaluation.name} (copy)").exists()
    client.post(f"/evaluations/{evaluation.pk}/finish/")
    evaluation.refresh_from_db()
    assert evaluation.status == "finished"
    response = client.post(f"/evaluations/{evaluation.pk}/start/", follow=True)
    assert "Only a pending evaluation can start (it is finished)." in response.content.decode()
    assert client.post(f"/evaluations/{evaluation.pk}/explode/").status_code == 404


def test_evaluation_pages_are_404_for_outsiders(client, personas):
    evaluation = EvaluationFactory(model__endpoint__team=personas.team)
    keyword = KeywordFactory(evaluation=evaluation)
    login(client, personas.outsider)
    for url in (f"/evaluations/{evaluation.pk}/", f"/evaluations/{evaluation.pk}/progress/",
                f"/evaluations/{evaluation.pk}/edit/", f"/keywords/{keyword.pk}/"):
        assert client.get(url).status_code == 404, url
    assert client.post(f"/evaluations/{evaluation.pk}/delete/").status_code == 404
    assert Evaluation.objects.filter(pk=evaluation.pk).exists()
    assert "Evaluation" not in client.get("/evaluations/").content.decode().split("<main")[1] \
        .replace("Evaluations", "")


def test_editing_a_started_evaluation_keeps_frozen_fields(client, personas):
    evaluation = EvaluationFactory(model__endpoint__team=personas.team, status="pending",
                                   started_at="2025-01-01T00:00:00Z", strategy=1)
    KeywordFactory(evaluation=evaluation, text="boots")
    EvaluationMetricFactory(evaluation=evaluation)
    response = login(client, personas.lead).post(f"/evaluations/{evaluation.pk}/edit/", {
        "name": "Renamed", "model": evaluation.model_id, "keywords": "boots\nhats",
        "scale": "binary", "strategy": "3", "metrics": "ndcg@10", "reuse_grades": "none"})
    assert response.status_code == 302
    evaluation.refresh_from_db()
    assert (evaluation.name, evaluation.scale, evaluation.strategy) == ("Renamed", "graded", 1)
    assert list(evaluation.keywords.values_list("text", flat=True)) == ["boots", "hats"]


def test_lists_render_for_members(client, personas):
    EndpointFactory(team=personas.team, name="Visible endpoint")
    SearchModelFactory(endpoint__team=personas.team, name="Visible model")
    EvaluationFactory(model__endpoint__team=personas.team, name="Visible evaluation")
    login(client, personas.grader)
    assert "Visible endpoint" in client.get("/endpoints/").content.decode()
    assert "Visible model" in client.get("/models/").content.decode()
    assert "Visible evaluation" in client.get("/evaluations/").content.decode()
    assert client.post("/evaluations/").status_code == 405


@pytest.mark.parametrize(("strategy", "said"), [
    (1, "1 grader per result"), (3, "3 graders per result"),
    (13, "1 grader per result, up to 3 where it matters"),
])
def test_the_evaluation_page_says_the_strategy_in_words(client, personas, strategy, said):
    # "13 graders per result" was what a "1 → 3" evaluation said.
    evaluation = EvaluationFactory(model__endpoint__team=personas.team, strategy=strategy)
    page = login(client, personas.lead).get(f"/evaluations/{evaluation.pk}/").content.decode()
    assert f"<dd>{said}</dd>" in page
    feedback = client.get(f"/feedback/evaluations/{evaluation.pk}/").content.decode()
    assert f" · {said} ·" in feedback
