"""Secrets shown back: an engine that echoes its request must not put the endpoint's or the
model's keys into Test's answer or the snapshots graders read, and a search model's
sensitive headers are stored encrypted and shown masked. Real servers on 127.0.0.1."""

import importlib
import json

import pytest
from rest_framework.test import APIClient

from evaluations.endpoints import services as endpoint_services
from evaluations.models import Keyword, SearchModel, Snapshot
from evaluations.services import configuration, lifecycle
from tests.evaluations.factories import ES_MAPPER
from tests.evaluations.servers import Reply, running_server

pytestmark = pytest.mark.django_db

ENDPOINT_KEY = "sk-endpoint-0123456789abcdef"
MODEL_TOKEN = "tok-model-9876543210fedcba"


def echo(request) -> Reply:
    """An engine that answers with the headers it received, as debugging proxies do."""
    return Reply(body={"hits": {"hits": [{
        "_id": request.headers.get("x-api-key", "none"),
        "_source": {"title": f"seen {request.headers.get('authorization')}",
                    "rank": dict(request.headers)}}]}})


@pytest.fixture
def echoing():
    with running_server() as server:
        server.handler = echo
        yield server


def echoed_model(personas, url: str) -> SearchModel:
    endpoint = endpoint_services.endpoint_create(
        team=personas.team, created_by=personas.admin, name="Echo", url=f"{url}/search",
        mapper=ES_MAPPER, secret_headers={"X-Api-Key": ENDPOINT_KEY})
    return endpoint_services.search_model_create(
        team=personas.team, created_by=personas.admin, endpoint=endpoint, name="m",
        params={"q": "#query#"},
        headers={"Authorization": f"Bearer {MODEL_TOKEN}", "X-Trace": "on"})


def test_test_shows_an_echoed_secret_nowhere(client, personas, echoing):
    model = echoed_model(personas, echoing.url)
    client.force_login(personas.admin)  # an admin sees the raw answer too

    result = endpoint_services.search_model_test(model=model, query="shoes")
    page = client.post(f"/models/{model.pk}/test/", {"query": "shoes"}).content.decode()

    assert result.ok, result.error
    assert echoing.received[0].headers["x-api-key"] == ENDPOINT_KEY  # still sent
    assert echoing.received[0].headers["authorization"] == f"Bearer {MODEL_TOKEN}"
    [doc] = result.documents
    assert (doc.doc_id, doc.name) == ("[redacted]", "seen [redacted]")
    assert json.loads(doc.fields["Rank"])["x-trace"] == "on"
    for shown in (result.raw, json.dumps(doc.fields), page):
        assert ENDPOINT_KEY not in shown and MODEL_TOKEN not in shown
    assert "[redacted]" in result.raw


def test_fetching_stores_no_echoed_secret_in_snapshots(
        personas, echoing, django_capture_on_commit_callbacks):
    model = echoed_model(personas, echoing.url)
    evaluation = configuration.evaluation_create(
        team=personas.team, created_by=personas.admin, model=model, name="e", scale="graded",
        strategy=1, keywords=["shoes"], metrics=[{"code": "ndcg", "k": 10, "params": {}}])
    with django_capture_on_commit_callbacks(execute=True):
        lifecycle.evaluation_start(evaluation=evaluation)

    assert Keyword.objects.get(evaluation=evaluation).fetch_status == "fetched"
    [stored] = Snapshot.objects.filter(keyword__evaluation=evaluation).values(
        "doc_id", "name", "fields")
    assert ENDPOINT_KEY not in json.dumps(stored) and MODEL_TOKEN not in json.dumps(stored)
    assert stored["name"] == "seen [redacted]"


def test_the_endpoint_forms_test_scrubs_the_secrets_as_typed(personas, echoing):
    result = endpoint_services.endpoint_test(
        team=personas.team, query="shoes", params={"q": "#query#"}, url=f"{echoing.url}/s",
        mapper=ES_MAPPER, headers={"Authorization": f"Token {MODEL_TOKEN}"},
        secret_headers={"X-Api-Key": ENDPOINT_KEY})

    assert result.ok, result.error
    assert ENDPOINT_KEY not in result.raw and MODEL_TOKEN not in result.raw
    assert result.documents[0].name == "seen [redacted]"


def test_a_models_sensitive_headers_are_stored_encrypted_and_shown_masked(
        client, personas, echoing):
    model = echoed_model(personas, echoing.url)
    model.refresh_from_db()
    assert model.headers == {"X-Trace": "on"}
    assert MODEL_TOKEN not in model.secret_headers_encrypted
    assert endpoint_services.search_model_secret_headers(model=model) == {
        "Authorization": f"Bearer {MODEL_TOKEN}"}

    api = APIClient()
    api.force_authenticate(personas.admin)
    shown = api.get(f"/api/v1/models/{model.pk}/").json()["headers"]
    assert shown == {"X-Trace": "on", "Authorization": "••••dcba"}
    client.force_login(personas.admin)
    page = client.get(f"/models/{model.pk}/").content.decode()
    assert MODEL_TOKEN not in page and "Authorization: ••••dcba" in page


def test_a_masked_model_header_keeps_its_secret_and_an_unknown_mask_is_refused(
        personas, echoing):
    model = echoed_model(personas, echoing.url)
    api = APIClient()
    api.force_authenticate(personas.admin)

    kept = api.patch(f"/api/v1/models/{model.pk}/", {"headers": {
        "Authorization": "••••dcba", "X-Trace": "off"}}, format="json")
    refused = api.patch(f"/api/v1/models/{model.pk}/", {"headers": {
        "X-Api-Token": "••••abcd"}}, format="json")

    assert kept.status_code == 200, kept.json()
    model.refresh_from_db()
    assert model.headers == {"X-Trace": "off"}
    assert endpoint_services.search_model_secret_headers(model=model) == {
        "Authorization": f"Bearer {MODEL_TOKEN}"}
    assert (refused.status_code, refused.json()) == (
        400, {"headers": ["enter the value of X-Api-Token, not a mask"]})
    assert endpoint_services.search_model_test(model=model, query="shoes").ok
    assert echoing.received[-1].headers["authorization"] == f"Bearer {MODEL_TOKEN}"


def test_the_migration_encrypts_sensitive_headers_stored_in_plain_before(personas):
    from django.apps import apps

    migration = importlib.import_module(
        "evaluations.migrations.0004_search_model_secret_headers")
    endpoint = endpoint_services.endpoint_create(team=personas.team, created_by=None, name="e",
                                                 url="https://search.test/s", mapper=ES_MAPPER)
    # As the services stored it before: every header in the plain JSON column.
    old = SearchModel.objects.create(
        team=personas.team, endpoint=endpoint, name="old", params={"q": "#query#"},
        headers={"Authorization": f"Bearer {MODEL_TOKEN}", "X-Trace": "on"})
    plain = SearchModel.objects.create(team=personas.team, endpoint=endpoint, name="plain",
                                       params={"q": "#query#"}, headers={"X-Trace": "on"})

    migration.encrypt_sensitive_model_headers(apps, None)

    old.refresh_from_db()
    plain.refresh_from_db()
    assert old.headers == {"X-Trace": "on"}
    assert MODEL_TOKEN not in old.secret_headers_encrypted
    assert endpoint_services.search_model_secret_headers(model=old) == {
        "Authorization": f"Bearer {MODEL_TOKEN}"}
    assert (plain.headers, plain.secret_headers_encrypted) == ({"X-Trace": "on"}, "")
