"""Scales and transformers through the API: what admins do on /scales/, with its rules."""

import pytest
from rest_framework.test import APIClient

from judgments.models import Scale, Transformer
from judgments.scale_writes import scale_create, transformer_save
from tests.judgments.builders import evaluation_with_slots

pytestmark = pytest.mark.django_db

STARS = {
    "code": "stars", "name": "Stars", "lo": 1, "hi": 3,
    "labels": {"1": {"label": "Bad", "color": "#d92d20"}, "2": {"label": "Okay"},
               "3": {"label": "Great", "color": "#079455"}},
}


def client_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def _stars(team) -> Scale:
    return scale_create(team=team, code="stars", name="Stars", lo=1, hi=3, labels={
        "1": {"label": "Bad", "color": "#d92d20"}, "2": {"label": "Okay", "color": "#f79009"},
        "3": {"label": "Great", "color": "#079455"}})


# --- scales ---


def test_an_admin_creates_reads_edits_and_deletes_a_scale(personas):
    client = client_for(personas.admin)
    response = client.post("/api/v1/scales/", STARS, format="json")
    assert response.status_code == 201
    scale = Scale.objects.get(team=personas.team, code="stars")
    body = response.json()
    assert body["id"] == scale.pk and body["team"] == personas.team.pk
    assert (body["code"], body["name"], body["lo"], body["hi"]) == ("stars", "Stars", 1, 3)
    # A grade written without a colour gets the page's grey.
    assert scale.labels["2"] == {"label": "Okay", "color": "#5b6675"}
    assert client.get(f"/api/v1/scales/{scale.pk}/").json()["labels"] == scale.labels

    response = client.patch(f"/api/v1/scales/{scale.pk}/", {
        "name": "Three stars", "code": "stars",
        "labels": {**STARS["labels"], "2": {"label": "Fine", "color": "#f79009"}}},
        format="json")
    assert response.status_code == 200
    scale.refresh_from_db()
    assert (scale.name, scale.code, scale.lo, scale.hi) == ("Three stars", "stars", 1, 3)
    assert scale.labels["2"] == {"label": "Fine", "color": "#f79009"}
    assert response.json()["name"] == "Three stars"

    assert client.delete(f"/api/v1/scales/{scale.pk}/").status_code == 204
    assert not Scale.objects.exists()


def test_the_scale_list_holds_the_teams_own_scales_a_page_at_a_time(personas):
    stars = _stars(personas.team)
    _stars(personas.other_team)
    body = client_for(personas.owner).get("/api/v1/scales/").json()
    assert (body["count"], body["next"], body["previous"]) == (1, None, None)
    assert [row["id"] for row in body["results"]] == [stars.pk]
    by_team = client_for(personas.owner).get(f"/api/v1/scales/?team={personas.team.pk}")
    assert by_team.json()["results"][0]["code"] == "stars"


@pytest.mark.parametrize(("payload", "field", "message"), [
    ({**STARS, "labels": {"1": {"label": "Bad"}, "3": {"label": "Great"}}},
     "labels", "Grade 2 has no label."),
    ({**STARS, "labels": {**STARS["labels"], "x": {"label": "?"}}},
     "labels", "'x' is not a grade."),
    ({**STARS, "labels": {**STARS["labels"], "1": {"label": "Bad", "color": "red"}}},
     "labels", None),
    ({**STARS, "code": "graded"}, "code", "'graded' is a built-in scale."),
    ({**STARS, "lo": 3, "hi": 3}, "hi", "The highest grade must be above the lowest."),
    ({**STARS, "hi": 11}, "hi", None),
    ({**STARS, "team": "acme"}, "team", "must be a team id"),
    ({key: value for key, value in STARS.items() if key != "name"}, "name", None),
])
def test_a_bad_scale_is_a_400_naming_the_field_and_stores_nothing(personas, payload, field,
                                                                   message):
    response = client_for(personas.admin).post("/api/v1/scales/", payload, format="json")
    assert response.status_code == 400
    body = response.json()
    assert field in body, body
    if message:
        assert message in body[field]
    assert not Scale.objects.exists()


