"""Regressions schemathesis and the hostile-input fuzz found: inputs that used to answer
500 or an HTML 404."""

import json
import logging

import pytest
from rest_framework.test import APIClient

from evaluations.models import Endpoint, Evaluation
from searchtweak.json_input import NUL_PROBLEM, SURROGATE_PROBLEM

pytestmark = pytest.mark.django_db


def client_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.mark.parametrize("path", ["/api/v1/evaluations/", "/api/v1/models/",
                                  "/api/v1/endpoints/"])
def test_a_body_that_is_not_an_object_answers_400(personas, path):
    response = client_for(personas.owner).post(path, '"just a string"',
                                               content_type="application/json")
    assert response.status_code == 400 and "non_field_errors" in response.json()
    assert not Evaluation.objects.exists() and not Endpoint.objects.exists()


def test_an_id_beyond_64_bits_in_the_address_is_a_404_and_in_the_body_a_400(personas):
    client = client_for(personas.owner)
    huge = 10**30
    # SQLite cannot compare such an id, PostgreSQL finds no row: 404 either way.
    assert client.get(f"/api/v1/endpoints/{huge}/").status_code == 404
    response = client.post("/api/v1/models/", {"team": huge, "endpoint": 1, "name": "m"},
                           format="json")
    # In a body it is the caller's input: a 400 on its field.
    assert response.status_code == 400 and response.json() == {"team": ["must be a team id"]}


def test_unrouted_api_urls_answer_json_404(personas):
    response = client_for(personas.owner).get("/api/v1/endpoints/-3/")
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"detail": "Not found."}


# --- hostile JSON bodies and query strings ---------------------------------------
# Every JSON route of the schema, with the ids of objects that exist (a missing object would
# answer 404 before the body is read).

DEEP = "[" * 100_000 + "]" * 100_000


@pytest.fixture
def world(personas):
    from judgments.models import Scale, Transformer
    from tests.evaluations.factories import EndpointFactory, SearchModelFactory
    from tests.judges.builders import judge_with_account
    from tests.judgments.builders import evaluation_with_slots

    endpoint = EndpointFactory(team=personas.team)
    model = SearchModelFactory(endpoint=endpoint, team=personas.team)
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=1, strategy=1)
    from evaluations.query_sets.services import query_set_create
    query_set = query_set_create(team=personas.team, created_by=None, name="Shoes",
                                 keywords=["boots"])
    from notifications.services import webhook_create
    webhook, _ = webhook_create(team=personas.team, created_by=personas.admin,
                                url="http://127.0.0.1:9/hook", events=["run_regressed"])
    from schedules.services import schedule_create
    schedule = schedule_create(team=personas.team, created_by=None, name="Nightly",
                               model=model, query_set=query_set, scale="graded", strategy=1,
                               interval_minutes=60, baseline="first",
                               metrics=[{"code": "ndcg", "k": 10, "params": {}}])
    from judges.models import JudgeRun
    from tests.judges.run_builders import run_of

    judge = judge_with_account(personas.team)
    # Paused: the resume route (which takes a JSON body) has something to act on.
    run = run_of(judge, evaluation, mode=JudgeRun.Mode.SHADOW)
    JudgeRun.objects.filter(pk=run.pk).update(status=JudgeRun.Status.PAUSED)
    from behaviour.services import behaviour_source_import_csv

    source = behaviour_source_import_csv(
        team=personas.team, user=None, name="Counts",
        lines=["keyword,doc_id,position,impressions,clicks", "boots,d1,1,10,2"])
    from behaviour.learning import click_grader_create

    clicks = click_grader_create(team=personas.team, by=None, name="Learned", source=source,
                                 click_model="pbm")
    return {
        "source_id": source.pk, "clicks_judge_id": clicks.judge_id,
        "query_set_id": query_set.pk, "number": 1, "webhook_id": webhook.pk,
        "schedule_id": schedule.pk, "run_id": run.pk,
        "team_id": personas.team.pk, "endpoint_id": endpoint.pk, "model_id": model.pk,
        "evaluation_id": evaluation.pk,
        "snapshot_id": evaluation.keywords.get().snapshots.get().pk,
        "judge_id": judge.pk,
        "scale_id": Scale.objects.create(team=personas.team, code="stars", name="Stars",
                                         lo=0, hi=4).pk,
        "transformer_id": Transformer.objects.create(
            team=personas.team, source="graded", target="binary",
            mapping={"0": 0, "1": 0, "2": 1, "3": 1}).pk,
    }


def route_path(template: str, world: dict, **more) -> str:
    """A route's path for the world's rows: a clicks grader's routes name its judge's id,
    which must be the clicks grader's, not the world's LLM judge."""
    if template.startswith("/api/v1/click-graders/{judge_id}/"):
        more["judge_id"] = world["clicks_judge_id"]
    return template.format(**(world | more))


def _schema() -> dict:
    from drf_spectacular.generators import SchemaGenerator

    return SchemaGenerator().get_schema(request=None, public=True)


