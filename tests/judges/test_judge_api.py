"""The judges API (/api/v1/judges/): the key goes in and never comes out, 400s name the
field, leads list without configuration, graders 403, other teams 404, and Test against
real local model servers."""

import json

import pytest
from rest_framework.test import APIClient

from judges import services
from judges.models import Judge, JudgeCall
from judges.secrets import decrypt_api_key
from searchtweak.models import User
from tests.judges.fake_providers import ANTHROPIC, OPENAI, answer, fake_provider, grade_all

pytestmark = pytest.mark.django_db

KEY = "sk-api-secret-31415926535"
JUDGE = {"name": "GPT grader", "provider": "openai", "model": "gpt-4o-mini", "api_key": KEY,
         "batch_size": 8, "parameters": {"temperature": 0}, "tags": ["DE"],
         "price_in_per_million": "0.15"}


def client_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def judge_of(team, **fields) -> Judge:
    values = {"name": "GPT grader", "provider": "openai", "model": "gpt-4o-mini",
              "api_key": KEY, **fields}
    return services.judge_create(team=team, by=None, **values)


def test_an_admin_creates_a_judge_and_the_key_never_comes_back(personas):
    client = client_for(personas.admin)
    response = client.post("/api/v1/judges/", JUDGE, format="json")
    assert response.status_code == 201, response.json()
    body = response.json()
    judge = Judge.objects.get()
    assert body["id"] == judge.pk and body["team"] == personas.team.pk
    assert (body["api_key_set"], body["base_url"], body["tags"], body["batch_size"]) == (
        True, "https://api.openai.com/v1", ["de"], 8)
    assert body["price_in_per_million"] == "0.1500"
    assert "api_key" not in body and "api_key_encrypted" not in body
    assert User.objects.get(pk=body["user"]).is_judge
    answers = [response, client.get(f"/api/v1/judges/{judge.pk}/"),
               client.get("/api/v1/judges/"),
               client.patch(f"/api/v1/judges/{judge.pk}/", {"model": "gpt-4.1"}, format="json")]
    for each in answers:
        assert each.status_code in (200, 201)
        text = json.dumps(each.json())
        assert KEY not in text and judge.api_key_encrypted not in text


def test_patch_keeps_the_key_unless_a_new_one_or_clear_is_sent(personas):
    judge = judge_of(personas.team)
    client = client_for(personas.admin)
    url = f"/api/v1/judges/{judge.pk}/"
    assert client.patch(url, {"api_key": "", "name": "Renamed"}, format="json").json()[
        "api_key_set"] is True
    judge.refresh_from_db()
    assert (judge.name, decrypt_api_key(judge.api_key_encrypted)) == ("Renamed", KEY)
    assert client.patch(url, {"clear_api_key": True}, format="json").json()[
        "api_key_set"] is False


@pytest.mark.parametrize(("change", "field", "message"), [
    ({"batch_size": 21}, "batch_size", "Ensure this value is less than or equal to 20."),
    ({"parameters": {"model": "other"}}, "parameters",
     "model parameters may not set model: the judge sets them itself"),
    ({"parameters": [1]}, "parameters", 'must be a JSON object, e.g. {"temperature": 0}'),
    ({"prompt_templates": {"detail": "{{documents}}"}}, "prompt_templates.detail",
     "Detail (detail): the template must contain {{keyword}}"),
    ({"base_url": "localhost:11434"}, "base_url",
     "Enter an http:// or https:// URL (or leave it empty for the provider's own)."),
    ({"provider": "gemini"}, "provider", '"gemini" is not a valid choice.'),
])
def test_a_bad_setting_is_a_400_naming_the_field(personas, change, field, message):
    response = client_for(personas.admin).post("/api/v1/judges/", {**JUDGE, **change},
                                               format="json")
    assert response.status_code == 400
    assert response.json() == {field: [message]}
    assert not Judge.objects.exists()


def test_leads_list_judges_without_their_configuration(personas):
    judge = judge_of(personas.team)
    listed = client_for(personas.lead).get("/api/v1/judges/")
    assert listed.status_code == 200
    (row,) = listed.json()["results"]
    assert row["id"] == judge.pk and row["model"] == "gpt-4o-mini"
    assert not {"base_url", "api_key_set", "prompt_templates", "parameters"} & set(row)
    assert "base_url" in client_for(personas.admin).get("/api/v1/judges/").json()["results"][0]
    assert client_for(personas.lead).get(f"/api/v1/judges/{judge.pk}/").status_code == 403


