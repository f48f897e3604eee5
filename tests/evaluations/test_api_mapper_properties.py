"""Any mapper sent to the endpoint API is stored valid or refused with a 400 that names a
mapper field, never a 500, and a refusal stores nothing."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rest_framework.test import APIClient

from evaluations.endpoints.mapper import validate_mapper
from evaluations.models import Endpoint
from tests.evaluations.factories import EndpointFactory
from tests.property_depth import examples

pytestmark = pytest.mark.django_db

VALID = {"documents": "hits.hits", "id": "_id", "name": "_source.title", "image": None,
         "fields": {"Price": "_source.price"}}

expressions = st.one_of(
    st.sampled_from(["hits", "a.b[0]", "@", "items[?price > `3`].name", "`1`", "a || b",
                     "length(@)", "{x: a}", "[*].id", "'lit'", "\"quoted\""]),
    # \x00: PostgreSQL's jsonb cannot store it, so it must be refused before the INSERT.
    st.text(st.sampled_from("ab.[]{}()*@&|!`'\"=<>,:?-_ \\0123\x00"), max_size=25),
    st.text(st.characters(codec="utf-8"), max_size=25),
    # Deep nesting and long input: a parser that recurses or a column that overflows.
    st.builds(lambda opening, closing, depth: opening * depth + "a" + closing * depth,
              st.sampled_from(["(", "[", "{x: ", "!"]), st.sampled_from(["", ")", "]", "}"]),
              st.sampled_from([10, 500, 5000])),
    st.builds(lambda count: "a." * count + "b", st.sampled_from([100, 5000])),
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False) | expressions,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(
        st.text(max_size=8), children, max_size=3),
    max_leaves=8,
)
mapper_keys = st.sampled_from(["documents", "id", "name", "image", "fields", "other"])
mappers = st.one_of(
    json_values,
    st.dictionaries(mapper_keys, st.one_of(expressions, json_values), max_size=6),
    st.builds(lambda changes: {**VALID, **changes},
              st.dictionaries(mapper_keys, st.one_of(expressions, json_values), max_size=2)),
    st.builds(lambda fields: {**VALID, "fields": fields},
              st.dictionaries(st.text(st.sampled_from("Pr ice\x00\t"), max_size=10),
                              expressions, max_size=3)),
)
SETTINGS = settings(max_examples=examples(80), deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])


def admin_client(personas) -> APIClient:
    client = APIClient()
    client.force_authenticate(personas.admin)
    return client


def assert_refusal_names_the_mapper(response) -> None:
    assert response.status_code == 400, response.content
    fields = list(response.json())
    assert fields and all(field.split(".")[0] == "mapper" for field in fields), fields


@given(mapper=mappers)
@SETTINGS
def test_creating_an_endpoint_with_any_mapper_stores_it_valid_or_names_the_field(
        personas, mapper):
    before = Endpoint.objects.count()
    response = admin_client(personas).post("/api/v1/endpoints/", {
        "name": "Shop", "url": "https://search.test/s", "mapper": mapper}, format="json")
    if response.status_code != 201:
        assert_refusal_names_the_mapper(response)
        assert Endpoint.objects.count() == before
        return
    stored = Endpoint.objects.get(pk=response.json()["id"]).mapper
    assert validate_mapper(stored) == stored == response.json()["mapper"]


@given(mapper=mappers)
@SETTINGS
def test_changing_an_endpoints_mapper_to_anything_keeps_it_valid_or_unchanged(
        personas, mapper):
    endpoint = EndpointFactory(team=personas.team, mapper=VALID)
    response = admin_client(personas).patch(f"/api/v1/endpoints/{endpoint.pk}/",
                                            {"mapper": mapper}, format="json")
    endpoint.refresh_from_db()
    if response.status_code != 200:
        assert_refusal_names_the_mapper(response)
        assert endpoint.mapper == VALID
        return
    assert validate_mapper(endpoint.mapper) == endpoint.mapper == response.json()["mapper"]
