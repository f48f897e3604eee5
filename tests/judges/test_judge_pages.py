"""Judge administration pages: list for leads, the rest for admins; the key never shown
back; every bad setting named with the database unchanged; the Test action against real
local model servers shows grades, rejections and the redacted request."""

import json

import pytest
from django.urls import reverse
from django.utils.html import escape

from judges import services
from judges.core.prompts import default_template
from judges.models import Judge, JudgeCall
from judges.secrets import decrypt_api_key
from judgments.models import Scale
from judgments.scales import from_model
from metrics_engine.scales import SCALES
from searchtweak.models import User
from tests.judges.fake_providers import ANTHROPIC, OPENAI, answer, fake_provider, status

pytestmark = pytest.mark.django_db

KEY = "sk-page-secret-777777777777"
FORM = {"name": "GPT grader", "provider": "openai", "base_url": "", "model": "gpt-4o-mini",
        "api_key": KEY, "batch_size": "5", "parameters": '{"temperature": 0}',
        "tags": "DE, fashion", "is_active": "on", "timeout_seconds": "30", "max_retries": "2",
        "max_concurrent_requests": "4", "requests_per_minute": "", "price_in_per_million": "0.15",
        "price_out_per_million": "0.60"}
DOCUMENTS = "\n".join([
    '{"id": "d1", "fields": {"title": "Trail running shoes"}}',
    '{"title": "Office chair"}',
])


def login(client, user):
    client.force_login(user)
    return client


def judge_of(team, **fields) -> Judge:
    values = {"name": "GPT grader", "provider": "openai", "model": "gpt-4o-mini",
              "api_key": KEY, **fields}
    return services.judge_create(team=team, by=None, **values)


def errors_of(response) -> dict[str, list[str]]:
    return {field: list(messages) for field, messages in response.context["form"].errors.items()}


def test_an_admin_creates_a_judge_and_the_key_is_never_shown_back(client, personas):
    response = login(client, personas.admin).post(reverse("judges:judge_create"), FORM)
    judge = Judge.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("judges:judge_test", args=[judge.pk])
    assert (judge.tags, judge.parameters, str(judge.price_out_per_million)) == (
        ["de", "fashion"], {"temperature": 0}, "0.6000")
    assert decrypt_api_key(judge.api_key_encrypted) == KEY
    assert User.objects.get(pk=judge.user_id).is_judge
    edit = client.get(reverse("judges:judge_edit", args=[judge.pk]))
    html = edit.content.decode()
    assert edit.status_code == 200
    assert KEY not in html and judge.api_key_encrypted not in html
    assert 'placeholder="A key is set: leave empty to keep it"' in html
    assert KEY not in client.get(reverse("judges:judge_list")).content.decode()


def test_the_new_form_prefills_each_scale_with_the_shipped_prompt(client, personas):
    Scale.objects.create(team=personas.team, code="stars", name="Stars", lo=1, hi=5, labels={})
    html = login(client, personas.admin).get(reverse("judges:judge_create")).content.decode()
    for code in ("binary", "graded", "detail", "stars"):
        assert f'name="prompt_templates_{code}"' in html
    # The team's own scale gets the shipped template for custom scales.
    assert "Prompt for Stars (1..5)" in html
    custom = default_template(from_model(Scale.objects.get()).scale).splitlines()
    builtin = {line for code in SCALES for line in default_template(SCALES[code]).splitlines()}
    own_lines = [line for line in custom if line.strip() and line not in builtin]
    assert own_lines and all(escape(line) in html for line in own_lines)
    assert escape(default_template(SCALES["detail"]).splitlines()[0]) in html
    assert 'placeholder="No key set"' in html


def test_saving_with_an_empty_key_keeps_the_stored_one(client, personas):
    judge = judge_of(personas.team)
    form = {**FORM, "name": "Renamed", "api_key": "",
            **{f"prompt_templates_{code}": "" for code in SCALES}}
    response = login(client, personas.admin).post(reverse("judges:judge_edit", args=[judge.pk]),
                                                  form)
    assert response.status_code == 302
    judge.refresh_from_db()
    assert (judge.name, decrypt_api_key(judge.api_key_encrypted)) == ("Renamed", KEY)


def test_bad_parameters_name_their_line_and_store_nothing(client, personas):
    response = login(client, personas.admin).post(reverse("judges:judge_create"), {
        **FORM, "parameters": '{\n  "temperature": 0\n  "top_p": 1\n}'})
    assert response.status_code == 400
    assert errors_of(response) == {"parameters": [
        "Not valid JSON at line 3, column 3: Expecting ',' delimiter."]}
    assert not Judge.objects.exists() and not User.objects.filter(is_judge=True).exists()


def test_service_errors_land_on_their_fields(client, personas):
    response = login(client, personas.admin).post(reverse("judges:judge_create"), {
        **FORM, "parameters": '{"messages": []}', "base_url": "not a url",
        "prompt_templates_graded": "Grade {{documents}}"})
    assert response.status_code == 400
    errors = errors_of(response)
    assert errors["parameters"] == [
        "model parameters may not set messages: the judge sets them itself"]
    assert errors["base_url"][0].startswith("Enter an http:// or https:// URL")
    assert errors["prompt_templates_graded"] == [
        f"{SCALES['graded'].name} (graded): the template must contain {{{{keyword}}}}"]
    assert not Judge.objects.exists()


def test_batch_size_above_20_is_refused(client, personas):
    response = login(client, personas.admin).post(reverse("judges:judge_create"),
                                                  {**FORM, "batch_size": "21"})
    assert response.status_code == 400
    assert list(errors_of(response)) == ["batch_size"]