def test_an_edit_that_breaks_the_scale_is_a_400_and_changes_nothing(personas):
    scale = _stars(personas.team)
    client = client_for(personas.admin)
    response = client.patch(f"/api/v1/scales/{scale.pk}/", {"code": "moons"}, format="json")
    assert response.status_code == 400 and "code" in response.json()
    response = client.patch(f"/api/v1/scales/{scale.pk}/", {"hi": 4}, format="json")
    assert response.json() == {"labels": ["Grade 4 has no label."]}
    # Labels without colours take the page's grey, in a PATCH as in a POST.
    response = client.patch(f"/api/v1/scales/{scale.pk}/", {"labels": {
        "1": {"label": "Bad"}, "2": {"label": "Okay"}, "3": {"label": "Great"}}}, format="json")
    assert response.status_code == 200
    assert response.json()["labels"]["1"] == {"label": "Bad", "color": "#5b6675"}
    evaluation_with_slots(personas.team, keywords=1, positions=1, scale="stars")
    response = client.patch(f"/api/v1/scales/{scale.pk}/", {"lo": 2, "labels": {
        "2": {"label": "Okay"}, "3": {"label": "Great"}}}, format="json")
    assert response.json() == {"hi": ["Evaluations use this scale: its range cannot change."]}
    response = client.delete(f"/api/v1/scales/{scale.pk}/")
    assert response.status_code == 400 and "code" in response.json()
    scale.refresh_from_db()
    assert (scale.code, scale.lo, scale.hi, scale.labels["1"]) == (
        "stars", 1, 3, {"label": "Bad", "color": "#5b6675"})


def test_scales_need_an_admin_of_the_team(personas):
    scale = _stars(personas.team)
    url = f"/api/v1/scales/{scale.pk}/"
    for user in (personas.lead, personas.grader):
        client = client_for(user)
        for response in (client.get("/api/v1/scales/"), client.get(url),
                         client.post("/api/v1/scales/", {**STARS, "code": "moons"}, format="json"),
                         client.patch(url, {"name": "Mine"}, format="json"),
                         client.delete(url)):
            assert response.status_code == 403
            assert "admin role" in response.json()["detail"]
    outsider = client_for(personas.outsider)
    for response in (outsider.get(url), outsider.patch(url, {"name": "Mine"}, format="json"),
                     outsider.delete(url),
                     outsider.get(f"/api/v1/scales/?team={personas.team.pk}"),
                     outsider.post("/api/v1/scales/", {**STARS, "team": personas.team.pk},
                                   format="json")):
        assert response.status_code == 404
    # The outsider's own team is theirs to read: it has no scales.
    assert outsider.get("/api/v1/scales/").json()["count"] == 0
    assert APIClient().get("/api/v1/scales/").status_code == 401
    assert client_for(personas.admin).put(url, STARS, format="json").status_code == 405
    scale.refresh_from_db()
    assert (Scale.objects.count(), scale.name) == (1, "Stars")


# --- transformers ---


def test_an_admin_creates_replaces_edits_and_deletes_a_transformer(personas):
    client = client_for(personas.admin)
    mapping = {"0": 0, "1": 0, "2": 1, "3": 1}
    response = client.post("/api/v1/transformers/", {
        "source": "graded", "target": "binary", "mapping": mapping}, format="json")
    assert response.status_code == 201
    transformer = Transformer.objects.get(team=personas.team)
    assert response.json()["id"] == transformer.pk and transformer.mapping == mapping
    # The same pair again replaces its mapping, as the page's form does.
    response = client.post("/api/v1/transformers/", {
        "source": "graded", "target": "binary", "mapping": {**mapping, "1": 1}}, format="json")
    assert response.status_code == 200 and response.json()["id"] == transformer.pk
    assert Transformer.objects.get().mapping["1"] == 1

    url = f"/api/v1/transformers/{transformer.pk}/"
    response = client.patch(url, {"source": "graded", "mapping": {0: 0, 1: 0, 2: 0, 3: 1}},
                            format="json")
    assert response.status_code == 200
    assert response.json()["mapping"] == {"0": 0, "1": 0, "2": 0, "3": 1}
    assert client.get(url).json()["mapping"] == {"0": 0, "1": 0, "2": 0, "3": 1}
    listed = client.get("/api/v1/transformers/").json()
    assert listed["count"] == 1 and listed["results"][0]["source"] == "graded"
    assert client.delete(url).status_code == 204
    assert not Transformer.objects.exists()


def test_a_transformer_between_team_scales_maps_every_grade(personas):
    _stars(personas.team)
    response = client_for(personas.owner).post("/api/v1/transformers/", {
        "source": "stars", "target": "graded", "mapping": {"1": 0, "2": 2, "3": 3}},
        format="json")
    assert response.status_code == 201
    assert Transformer.objects.get().mapping == {"1": 0, "2": 2, "3": 3}