def json_routes() -> list[tuple[str, str, list[str]]]:
    """(method, path template, the body's field names) of every operation taking JSON."""
    schema = _schema()
    routes = []
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            content = operation.get("requestBody", {}).get("content", {})
            if "application/json" not in content:
                continue
            reference = content["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
            fields = list(schema["components"]["schemas"][reference].get("properties", {}))
            routes.append((method.upper(), path, fields))
    return routes


def list_routes() -> list[tuple[str, list[str]]]:
    """(path, query parameter names) of every GET without path parameters."""
    return [(path, [parameter["name"] for parameter in operations["get"].get("parameters", [])
                    if parameter["in"] == "query"])
            for path, operations in _schema()["paths"].items()
            if "get" in operations and "{" not in path]


def stored_rows() -> dict[str, list]:
    """Every row a write through the API could touch."""
    from django.apps import apps

    from tests.source_scan import PACKAGES

    return {model._meta.label: list(model.objects.order_by("pk").values())
            for app in apps.get_app_configs() if app.name in PACKAGES
            for model in app.get_models()}


def _send(client: APIClient, method: str, path: str, body: str):
    return getattr(client, method.lower())(path, body, content_type="application/json")


def test_every_json_route_is_in_the_hostile_walk():
    routes = {(method, path) for method, path, _ in json_routes()}
    assert len(routes) >= 20
    assert {("POST", "/api/v1/judges/"), ("PATCH", "/api/v1/models/{model_id}/"),
            ("POST", "/api/v1/teams/{team_id}/invitations/"),
            ("POST", "/api/v1/evaluations/{evaluation_id}/next/")} <= routes


@pytest.mark.slow_reason("sends hostile bodies to every API route")
def test_deep_nesting_lone_surrogates_and_nul_are_400s_naming_the_field_on_every_route(
        personas, world, caplog):
    client = client_for(personas.owner)
    before = stored_rows()
    for method, template, fields in json_routes():
        path = route_path(template, world)
        response = _send(client, method, path, DEEP)
        assert response.status_code == 400, (method, path, response.content[:300])
        assert response.json() == {
            "detail": "The JSON is nested more than 64 levels deep."}, (method, path)
        for field in fields:
            for body, problem in (
                    (f'{{"{field}": {DEEP}}}', "is nested more than 64 levels deep"),
                    (json.dumps({field: "\ud800"}), SURROGATE_PROBLEM),
                    (json.dumps({field: ["ok", {"x": "a\x00b"}]}), NUL_PROBLEM)):
                response = _send(client, method, path, body)
                assert response.status_code == 400, (method, path, field, response.content)
                assert response.json() == {field: [problem]}, (method, path, field)
    assert stored_rows() == before
    assert [record for record in caplog.records if record.levelno >= logging.ERROR] == []


def test_a_surrogate_in_a_key_is_named_in_a_form_that_renders(personas):
    response = client_for(personas.owner).post(
        "/api/v1/endpoints/", '{"na\\udc00me": "x"}', content_type="application/json")
    assert response.status_code == 400
    assert response.json() == {"na\\udc00me": [SURROGATE_PROBLEM]}
    assert not Endpoint.objects.exists()


@pytest.mark.parametrize("body, detail", [
    ('"\\udfff"', "The JSON may not contain a lone surrogate (U+D800 to U+DFFF), which is "
                  "not a character: send text as UTF-8."),
    ('["\\u0000"]', "The JSON may not contain a NUL character (U+0000)."),
    ('{"name": NaN}', "NaN and Infinity are not JSON numbers."),
    ('{"name": "x"', "Not valid JSON at line 1, column 13: Expecting ',' delimiter."),
])
def test_bodies_without_a_field_to_blame_are_a_400_detail(personas, body, detail):
    response = client_for(personas.owner).post("/api/v1/endpoints/", body,
                                               content_type="application/json")
    assert (response.status_code, response.json()) == (400, {"detail": detail})
    assert not Endpoint.objects.exists()


def test_a_body_nested_within_the_limit_still_reaches_the_serializer(personas):
    nested = "[" * 64 + "]" * 64
    response = client_for(personas.owner).post(
        "/api/v1/endpoints/",
        f'{{"name": "Shop", "url": "https://search.test/s", "mapper": {nested}}}',
        content_type="application/json")
    assert response.status_code == 400
    assert list(response.json()) == ["mapper"]  # the serializer's own refusal of a list


def test_nul_in_any_query_parameter_of_a_list_api_is_a_400_naming_it(personas, world):
    client = client_for(personas.owner)
    routes = list_routes()
    assert ("/api/v1/evaluations/", ["page", "page_size", "status", "team"]) in [
        (path, sorted(names)) for path, names in routes]
    for path, names in routes:
        for name in [*names, "anything"]:
            response = client.get(path, {name: "a\x00"})
            assert response.status_code == 400, (path, name, response.content[:300])
            assert response.json() == {name: [NUL_PROBLEM]}
    assert client.get("/api/v1/evaluations/?status=%00").json() == {"status": [NUL_PROBLEM]}


def test_nul_in_a_page_query_parameter_is_a_400_naming_it(client, personas):
    client.force_login(personas.owner)
    response = client.get("/evaluations/?status=%00")
    assert response.status_code == 400
    assert response.content.decode() == (
        "The query parameter 'status' may not contain a NUL character (U+0000).")
    assert client.get("/evaluations/?status=active").status_code == 200