def test_a_lead_reads_the_list_without_admin_links_and_a_grader_gets_403(client, personas):
    judge = judge_of(personas.team, tags=["de"])
    html = login(client, personas.lead).get(reverse("judges:judge_list")).content.decode()
    assert "GPT grader" in html and "gpt-4o-mini" in html and "shadow only" in html
    assert f'href="{reverse("judges:judge_edit", args=[judge.pk])}"' not in html
    # What a lead may read: the judge's calibration and its calls.
    assert f'href="{reverse("judges:calibration", args=[judge.pk])}"' in html
    assert f'href="{reverse("judges:judge_calls", args=[judge.pk])}"' in html
    assert 'href="/judges/"' in html  # the nav's link
    for name in ("judges:judge_edit", "judges:judge_test", "judges:judge_delete"):
        assert client.get(reverse(name, args=[judge.pk])).status_code == 403
    grader = login(client, personas.grader)
    response = grader.get(reverse("judges:judge_list"))
    assert response.status_code == 403
    assert 'href="/judges/"' not in grader.get("/").content.decode()


def test_another_teams_judge_is_not_there(client, personas):
    judge = judge_of(personas.team)
    client = login(client, personas.outsider)
    for name in ("judges:judge_edit", "judges:judge_test", "judges:judge_delete"):
        assert client.get(reverse(name, args=[judge.pk])).status_code == 404
        assert client.post(reverse(name, args=[judge.pk]), {**FORM}).status_code == 404
    assert Judge.objects.get().name == "GPT grader"


def test_the_list_takes_only_get(client, personas):
    response = login(client, personas.admin).post(reverse("judges:judge_list"))
    assert response.status_code == 405


def test_delete_asks_first_then_deletes_an_unused_judge(client, personas):
    judge = judge_of(personas.team)
    client = login(client, personas.admin)
    confirm = client.get(reverse("judges:judge_delete", args=[judge.pk])).content.decode()
    assert "It has no runs and no grades." in confirm and "Delete judge" in confirm
    assert Judge.objects.exists()
    response = client.post(reverse("judges:judge_delete", args=[judge.pk]))
    assert response["Location"] == reverse("judges:judge_list")
    assert not Judge.objects.exists()


# --- the Test action ---------------------------------------------------------------------


@pytest.mark.parametrize("protocol", [OPENAI, ANTHROPIC])
def test_the_test_action_shows_grades_and_the_request_without_the_key(client, personas,
                                                                     protocol):
    with fake_provider(protocol, api_key=KEY) as provider:
        provider.then(answer({"grades": [
            {"id": "d1", "grade": 3, "reason": "a running shoe"},
            {"id": "d2", "grade": 7, "reason": "off the scale"}]}))
        judge = judge_of(personas.team, provider=protocol, base_url=provider.base_url)
        response = login(client, personas.admin).post(
            reverse("judges:judge_test", args=[judge.pk]),
            {"keyword": "running shoes", "guidelines": "Shoes for running.", "scale": "graded",
             "documents": DOCUMENTS})
    html = response.content.decode()
    assert response.status_code == 200, errors_of(response)
    outcome = response.context["outcome"]
    assert [(pair.id, pair.grade, pair.reason) for pair in outcome.accepted] == [
        ("d1", 3, "a running shoe")]
    assert [(pair.id, pair.code) for pair in outcome.rejected] == [("d2", "out_of_scale")]
    assert "a running shoe" in html and "rejected: out_of_scale" in html
    assert "grade 7 is outside 0..3" in html
    assert KEY not in html
    assert "[redacted]" in html and "Trail running shoes" in html
    assert "Shoes for running." in outcome.prompt and "Office chair" in outcome.prompt
    assert json.loads(response.context["request_json"])["url"].startswith(provider.base_url)
    # It reached the model with the key, once, and is logged as a test call.
    assert len(provider.received) == 1
    assert list(JudgeCall.objects.values_list("is_test", "run_id")) == [(True, None)]


def test_the_test_action_shows_the_providers_error(client, personas):
    with fake_provider(OPENAI, api_key=KEY) as provider:
        provider.then(status(401, "Incorrect API key provided"))
        judge = judge_of(personas.team, base_url=provider.base_url)
        response = login(client, personas.admin).post(
            reverse("judges:judge_test", args=[judge.pk]),
            {"keyword": "chair", "scale": "binary", "documents": '{"title": "Office chair"}'})
    html = response.content.decode()
    assert response.status_code == 200
    assert "HTTP 401: Incorrect API key provided" in html
    assert KEY not in html
    assert len(provider.received) == 1  # one attempt: the page waits for it


def test_the_test_form_names_a_bad_document_line_and_sends_nothing(client, personas):
    with fake_provider(OPENAI, api_key=KEY) as provider:
        judge = judge_of(personas.team, base_url=provider.base_url)
        client = login(client, personas.admin)
        url = reverse("judges:judge_test", args=[judge.pk])
        bad_json = client.post(url, {"keyword": "chair", "scale": "graded",
                                     "documents": '{"title": "a"}\n{"title": b}'})
        too_many = client.post(url, {"keyword": "chair", "scale": "graded",
                                     "documents": "\n".join(['{"t": 1}'] * 6)})
        twice = client.post(url, {"keyword": "chair", "scale": "graded",
                                  "documents": '{"id": "x", "t": 1}\n{"id": "x", "t": 2}'})
    assert bad_json.status_code == too_many.status_code == twice.status_code == 400
    assert errors_of(bad_json)["documents"] == [
        "Line 2: not valid JSON at column 11: Expecting value."]
    assert errors_of(too_many)["documents"] == [
        "Give 1 to 5 documents, one a line (6 given)."]
    assert errors_of(twice)["documents"] == ["document id 'x' appears twice in the batch"]
    assert provider.received == [] and not JudgeCall.objects.exists()
