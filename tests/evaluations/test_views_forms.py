"""The endpoint and search model forms help: every error at once, Test before saving, the
demo engine preset, and the new model's endpoint preselected."""

import json

import pytest

from evaluations import demo
from evaluations.endpoints import services as endpoint_services
from evaluations.models import Endpoint, SearchModel
from tests.evaluations.factories import EndpointFactory
from tests.evaluations.servers import Reply, running_server

pytestmark = pytest.mark.django_db

BLANK = {"name": "Shop", "url": "https://search.test/s", "method": "GET",
         "timeout_seconds": "5", "headers": "", "secret_headers": "", "preset": "",
         "mapper_documents": "hits.hits", "mapper_id": "_id", "mapper_name": "_source.title",
         "mapper_image": "", "mapper_fields": "", "test-query": "", "test-params": "q=#query#"}


def login(client, user):
    client.force_login(user)
    return client


def errors_of(response, form: str = "form") -> dict[str, list[str]]:
    return {field: list(messages) for field, messages in response.context[form].errors.items()}


# --- every error at once ---------------------------------------------------------------


def test_it_names_each_of_three_bad_fields_at_once_and_stores_nothing(client, personas):
    response = login(client, personas.admin).post("/endpoints/new/", {
        **BLANK, "url": "not a url", "mapper_documents": "hits[",
        "mapper_fields": "Price: price\nBrand: brand..name"})
    assert response.status_code == 400
    errors = errors_of(response)
    assert errors["url"] == ["Enter an http:// or https:// URL."]
    assert errors["mapper_documents"][0].startswith("invalid JMESPath 'hits[': ")
    assert errors["mapper_fields"][0].startswith("Brand: invalid JMESPath 'brand..name': ")
    assert set(errors) == {"url", "mapper_documents", "mapper_fields"}
    assert not Endpoint.objects.exists()


def test_it_checks_the_mapper_even_when_the_headers_do_not_parse(client, personas):
    response = login(client, personas.admin).post("/endpoints/new/", {
        **BLANK, "headers": "no colon here", "mapper_id": "", "mapper_name": "a..b"})
    assert response.status_code == 400
    errors = errors_of(response)
    assert errors["headers"] == ["Line 1: write Name:value."]
    assert errors["mapper_id"] == ["This field is required (or choose a mapper preset)."]
    assert "Parse error at column 2" in errors["mapper_name"][0]
    assert not Endpoint.objects.exists()


def test_it_shows_the_whole_jmespath_error(client, personas):
    response = login(client, personas.admin).post("/endpoints/new/", {
        **BLANK, "mapper_documents": "hits.hits."})
    message = errors_of(response)["mapper_documents"][0]
    # jmespath's message, its column and where in the expression, not a line cut at
    # "for expression:".
    assert message == (
        "invalid JMESPath 'hits.hits.': Expecting: ['quoted_identifier', "
        "'unquoted_identifier', 'lbracket', 'lbrace'], got: eof: Parse error at column 10, "
        "token \"\" (EOF): hits.hits.⟨here⟩")
    assert message in response.content.decode().replace("&#x27;", "'").replace("&quot;", '"')


def test_editing_keeps_every_error_at_once_and_the_stored_endpoint(client, personas):
    endpoint = EndpointFactory(team=personas.team, url="https://search.test/old")
    response = login(client, personas.admin).post(f"/endpoints/{endpoint.pk}/", {
        **BLANK, "url": "ftp://search.test/", "mapper_id": "[", "mapper_image": "x["})
    assert response.status_code == 400
    assert set(errors_of(response)) == {"url", "mapper_id", "mapper_image"}
    endpoint.refresh_from_db()
    assert endpoint.url == "https://search.test/old" and endpoint.mapper["id"] == "id"


# --- Test before saving ----------------------------------------------------------------


def test_the_test_button_shows_the_mapped_documents_and_stores_nothing(client, personas):
    with running_server() as server:
        response = login(client, personas.admin).post("/endpoints/new/", {
            **BLANK, "url": f"{server.url}/search", "headers": "Accept-Language: de",
            "mapper_fields": "Rank: _source.rank", "test": "1", "test-query": "boots",
            "test-params": "q=#query#\nsize=3"})
    assert response.status_code == 200
    result = response.context["result"]
    assert result.status_code == 200
    assert [(doc.doc_id, doc.name, doc.fields) for doc in result.documents] == [
        ("boots-1", "boots result 1", {"Rank": 1}), ("boots-2", "boots result 2", {"Rank": 2}),
        ("boots-3", "boots result 3", {"Rank": 3})]
    page = response.content.decode()
    assert 'data-testid="test-result"' in page and "boots result 3" in page
    assert server.received[0].query == {"q": ["boots"], "size": ["3"]}
    assert server.received[0].headers["accept-language"] == "de"
    assert not Endpoint.objects.exists()
    # The form keeps what was typed, ready to save.
    assert response.context["form"]["url"].value() == f"{server.url}/search"


