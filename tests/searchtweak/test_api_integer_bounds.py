"""Every integer a client sends is bounded (searchtweak.integers): each integer field of
every JSON body and each integer query parameter, read off the OpenAPI schema, answers a
value beyond 64 bits, or a negative one, with a 400 naming the field — never a 404 (the
address named rows that exist) or a 500 — and nothing stored changes. The schema states
the bounds, so the fuzz (test_schemathesis.py) generates values on both sides of them."""

import json

import pytest
from rest_framework.test import APIClient

from tests.searchtweak.test_api_errors import (  # noqa: F401
    _schema,
    route_path,
    stored_rows,
    world,
)

pytestmark = pytest.mark.django_db

HUGE = 2**70


def client_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def _resolve(schema: dict, node: dict) -> dict:
    if "$ref" in node:
        return schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[1]]
    return node


def _integer_values(schema: dict, node: dict, value: int):
    """Bodies for one top-level field: the integer itself, in a list, or in an object
    (a metric's k), as the field's schema takes it; None when the field holds none."""
    node = _resolve(schema, node)
    for option in node.get("oneOf", []) + node.get("allOf", []):
        found = _integer_values(schema, option, value)
        if found is not None:
            return found
    if node.get("type") == "integer":
        return value
    if node.get("type") == "array":
        inner = _integer_values(schema, node["items"], value)
        return None if inner is None else [inner]
    if isinstance(node.get("additionalProperties"), dict):
        inner = _integer_values(schema, node["additionalProperties"], value)
        return None if inner is None else {"0": inner}
    for name, child in (node.get("properties") or {}).items():
        inner = _integer_values(schema, child, value)
        if inner is not None:
            base = {"code": "ndcg"} if name == "k" else {}
            return {**base, name: inner}
    return None


def integer_fields() -> list[tuple[str, str, str, dict]]:
    """(method, path, field, its schema) for every top-level field of a JSON body that
    holds an integer somewhere."""
    schema = _schema()
    found = []
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            content = operation.get("requestBody", {}).get("content", {})
            if "application/json" not in content:
                continue
            body = _resolve(schema, content["application/json"]["schema"])
            for field, node in body.get("properties", {}).items():
                if _integer_values(schema, node, 1) is not None:
                    found.append((method.upper(), path, field, node))
    return found


def integer_parameters() -> list[tuple[str, str]]:
    """(path, name) of every integer query parameter of a GET."""
    schema = _schema()
    return [(path, parameter["name"])
            for path, operations in schema["paths"].items()
            for parameter in operations.get("get", {}).get("parameters", [])
            if parameter["in"] == "query"
            and _resolve(schema, parameter.get("schema", {})).get("type") == "integer"]


def test_every_integer_in_every_request_body_has_bounds_in_the_schema():
    schema = _schema()
    unbounded = []

    def walk(node, where):
        node = _resolve(schema, node)
        if node.get("type") == "integer" and not (
                "minimum" in node and "maximum" in node and node["maximum"] < 2**63):
            unbounded.append(where)
        for name, child in (node.get("properties") or {}).items():
            walk(child, f"{where}.{name}")
        if "items" in node:
            walk(node["items"], f"{where}[]")
        if isinstance(node.get("additionalProperties"), dict):
            walk(node["additionalProperties"], f"{where}{{}}")
        for option in node.get("oneOf", []) + node.get("allOf", []):
            walk(option, where)

    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            for content in operation.get("requestBody", {}).get("content", {}).values():
                walk(content["schema"], f"{method.upper()} {path}")
    assert unbounded == []
    assert len(integer_fields()) >= 40


@pytest.mark.slow_reason("sends four out-of-range bodies to every integer field of the API")
def test_an_integer_out_of_range_is_a_400_naming_its_field_on_every_route(
        personas, world, caplog):  # noqa: F811
    schema = _schema()
    client = client_for(personas.owner)
    before = stored_rows()
    wrong = []
    for method, template, field, node in integer_fields():
        path = route_path(template, world)
        for value in (HUGE, -HUGE, 2**63, -1):
            body = {field: _integer_values(schema, node, value)}
            if field == "grade" and value == -1:
                continue  # a grade below the scale is the service's 400, tested there
            response = getattr(client, method.lower())(
                path, json.dumps(body), content_type="application/json")
            if response.status_code != 400 or field not in response.json():
                wrong.append((method, template, field, value, response.status_code,
                              response.content[:200]))
    assert wrong == [], "\n".join(map(str, wrong))
    assert stored_rows() == before


@pytest.mark.slow_reason("reads every list and filter of the API with out-of-range integers")
def test_an_integer_query_parameter_out_of_range_is_never_a_server_error(
        personas, world):  # noqa: F811
    client = client_for(personas.owner)
    wrong = []
    for template, name in integer_parameters():
        path = route_path(template, world, other_id=world["evaluation_id"])
        for value in (HUGE, -HUGE, -1):
            response = client.get(path, {name: str(value)})
            # A page beyond the last is DRF's 404 "Invalid page."; anything else that is
            # not a row of the caller's is a 400 or an empty answer.
            allowed = (200, 400, 404) if name == "page" else (200, 400)
            if response.status_code not in allowed:
                wrong.append((template, name, value, response.status_code,
                              response.content[:200]))
    assert wrong == [], "\n".join(map(str, wrong))
