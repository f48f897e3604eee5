"""One keyword rule for the form, the upload and the API, on create and update: whitespace
normalised, zero-width characters dropped, control characters refused naming the line, an
empty list refused."""

import unicodedata

import pytest
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import SimpleUploadedFile
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rest_framework.test import APIClient

from evaluations.models import Evaluation, Keyword
from evaluations.services import keywords as keyword_services
from tests.evaluations.factories import EvaluationFactory, KeywordFactory, SearchModelFactory
from tests.property_depth import examples

pytestmark = pytest.mark.django_db

ZERO_WIDTH = "\u200b\u200c\u200d\u2060\ufeff"


def api_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def api_payload(model, keywords) -> dict:
    return {"name": "Spring", "model": model.pk, "scale": "graded", "strategy": 1,
            "keywords": keywords, "metrics": [{"code": "ndcg", "k": 10}]}


def form_post(model, **fields) -> dict:
    return {"name": "Spring", "description": "", "model": model.pk, "keywords": "",
            "scale": "graded", "strategy": "1", "metrics": "ndcg@10", "transformers": "",
            "tags": "", "guidelines": "", "reuse_grades": "none", **fields}


def stored(evaluation) -> list[str]:
    return list(evaluation.keywords.order_by("position").values_list("text", flat=True))


# --- the rule ------------------------------------------------------------------------------


def test_keywords_are_stored_with_whitespace_collapsed_and_zero_width_characters_dropped():
    cleaned = keyword_services.keywords_clean([
        "  red\tshoes  ", "blue\r\nhat", "gr\u200been\ufeff scarf", "red  shoes",
        "\u200b", "cafe\u0301"])
    assert cleaned.keywords == ["red shoes", "blue hat", "green scarf", "caf\u00e9"]
    assert (cleaned.duplicate_count, cleaned.blank_count) == (1, 1)


def test_control_characters_are_refused_naming_each_line():
    with pytest.raises(ValidationError) as raised:
        keyword_services.keywords_clean(["fine", "bell\x07", "ok", "\x1b[2Jclear", "nel\x85"])
    assert raised.value.message_dict == {"keywords": [
        "line 2: control character U+0007 at column 5",
        "line 4: control character U+001B at column 1",
        "line 5: control character U+0085 at column 4"]}


# --- the API -------------------------------------------------------------------------------


@pytest.mark.parametrize("keywords", [["\r\n"], [], ["", "  ", ZERO_WIDTH]])
def test_the_api_refuses_an_evaluation_without_keywords(personas, keywords):
    model = SearchModelFactory(endpoint__team=personas.team)
    response = api_for(personas.lead).post("/api/v1/evaluations/", api_payload(model, keywords),
                                           format="json")
    assert response.status_code == 400
    assert response.json() == {"keywords": ["Add at least one keyword."]}
    assert not Evaluation.objects.exists()


def test_the_api_refuses_control_characters_naming_the_line(personas):
    model = SearchModelFactory(endpoint__team=personas.team)
    response = api_for(personas.lead).post(
        "/api/v1/evaluations/", api_payload(model, ["boots", "\x07\x1b[2J"]), format="json")
    assert response.status_code == 400
    assert response.json() == {"keywords": ["line 2: control character U+0007 at column 1"]}
    assert not Evaluation.objects.exists()


def test_the_api_stores_keywords_normalised(personas):
    model = SearchModelFactory(endpoint__team=personas.team)
    response = api_for(personas.lead).post(
        "/api/v1/evaluations/", api_payload(model, ["red\nshoes", "blue\u200b hat", "Red Shoes"]),
        format="json")
    assert response.status_code == 201, response.json()
    assert stored(Evaluation.objects.get()) == ["red shoes", "blue hat"]


def test_an_api_update_follows_the_same_rule_and_keeps_the_keywords_on_refusal(personas):
    evaluation = EvaluationFactory(model__endpoint__team=personas.team)
    KeywordFactory(evaluation=evaluation, text="boots", position=1)
    url = f"/api/v1/evaluations/{evaluation.pk}/"
    lead = api_for(personas.lead)
    response = lead.patch(url, {"keywords": ["\r\n"]}, format="json")
    assert response.status_code == 400
    assert response.json() == {"keywords": ["Add at least one keyword."]}
    response = lead.patch(url, {"keywords": ["boots", "hat\x1b"], "name": "Renamed"},
                          format="json")
    assert response.status_code == 400
    assert response.json() == {"keywords": ["line 2: control character U+001B at column 4"]}
    evaluation.refresh_from_db()
    assert stored(evaluation) == ["boots"] and evaluation.name != "Renamed"
    response = lead.patch(url, {"keywords": ["boots", "wool\t\tscarf"]}, format="json")
    assert response.status_code == 200, response.json()
    assert stored(evaluation) == ["boots", "wool scarf"]


# --- the pages -----------------------------------------------------------------------------