def test_the_test_button_needs_no_name_and_reports_the_endpoint_failing(client, personas):
    with running_server() as server:
        server.handler = lambda request: Reply(status=503, body={"error": "down"})
        response = login(client, personas.admin).post("/endpoints/new/", {
            **BLANK, "name": "", "url": f"{server.url}/search", "test": "1",
            "test-query": "boots"})
    assert response.status_code == 200
    assert response.context["result"].error == "HTTP 503 from the endpoint"
    assert "HTTP 503 from the endpoint" in response.content.decode()
    assert len(server.received) == 1  # a test is never retried
    assert not Endpoint.objects.exists()


def test_the_test_button_names_a_mapper_that_finds_nothing(client, personas):
    with running_server() as server:
        response = login(client, personas.admin).post("/endpoints/new/", {
            **BLANK, "url": f"{server.url}/search", "mapper_documents": "response.docs",
            "test": "1", "test-query": "boots"})
    result = response.context["result"]
    assert result.error_field == "mapper.documents"
    assert "'response.docs' found nothing in the response" in result.error
    assert not Endpoint.objects.exists()


def test_the_test_button_on_the_edit_page_uses_the_stored_secret(client, personas):
    with running_server() as server:
        endpoint = endpoint_services.endpoint_create(
            team=personas.team, created_by=None, name="Shop", url=f"{server.url}/search",
            secret_headers={"X-Api-Key": "k-1234567890abcdef"},
            mapper={"documents": "hits.hits", "id": "_id", "name": "_source.title"})
        login(client, personas.admin)
        form = client.get(f"/endpoints/{endpoint.pk}/").context["form"]
        assert form.initial["secret_headers"] == "X-Api-Key: ••••cdef"
        response = client.post(f"/endpoints/{endpoint.pk}/", {
            **BLANK, "url": f"{server.url}/other", "secret_headers": "X-Api-Key: ••••cdef",
            "test": "1", "test-query": "hats"})
    assert response.context["result"].documents[0].doc_id == "hats-1"
    assert server.received[0].path == "/other"
    assert server.received[0].headers["x-api-key"] == "k-1234567890abcdef"
    endpoint.refresh_from_db()
    assert endpoint.url == f"{server.url}/search"  # the test changed nothing


def test_the_test_button_rejects_bad_input_without_sending(client, personas):
    with running_server() as server:
        response = login(client, personas.admin).post("/endpoints/new/", {
            **BLANK, "url": f"{server.url}/search", "mapper_name": "a..b", "test": "1",
            "test-query": "", "test-params": "size=3"})
    assert response.status_code == 400
    assert set(errors_of(response)) == {"mapper_name"}
    assert errors_of(response, "test_form") == {}
    assert server.received == []
    response = client.post("/endpoints/new/", {
        **BLANK, "url": f"{server.url}/search", "test": "1", "test-query": "",
        "test-params": "size=3"})
    assert errors_of(response, "test_form") == {
        "query": ["Enter a query to test with."],
        "params": ["Put #query# where the keyword goes, e.g. q=#query#."]}
    assert server.received == [] and not Endpoint.objects.exists()


def test_the_test_button_is_for_admins_of_the_team(client, personas):
    endpoint = EndpointFactory(team=personas.team)
    with running_server() as server:
        data = {**BLANK, "url": f"{server.url}/search", "test": "1", "test-query": "boots"}
        assert login(client, personas.lead).post("/endpoints/new/", data).status_code == 403
        assert client.post(f"/endpoints/{endpoint.pk}/", data).status_code == 403
        login(client, personas.outsider)
        assert client.post(f"/endpoints/{endpoint.pk}/", data).status_code == 404
        assert client.put("/endpoints/new/", data).status_code == 405
    assert server.received == []


# --- the demo engine preset ------------------------------------------------------------