def test_a_grader_gets_403_and_another_team_404(personas):
    judge = judge_of(personas.team)
    grader, outsider = client_for(personas.grader), client_for(personas.outsider)
    assert grader.get("/api/v1/judges/").status_code == 403
    assert grader.post("/api/v1/judges/", JUDGE, format="json").status_code == 403
    for method in ("get", "patch", "delete"):
        assert getattr(grader, method)(f"/api/v1/judges/{judge.pk}/").status_code == 403
        assert getattr(outsider, method)(f"/api/v1/judges/{judge.pk}/").status_code == 404
    assert outsider.post(f"/api/v1/judges/{judge.pk}/test/", {}, format="json"
                         ).status_code == 404
    assert outsider.get(f"/api/v1/judges/?team={personas.team.pk}").status_code == 404
    # The outsider's own team has no judges: the list is theirs, and empty.
    assert outsider.get("/api/v1/judges/").json()["results"] == []
    assert Judge.objects.get().name == "GPT grader"


def test_delete_removes_an_unused_judge(personas):
    judge = judge_of(personas.team)
    response = client_for(personas.admin).delete(f"/api/v1/judges/{judge.pk}/")
    assert response.status_code == 204
    assert not Judge.objects.exists() and not User.objects.filter(is_judge=True).exists()


@pytest.mark.parametrize("protocol", [OPENAI, ANTHROPIC])
def test_test_returns_the_redacted_request_the_answer_and_every_pair(personas, protocol):
    with fake_provider(protocol, api_key=KEY) as provider:
        provider.then(answer({"grades": [{"id": "a", "grade": 1, "reason": "on topic"}]}))
        judge = judge_of(personas.team, provider=protocol, base_url=provider.base_url)
        response = client_for(personas.admin).post(f"/api/v1/judges/{judge.pk}/test/", {
            "keyword": "chair", "guidelines": "", "scale": "binary",
            "documents": [{"id": "a", "fields": {"title": "Office chair"}},
                          {"id": "b", "fields": {"title": "Desk"}}]}, format="json")
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["accepted"] == [{"id": "a", "grade": 1, "reason": "on topic"}]
    assert body["rejected"] == [{"id": "b", "code": "missing",
                                 "detail": "the answer has no grade for it"}]
    assert body["error"] == "" and json.loads(body["answer"])["grades"][0]["id"] == "a"
    assert body["request"]["method"] == "POST"
    assert "Office chair" in body["prompt"] and "\\\"" not in body["prompt"]
    assert "[redacted]" in json.dumps(body["request"]["headers"])
    assert KEY not in json.dumps(body)
    assert JudgeCall.objects.get().is_test is True


def test_test_names_bad_input_and_sends_nothing(personas):
    with fake_provider(OPENAI, api_key=KEY) as provider:
        provider.default = grade_all()
        judge = judge_of(personas.team, base_url=provider.base_url)
        client = client_for(personas.admin)
        url = f"/api/v1/judges/{judge.pk}/test/"
        no_scale = client.post(url, {"keyword": "chair", "scale": "stars", "documents": [
            {"id": "a", "fields": {}}]}, format="json")
        no_documents = client.post(url, {"keyword": "chair", "scale": "binary",
                                         "documents": []}, format="json")
        twice = client.post(url, {"keyword": "chair", "scale": "binary", "documents": [
            {"id": "a", "fields": {}}, {"id": "a", "fields": {}}]}, format="json")
    assert (no_scale.status_code, no_scale.json()) == (
        400, {"scale": ["The team has no scale 'stars'."]})
    assert no_documents.status_code == 400 and list(no_documents.json()) == ["documents"]
    assert twice.json() == {"documents": ["document id 'a' appears twice in the batch"]}
    assert provider.received == []


def test_the_schema_documents_the_judges_api(client):
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    operations = {operation["operationId"]
                  for path in ("/api/v1/judges/", "/api/v1/judges/{judge_id}/",
                               "/api/v1/judges/{judge_id}/test/")
                  for operation in schema["paths"][path].values()
                  if isinstance(operation, dict) and "operationId" in operation}
    assert operations == {"judges_list", "judges_create", "judges_retrieve",
                          "judges_partial_update", "judges_destroy", "judges_test"}
    output = schema["components"]["schemas"]["JudgeOutput"]["properties"]
    assert "api_key_set" in output and "api_key" not in output