@pytest.mark.parametrize(("payload", "expected"), [
    ({"source": "graded", "target": "binary", "mapping": {"0": 0, "1": 0, "3": 1}},
     {"mapping": ["grade 2 is not mapped"]}),
    ({"source": "graded", "target": "binary", "mapping": {"0": 0, "1": 0, "2": 5, "3": 1}},
     {"mapping": ["grade 2 maps to 5, which is not a grade of the binary scale 0..1"]}),
    ({"source": "graded", "target": "binary", "mapping": {"0": 0, "1": 0, "2": 1, "7": 1}},
     {"mapping": ["'7' is not a grade of the graded scale 0..3"]}),
    ({"source": "moons", "target": "binary", "mapping": {"0": 0}},
     {"source": ["Unknown scale 'moons'."]}),
    ({"source": "binary", "target": "binary", "mapping": {"0": 0, "1": 1}},
     {"target": ["Choose a scale other than the source."]}),
    ({"source": "binary", "target": "graded", "mapping": {"0": 0, "1": "3"}}, None),
    ({"source": "binary", "target": "graded"}, None),
])
def test_a_bad_transformer_is_a_400_naming_the_field_and_stores_nothing(personas, payload,
                                                                        expected):
    response = client_for(personas.admin).post("/api/v1/transformers/", payload, format="json")
    assert response.status_code == 400
    if expected is None:
        assert list(response.json()) == ["mapping"]
    else:
        assert response.json() == expected
    assert not Transformer.objects.exists()


def test_a_transformer_edit_keeps_its_scales_and_every_grade(personas):
    transformer = transformer_save(team=personas.team, source="graded",
                                   target="binary", mapping={0: 0, 1: 0, 2: 1, 3: 1})
    url = f"/api/v1/transformers/{transformer.pk}/"
    client = client_for(personas.admin)
    response = client.patch(url, {"target": "detail"}, format="json")
    assert response.status_code == 400 and list(response.json()) == ["target"]
    response = client.patch(url, {"mapping": {"0": 0, "1": 1}}, format="json")
    assert response.json() == {"mapping": ["grade 2 is not mapped"]}
    response = client.patch(url, {}, format="json")
    assert response.json() == {"mapping": ["This field is required."]}
    transformer.refresh_from_db()
    assert (transformer.target, transformer.mapping) == (
        "binary", {"0": 0, "1": 0, "2": 1, "3": 1})


def test_transformers_need_an_admin_of_the_team(personas):
    transformer = transformer_save(team=personas.team, source="graded",
                                   target="binary", mapping={0: 0, 1: 0, 2: 1, 3: 1})
    url = f"/api/v1/transformers/{transformer.pk}/"
    body = {"source": "binary", "target": "graded", "mapping": {"0": 0, "1": 3}}
    for user in (personas.lead, personas.grader):
        client = client_for(user)
        for response in (client.get("/api/v1/transformers/"), client.get(url),
                         client.post("/api/v1/transformers/", body, format="json"),
                         client.patch(url, {"mapping": {"0": 1, "1": 1, "2": 1, "3": 1}},
                                      format="json"),
                         client.delete(url)):
            assert response.status_code == 403
    outsider = client_for(personas.outsider)
    for response in (outsider.get(url), outsider.delete(url),
                     outsider.patch(url, {"mapping": {"0": 1, "1": 1, "2": 1, "3": 1}},
                                    format="json"),
                     outsider.post("/api/v1/transformers/", {**body, "team": personas.team.pk},
                                   format="json")):
        assert response.status_code == 404
    assert client_for(personas.admin).put(url, body, format="json").status_code == 405
    assert list(Transformer.objects.values_list("team_id", "mapping")) == [
        (personas.team.pk, {"0": 0, "1": 0, "2": 1, "3": 1})]


def test_the_schema_documents_scales_and_transformers(client):
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    operations = {operation["operationId"]: method
                  for path in ("/api/v1/scales/", "/api/v1/scales/{scale_id}/",
                               "/api/v1/transformers/", "/api/v1/transformers/{transformer_id}/")
                  for method, operation in schema["paths"][path].items()
                  if isinstance(operation, dict) and "operationId" in operation}
    assert operations == {
        "scales_list": "get", "scales_create": "post", "scales_retrieve": "get",
        "scales_partial_update": "patch", "scales_destroy": "delete",
        "transformers_list": "get", "transformers_create": "post",
        "transformers_retrieve": "get", "transformers_partial_update": "patch",
        "transformers_destroy": "delete",
    }
    create = schema["paths"]["/api/v1/transformers/"]["post"]["responses"]
    assert {"200", "201", "400", "403", "404"} <= set(create)