def test_the_demo_preset_offers_this_sites_demo_search(client, personas):
    page = login(client, personas.admin).get("/endpoints/new/")
    presets = json.loads(page.content.decode().split('id="mapper-presets"')[1]
                         .split(">", 1)[1].split("</script>")[0])
    assert presets["demo"] == {**demo.DEMO_MAPPER, "url": "http://testserver/demo/search"}
    assert presets["elasticsearch"]["documents"] == "hits.hits"
    assert '<option value="demo">SearchTweak demo engine</option>' in page.content.decode()


def test_the_demo_preset_fills_url_and_mapper_without_javascript(client, personas):
    response = login(client, personas.admin).post("/endpoints/new/", {
        **BLANK, "url": "", "preset": "demo", "mapper_documents": "", "mapper_id": "",
        "mapper_name": ""}, HTTP_HOST="localhost:8000")
    endpoint = Endpoint.objects.get(name="Shop")
    assert response.url == f"/models/new/?endpoint={endpoint.pk}"
    assert endpoint.url == "http://localhost:8000/demo/search"
    assert endpoint.mapper == demo.DEMO_MAPPER


def test_an_engine_beside_the_app_is_a_valid_url(client, personas):
    # Docker service names have no dot: http://elasticsearch:9200 is what users type.
    response = login(client, personas.admin).post("/endpoints/new/", {
        **BLANK, "url": "http://elasticsearch:9200/products/_search"})
    assert response.status_code == 302
    assert Endpoint.objects.get().url == "http://elasticsearch:9200/products/_search"


@pytest.mark.django_db(transaction=True)
def test_the_demo_preset_tests_against_the_demo_engine_served_live(client, personas,
                                                                  live_server):
    demo.catalog_ensure()
    response = login(client, personas.admin).post("/endpoints/new/", {
        **BLANK, "url": f"{live_server.url}/demo/search", "preset": "demo",
        "mapper_documents": "", "mapper_id": "", "mapper_name": "", "test": "1",
        "test-query": "cast iron skillet", "test-params": "q=#query#\nsize=5"})
    result = response.context["result"]
    assert result.status_code == 200 and len(result.documents) == 5
    assert all("skillet" in doc.name.lower() for doc in result.documents[:3])
    assert set(result.documents[0].fields) == {"Category", "Brand", "Price", "Description"}
    assert not Endpoint.objects.exists()


def test_a_missing_url_is_required_without_the_demo_preset(client, personas):
    response = login(client, personas.admin).post("/endpoints/new/", {**BLANK, "url": ""})
    assert errors_of(response)["url"] == ["This field is required."]
    assert not Endpoint.objects.exists()


# --- the new model's endpoint ----------------------------------------------------------


def test_a_new_model_preselects_the_endpoint_just_created(client, personas):
    EndpointFactory(team=personas.team)
    login(client, personas.admin).post("/endpoints/new/", BLANK)
    created = Endpoint.objects.get(name="Shop")
    form = client.get(f"/models/new/?endpoint={created.pk}").context["form"]
    assert form.initial["endpoint"] == created.pk
    assert f'<option value="{created.pk}" selected>' in str(form["endpoint"])


def test_a_new_model_preselects_the_teams_only_active_endpoint(client, personas):
    only = EndpointFactory(team=personas.team)
    EndpointFactory(team=personas.team, archived_at="2025-01-01T00:00:00Z")
    foreign = EndpointFactory(team=personas.other_team)
    login(client, personas.admin)
    assert client.get("/models/new/").context["form"].initial["endpoint"] == only.pk
    # Someone else's endpoint in the address is ignored.
    assert client.get(f"/models/new/?endpoint={foreign.pk}").context["form"] \
        .initial["endpoint"] == only.pk
    EndpointFactory(team=personas.team)
    assert client.get("/models/new/").context["form"].initial["endpoint"] is None
    assert client.get("/models/new/?endpoint=x").context["form"].initial["endpoint"] is None
    assert not SearchModel.objects.exists()


def test_the_preselection_does_not_override_a_posted_endpoint(client, personas):
    first, second = (EndpointFactory(team=personas.team) for _ in range(2))
    response = login(client, personas.admin).post(f"/models/new/?endpoint={first.pk}", {
        "name": "BM25", "endpoint": second.pk, "params": "q=#query#", "body_format": "json"})
    assert response.status_code == 302
    assert SearchModel.objects.get(name="BM25").endpoint == second
