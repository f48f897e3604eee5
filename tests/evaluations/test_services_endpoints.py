"""Endpoint services name every bad field in one error, and a test stores nothing."""

import pytest
from django.core.exceptions import ValidationError

from evaluations.endpoints import services as endpoint_services
from evaluations.models import Endpoint, SearchModel
from tests.evaluations.factories import EndpointFactory

pytestmark = pytest.mark.django_db


def test_the_endpoint_test_service_collects_every_problem(personas):
    with pytest.raises(ValidationError) as raised:
        endpoint_services.endpoint_test(team=personas.team, query=" ", params={}, url="nope",
                                        timeout_seconds=500,
                                        mapper={"documents": "[", "id": "id", "name": ""})
    assert set(raised.value.message_dict) == {
        "query", "params", "url", "timeout_seconds", "mapper.documents", "mapper.name"}


def test_endpoint_create_names_every_bad_field(personas):
    with pytest.raises(ValidationError) as raised:
        endpoint_services.endpoint_create(team=personas.team, created_by=None, name=" ", url="x",
                                          mapper={"documents": "a[", "id": "id", "name": "n",
                                                  "fields": {"P": "p[", "Q": "q"}})
    assert set(raised.value.message_dict) == {"name", "url", "mapper.documents",
                                              "mapper.fields.P"}
    assert not Endpoint.objects.exists()


@pytest.mark.parametrize(("url", "valid"), [
    ("https://search.example.com/s?q=#query#", True),
    ("http://elasticsearch:9200/products/_search", True),
    ("http://127.0.0.1:8000/demo/search", True),
    ("http://[::1]:9200/", True),
    ("http://localhost/x", True),
    ("not a url", False),
    ("ftp://search.example.com/", False),
    ("http://", False),
    ("http://exa mple.com/", False),
    ("http://host:99999/", False),
    ("https://a..b/", False),
    ("http://-/", False),
    ("//search.example.com/", False),
])
def test_is_http_url_accepts_hosts_without_a_dot_and_rejects_the_rest(url, valid):
    assert endpoint_services.is_http_url(url) is valid


def test_a_mapper_expression_nested_too_deeply_is_a_named_error_not_a_crash(personas):
    nested = "(" * 5000 + "a" + ")" * 5000
    with pytest.raises(ValidationError) as raised:
        endpoint_services.endpoint_create(
            team=personas.team, created_by=None, name="Deep", url="https://search.test/s",
            mapper={"documents": "hits", "id": "id", "name": "name",
                    "fields": {"Deep": "!" * 2000 + "a"}, "image": nested})
    assert raised.value.message_dict == {
        "mapper.image": ["invalid JMESPath: nested too deeply"],
        "mapper.fields.Deep": ["invalid JMESPath: nested too deeply"]}
    assert not Endpoint.objects.exists()


def test_a_nul_character_in_a_mapper_is_refused_before_postgresql_would_fail(personas):
    with pytest.raises(ValidationError) as raised:
        endpoint_services.endpoint_create(
            team=personas.team, created_by=None, name="Nul", url="https://search.test/s",
            mapper={"documents": "hits", "id": "'a\x00b'", "name": "name",
                    "fields": {"Pr\x00ice": "price"}})
    assert raised.value.message_dict == {
        "mapper.id": ["may not contain a NUL character (U+0000)"],
        "mapper.fields.Pr\x00ice": ["may not contain a NUL character (U+0000)"]}
    assert not Endpoint.objects.exists()


@pytest.mark.parametrize("params", [{"q": "#query#", "x": "a\x00"},
                                    {"q": "#query#", "x\x00": "a"},
                                    {"q": ["#query#", "b\x00"]}])
def test_a_nul_character_in_model_params_is_refused_before_postgresql_would_fail(
        personas, params):
    endpoint = EndpointFactory(team=personas.team)
    with pytest.raises(ValidationError) as raised:
        endpoint_services.search_model_create(
            team=personas.team, created_by=None, endpoint=endpoint, name="Nul", params=params)
    assert list(raised.value.message_dict) == ["params"]
    assert "NUL character" in raised.value.message_dict["params"][0]
    assert not SearchModel.objects.exists()