def test_the_form_refuses_control_characters_naming_the_typed_line(client, personas):
    model = SearchModelFactory(endpoint__team=personas.team)
    client.force_login(personas.lead)
    response = client.post("/evaluations/new/", form_post(
        model, keywords="\r\n  boots\r\nhat\x07\r\n"))
    assert response.status_code == 400
    assert response.context["form"].errors["keywords"] == [
        "line 3: control character U+0007 at column 4"]
    assert not Evaluation.objects.exists()


def test_the_form_refuses_an_empty_keyword_list(client, personas):
    model = SearchModelFactory(endpoint__team=personas.team)
    client.force_login(personas.lead)
    response = client.post("/evaluations/new/", form_post(model, keywords=" \r\n\u200b\r\n"))
    assert response.status_code == 400
    assert response.context["form"].errors["keywords"] == ["Add at least one keyword."]
    assert not Evaluation.objects.exists()


def test_an_upload_with_control_characters_names_its_lines(client, personas):
    model = SearchModelFactory(endpoint__team=personas.team)
    client.force_login(personas.lead)
    upload = SimpleUploadedFile("k.csv", b'keyword\nboots\n"two\nlines\x1b",x\nhat\x00\n')
    response = client.post("/evaluations/new/", form_post(model, keywords_file=upload))
    assert response.status_code == 400
    assert response.context["form"].errors["keywords_file"] == [
        "Read as SearchTweak CSV (a .csv file with the header keyword).",
        "line 3: control character U+001B at column 10",
        "line 5: control character U+0000 at column 4"]
    assert not Evaluation.objects.exists()


def test_the_form_and_upload_store_keywords_normalised(client, personas):
    model = SearchModelFactory(endpoint__team=personas.team)
    client.force_login(personas.lead)
    upload = SimpleUploadedFile("k.csv", 'keyword\n"wool\nscarf"\ngreen\u200d  hat\n'.encode())
    response = client.post("/evaluations/new/", form_post(
        model, keywords="red\tshoes\r\nRED SHOES", keywords_file=upload))
    assert response.status_code == 302
    assert stored(Evaluation.objects.get()) == ["red shoes", "wool scarf", "green hat"]


def test_the_edit_form_refuses_emptying_a_pending_evaluation(client, personas):
    evaluation = EvaluationFactory(model__endpoint__team=personas.team)
    KeywordFactory(evaluation=evaluation, text="boots", position=1)
    client.force_login(personas.lead)
    response = client.post(f"/evaluations/{evaluation.pk}/edit/", form_post(
        evaluation.model, keywords="\r\n"))
    assert response.status_code == 400
    assert response.context["form"].errors["keywords"] == ["Add at least one keyword."]
    assert stored(evaluation) == ["boots"]


# --- any input -----------------------------------------------------------------------------

keyword_text = st.one_of(
    st.text(st.characters(codec="utf-8"), max_size=30),
    st.text(st.sampled_from("ab \t\r\n\x07\x1b\x85\x00" + ZERO_WIDTH), max_size=12),
    st.builds(lambda char, count: char * count, st.sampled_from("xé \u200b"),
              st.sampled_from([499, 500, 501, 100_000])),
)


def expected_keywords(lines: list[str]) -> list[str] | None:
    """The module docstring's rule, written out: the stored list, or None for a 400."""
    # The API's list items are CharFields, which trim what str.strip() calls whitespace
    # (U+0085 and U+001C..U+001F among it) before the rule sees them.
    lines = [line.strip() for line in lines]
    if any(unicodedata.category(char) == "Cc" and char not in "\t\n\r\x0b\x0c"
           for line in lines for char in line):
        return None
    if any(len(line.strip()) > 500 for line in lines):  # the API's own length check
        return None
    kept: list[str] = []
    for line in lines:
        text = " ".join(unicodedata.normalize("NFC", line).translate(
            dict.fromkeys(map(ord, ZERO_WIDTH))).split())
        if text and text.casefold() not in {k.casefold() for k in kept}:
            kept.append(text)
    if not kept or any(len(text) > 500 for text in kept):
        return None
    return kept


@given(keywords=st.lists(keyword_text, max_size=6))
@settings(max_examples=examples(60), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_any_keyword_list_gives_a_clean_evaluation_or_a_400_naming_keywords(
        personas, keywords):
    model = SearchModelFactory(endpoint__team=personas.team)
    before = (Evaluation.objects.count(), Keyword.objects.count())
    response = api_for(personas.lead).post("/api/v1/evaluations/",
                                           api_payload(model, keywords), format="json")
    expected = expected_keywords(keywords)
    if response.status_code == 400:
        assert expected is None, (keywords, response.json())
        assert all(field.split(".")[0] == "keywords" for field in response.json()), \
            response.json()
        assert (Evaluation.objects.count(), Keyword.objects.count()) == before
        return
    assert response.status_code == 201, response.content
    texts = stored(Evaluation.objects.get(pk=response.json()["id"]))
    assert texts == expected
    for text in texts:
        assert text == " ".join(text.split()) and 0 < len(text) <= 500
        assert not any(char in ZERO_WIDTH for char in text)
        assert not any(unicodedata.category(char) == "Cc" for char in text)
        assert text == unicodedata.normalize("NFC", text)
    assert len({text.casefold() for text in texts}) == len(texts)
