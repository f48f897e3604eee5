"""Weights and tags through real requests: the evaluation and query set pages (typed lines,
uploads, the lists that show them) and the API (plain strings and objects, keywords_text),
every refusal naming the line and field with nothing stored."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from evaluations.models import Evaluation, Keyword, KeywordSet, QuerySetKeyword
from evaluations.query_sets import services as query_set_services
from evaluations.query_sets.services import version_entries
from evaluations.services.keywords import KeywordEntry
from tests.evaluations.factories import SearchModelFactory

pytestmark = pytest.mark.django_db

E = KeywordEntry


def api_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def entries_of(evaluation) -> list[tuple[str, int, list[str]]]:
    return list(evaluation.keywords.order_by("position").values_list("text", "weight", "tags"))


def counts() -> tuple[int, int, int, int]:
    return (Evaluation.objects.count(), Keyword.objects.count(), KeywordSet.objects.count(),
            QuerySetKeyword.objects.count())


def evaluation_post(model, **fields) -> dict:
    return {"name": "Spring", "description": "", "model": model.pk, "keywords": "",
            "scale": "graded", "strategy": "1", "metrics": "ndcg@10", "transformers": "",
            "tags": "", "guidelines": "", "reuse_grades": "none", **fields}


# --- the evaluation pages ------------------------------------------------------------------


def test_the_evaluation_form_stores_typed_and_uploaded_weights_and_tags(client, personas):
    model = SearchModelFactory(endpoint__team=personas.team)
    client.force_login(personas.lead)
    upload = SimpleUploadedFile("k.csv", b"keyword,weight,tags\nscarf,7,Lang:DE\n")
    response = client.post("/evaluations/new/", evaluation_post(
        model, keywords='running shoes,1200,head|lang:en\r\n"red, white shoes",40\r\nhat',
        keywords_file=upload))
    assert response.status_code == 302
    evaluation = Evaluation.objects.get()
    assert entries_of(evaluation) == [("running shoes", 1200, ["head", "lang:en"]),
                                      ("red, white shoes", 40, []), ("hat", 1, []),
                                      ("scarf", 7, ["lang:de"])]

    page = client.get(f"/evaluations/{evaluation.pk}/").content.decode()
    assert '<td class="num">1200</td>' in page
    assert ('<div class="keyword-tags" data-testid="keyword-tags"><span class="badge">head'
            '</span><span class="badge">lang:en</span></div>') in page
    # The edit page gives the lines back as they read again.
    edit = client.get(f"/evaluations/{evaluation.pk}/edit/")
    assert edit.context["form"].initial["keywords"] == (
        'running shoes,1200,head|lang:en\n"red, white shoes",40\nhat\nscarf,7,lang:de')


def test_the_evaluation_form_names_the_line_and_field_and_stores_nothing(client, personas):
    model = SearchModelFactory(endpoint__team=personas.team)
    client.force_login(personas.lead)
    upload = SimpleUploadedFile("k.csv", b"boots,1\nhat,2.5\n")
    response = client.post("/evaluations/new/", evaluation_post(
        model, keywords="ok\r\nboots,-1\r\nscarf,1," + "|".join(f"t{n}" for n in range(21)),
        keywords_file=upload))
    assert response.status_code == 400
    errors = response.context["form"].errors
    assert errors["keywords"] == ["line 2: weight: '-1' is not a non-negative integer",
                                  "line 3: tags: 21 tags; a keyword has at most 20"]
    assert errors["keywords_file"] == [
        "Read as SearchTweak CSV (a .csv file without a header: rows keyword,weight,tags).",
        "line 2: weight: '2.5' is not a non-negative integer"]
    assert counts() == (0, 0, 0, 0)


def test_the_edit_page_changes_a_pending_evaluations_weights(client, personas):
    model = SearchModelFactory(endpoint__team=personas.team)
    client.force_login(personas.lead)
    client.post("/evaluations/new/", evaluation_post(model, keywords="boots,3\r\nhat"))
    evaluation = Evaluation.objects.get()
    response = client.post(f"/evaluations/{evaluation.pk}/edit/", evaluation_post(
        model, keywords="boots,4,x\r\nhat"))
    assert response.status_code == 302
    assert entries_of(evaluation) == [("boots", 4, ["x"]), ("hat", 1, [])]


# --- the query set pages -------------------------------------------------------------------


def test_the_query_set_pages_take_show_and_version_weights_and_tags(client, personas):
    client.force_login(personas.lead)
    response = client.post("/query-sets/new/", {
        "name": "Shoes", "description": "", "keywords": "boots,30,lang:en\r\nhat,5"})
    query_set = KeywordSet.objects.get()
    assert response.status_code == 302
    assert version_entries(query_set.current_version()) == [E("boots", 30, ("lang:en",)),
                                                            E("hat", 5)]
    page = client.get(f"/query-sets/{query_set.pk}/").content.decode()
    assert '<td class="num">30</td>' in page and '<span class="badge">lang:en</span>' in page

    edit = client.get(f"/query-sets/{query_set.pk}/edit/")
    assert edit.context["form"].initial["keywords"] == "boots,30,lang:en\nhat,5"
    post = {"name": "Shoes", "description": "", "keywords": "boots,30,lang:en\r\nhat,6"}
    client.post(f"/query-sets/{query_set.pk}/edit/", post)
    assert query_set.versions.count() == 2
    assert version_entries(query_set.current_version())[1] == E("hat", 6)
    client.post(f"/query-sets/{query_set.pk}/edit/", post)  # unchanged: no version
    assert query_set.versions.count() == 2

    before = counts()
    response = client.post(f"/query-sets/{query_set.pk}/edit/", {
        **post, "keywords": "boots,30,lang:en\r\nhat,x"})
    assert response.status_code == 400
    assert response.context["form"].errors["keywords"] == [
        "line 2: weight: 'x' is not a non-negative integer"]
    assert counts() == before


# --- the API -------------------------------------------------------------------------------


def evaluation_payload(model) -> dict:
    return {"name": "Spring", "model": model.pk, "scale": "graded", "strategy": 1,
            "metrics": [{"code": "ndcg", "k": 10}]}


def test_the_evaluation_api_takes_strings_and_objects(personas):
    model = SearchModelFactory(endpoint__team=personas.team)
    api = api_for(personas.lead)
    response = api.post("/api/v1/evaluations/", {**evaluation_payload(model), "keywords": [
        "boots", {"keyword": "hat", "weight": 12, "tags": ["Lang:EN", "intent:broad"]},
        {"keyword": "scarf"}]}, format="json")
    assert response.status_code == 201, response.json()
    evaluation = Evaluation.objects.get()
    assert entries_of(evaluation) == [("boots", 1, []),
                                      ("hat", 12, ["intent:broad", "lang:en"]),
                                      ("scarf", 1, [])]
    listed = api.get(f"/api/v1/evaluations/{evaluation.pk}/keywords/").json()["results"]
    assert [(k["text"], k["weight"], k["tags"]) for k in listed] == [
        ("boots", 1, []), ("hat", 12, ["intent:broad", "lang:en"]), ("scarf", 1, [])]


@pytest.mark.parametrize(("keywords", "message"), [
    (["ok", {"keyword": "a", "weight": -1}],
     ["line 2: weight: -1 is not a non-negative integer"]),
    (["ok", {"keyword": "a", "weight": 1.5}],
     ["line 2: weight: 1.5 is not a non-negative integer"]),
    (["ok", {"keyword": "a", "weight": "7"}],
     ["line 2: weight: '7' is not a non-negative integer"]),
    ([{"keyword": "a", "tags": ["x" * 51]}],
     ["line 1: tags: 'xxxxxxxxxxxxxxxxxxxx'… is longer than 50 characters (51)"]),
    ([{"keyword": "a\x07"}], ["line 1: control character U+0007 at column 2"]),
    ([{"weight": 3}], {"0": ["keyword: a string of at most 500 characters is required."]}),
    ([{"keyword": "a", "weigth": 3}],
     {"0": ["Unknown keys: weigth (a keyword object has keyword, weight and tags)."]}),
    ([7], {"0": ['A keyword is a string or an object {"keyword", "weight", "tags"}.']}),
])
def test_the_evaluation_api_answers_400_naming_the_item_and_field(personas, keywords,
                                                                  message):
    model = SearchModelFactory(endpoint__team=personas.team)
    response = api_for(personas.lead).post(
        "/api/v1/evaluations/", {**evaluation_payload(model), "keywords": keywords},
        format="json")
    assert response.status_code == 400
    assert response.json() == {"keywords": message}
    assert counts() == (0, 0, 0, 0)


def test_the_query_set_api_takes_objects_and_csv_text_and_lists_them(personas):
    api = api_for(personas.lead)
    response = api.post("/api/v1/query-sets/", {"name": "Shoes", "keywords": [
        {"keyword": "boots", "weight": 30, "tags": ["lang:en"]}, "hat"]}, format="json")
    assert response.status_code == 201, response.json()
    set_id = response.json()["id"]
    listed = api.get(f"/api/v1/query-sets/{set_id}/versions/1/keywords/").json()["results"]
    assert listed == [{"position": 1, "text": "boots", "weight": 30, "tags": ["lang:en"]},
                      {"position": 2, "text": "hat", "weight": 1, "tags": []}]

    url = f"/api/v1/query-sets/{set_id}/versions/"
    response = api.post(url, {"keywords_text": "boots,30,lang:en\nhat,2"}, format="json")
    assert (response.status_code, response.json()["number"]) == (201, 2)
    response = api.post(url, {"keywords": [{"keyword": "boots", "weight": 30,
                                            "tags": ["LANG:EN"]}, {"keyword": "hat",
                                                                   "weight": 2.0}]},
                        format="json")
    assert (response.status_code, response.json()["created"]) == (200, False)

    before = counts()
    response = api.post(url, {"keywords_text": "boots\nhat,-4"}, format="json")
    assert response.status_code == 400
    assert response.json() == {"keywords_text": [
        "line 2: weight: '-4' is not a non-negative integer"]}
    response = api.post("/api/v1/query-sets/", {"name": "Other", "keywords": [
        {"keyword": "a", "tags": [f"t{n}" for n in range(21)]}]}, format="json")
    assert response.json() == {"keywords": ["line 1: tags: 21 tags; a keyword has at most 20"]}
    assert counts() == before


def test_an_evaluation_created_from_a_set_through_the_api_keeps_them(personas):
    model = SearchModelFactory(endpoint__team=personas.team)
    query_set = query_set_services.query_set_create(
        team=personas.team, created_by=personas.lead, name="Shoes",
        keywords=[E("boots", 30, ("lang:en",)), E("hat", 0)])
    response = api_for(personas.lead).post(
        "/api/v1/evaluations/", {**evaluation_payload(model), "query_set": query_set.pk},
        format="json")
    assert response.status_code == 201
    assert entries_of(Evaluation.objects.get()) == [("boots", 30, ["lang:en"]), ("hat", 0, [])]
