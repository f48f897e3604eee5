"""Hosts written in forms the policy or the HTTP client read differently from the plain
IPv4 address: IPv6 forms that embed an IPv4 address are judged as that address, and an
octal IPv4 host (`0177.0.0.1`), which the HTTP client cannot parse, is refused with the
reason wherever a URL is saved or tested, never a 500."""

import ipaddress
import json

import pytest
from rest_framework.test import APIClient

from evaluations.endpoints import services as endpoint_services
from evaluations.models import Endpoint, SearchModel
from notifications import services as notification_services
from notifications.models import Webhook
from searchtweak.outbound import address_refusal
from tests.evaluations.factories import ES_MAPPER

pytestmark = pytest.mark.django_db

OCTAL = "Invalid IPv4 address: '0177.0.0.1'"
UNREADABLE = f"The HTTP client cannot read this URL: {OCTAL}."


@pytest.fixture
def production_default(settings):
    settings.DEBUG = False
    settings.OUTBOUND_DENY_NETWORKS = list(settings.OUTBOUND_PRODUCTION_DENY_NETWORKS)
    settings.OUTBOUND_ALLOW_NETWORKS = []


def client_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.mark.parametrize(("address", "reason"), [
    ("::127.0.0.1", "::7f00:1 reaches 127.0.0.1, which is in a denied network (127.0.0.0/8, "
                    "OUTBOUND_DENY_NETWORKS)"),
    ("::a00:1", "::a00:1 reaches 10.0.0.1, which is in a denied network (10.0.0.0/8, "
                "OUTBOUND_DENY_NETWORKS)"),
    ("::ffff:0:7f00:1", "::ffff:0:7f00:1 reaches 127.0.0.1, which is in a denied network "
                        "(127.0.0.0/8, OUTBOUND_DENY_NETWORKS)"),
    ("::ffff:0:a9fe:a9fe", "::ffff:0:a9fe:a9fe reaches 169.254.169.254, which is in a denied "
                           "network (169.254.0.0/16, OUTBOUND_DENY_NETWORKS)"),
])
def test_an_ipv4_address_embedded_in_ipv6_is_judged_as_that_address(
        production_default, address, reason):
    assert address_refusal(ipaddress.ip_address(address)) == reason


@pytest.mark.parametrize("address", ["2606:4700::1111", "::ffff:0:808:808", "::808:808"])
def test_a_public_ipv4_address_embedded_in_ipv6_stays_allowed(production_default, address):
    assert address_refusal(ipaddress.ip_address(address)) == ""


@pytest.mark.parametrize("host", ["[::127.0.0.1]", "[::a00:1]", "[::ffff:0:7f00:1]"])
def test_webhook_creation_refuses_an_embedded_internal_address(
        production_default, personas, host):
    answer = client_for(personas.admin).post(
        f"/api/v1/teams/{personas.team.pk}/webhooks/",
        {"url": f"http://{host}:9/hook", "events": ["run_regressed"]}, format="json")
    assert answer.status_code == 400
    assert "OUTBOUND_DENY_NETWORKS" in json.dumps(answer.json()["url"])
    assert not Webhook.objects.exists()
    with pytest.raises(Exception, match="The outbound policy refuses this address"):
        notification_services.webhook_create(team=personas.team, created_by=None,
                                     url=f"http://{host}:9/hook", events=["run_regressed"])


def test_an_endpoint_with_an_octal_host_is_refused_on_the_api_and_the_form(personas, client):
    api = client_for(personas.admin)
    answer = api.post("/api/v1/endpoints/", {
        "team": personas.team.pk, "name": "Octal", "url": "http://0177.0.0.1:9/search",
        "mapper": ES_MAPPER}, format="json")
    assert answer.status_code == 400
    assert answer.json()["url"] == [UNREADABLE]
    client.force_login(personas.admin)
    page = client.post("/endpoints/new/", {
        "name": "Octal", "url": "http://0177.0.0.1:9/search", "method": "GET",
        "timeout_seconds": "5", "mapper_documents": "hits.hits", "mapper_id": "_id",
        "mapper_name": "_source.title"})
    assert page.status_code in (200, 400)
    assert UNREADABLE in page.content.decode().replace("&#x27;", "'")
    assert not Endpoint.objects.exists()


def test_a_models_test_against_a_stored_octal_host_says_why(personas):
    # Stored before the save read URLs as the client does.
    endpoint = Endpoint.objects.create(team=personas.team, name="Octal",
                                       url="http://0177.0.0.1:9/search", mapper=ES_MAPPER)
    model = SearchModel.objects.create(team=personas.team, endpoint=endpoint, name="m",
                                       params={"q": "#query#"})
    answer = client_for(personas.lead).post(f"/api/v1/models/{model.pk}/test/",
                                            {"query": "shoes"}, format="json")
    assert answer.status_code == 200, answer.content
    assert answer.json()["error"] == f"the HTTP client cannot read the endpoint's URL: {OCTAL}"
    result = endpoint_services.search_model_test(model=model, query="shoes")
    assert result.error == f"the HTTP client cannot read the endpoint's URL: {OCTAL}"


def test_a_judge_with_an_octal_host_is_a_400_naming_base_url(personas):
    answer = client_for(personas.admin).post("/api/v1/judges/", {
        "team": personas.team.pk, "name": "Octal", "provider": "openai",
        "model": "gpt-4o-mini", "base_url": "http://0177.0.0.1:11434/v1"}, format="json")
    assert answer.status_code == 400
    assert answer.json() == {"base_url": [UNREADABLE]}
