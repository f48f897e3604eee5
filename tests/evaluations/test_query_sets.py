"""Query sets: a team's named, versioned keyword lists; evaluations created from
them record the version they ran. Services, pages and API."""

import pytest
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db.models import ProtectedError
from rest_framework.test import APIClient

from evaluations.models import Evaluation, KeywordSet, QuerySetKeyword, QuerySetVersion
from evaluations.query_sets import services as query_set_services
from evaluations.query_sets.selectors import version_diff
from evaluations.query_sets.services import version_keywords
from evaluations.services import configuration
from tests.evaluations.factories import EvaluationFactory, KeywordFactory, SearchModelFactory

pytestmark = pytest.mark.django_db


def api_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def errors(excinfo) -> dict:
    return excinfo.value.message_dict


def make_set(personas, name="Shoes", keywords=("boots", "sandals", "heels")) -> KeywordSet:
    return query_set_services.query_set_create(
        team=personas.team, created_by=personas.lead, name=name, keywords=list(keywords))


def evaluation_fields(personas, model) -> dict:
    return {"team": personas.team, "created_by": personas.lead, "model": model,
            "name": "Spring", "scale": "graded", "strategy": 1,
            "metrics": [{"code": "ndcg", "k": 10, "params": {}}]}


def stored(evaluation) -> list[str]:
    return list(evaluation.keywords.order_by("position").values_list("text", flat=True))


def counts() -> tuple[int, int, int, int]:
    return (KeywordSet.objects.count(), QuerySetVersion.objects.count(),
            QuerySetKeyword.objects.count(), Evaluation.objects.count())


# --- services ------------------------------------------------------------------------------


def test_it_creates_version_1_with_the_cleaned_keywords_in_order(personas):
    query_set = make_set(personas, keywords=["  red\tshoes", "", "Boots", "RED SHOES", "hat"])
    version = query_set.current_version()
    assert (version.number, version.keyword_count) == (1, 3)
    assert version_keywords(version) == ["red shoes", "Boots", "hat"]
    assert list(version.keywords.values_list("position", "normalized_text")) == [
        (1, "red shoes"), (2, "boots"), (3, "hat")]
    assert query_set.created_by == personas.lead


@pytest.mark.parametrize("keywords", [[], ["", "  ", "\u200b"]])
def test_it_refuses_a_set_of_no_keywords_on_keywords_and_saves_nothing(personas, keywords):
    with pytest.raises(ValidationError) as excinfo:
        make_set(personas, keywords=keywords)
    assert errors(excinfo) == {"keywords": ["Add at least one keyword."]}
    assert counts() == (0, 0, 0, 0)


def test_it_refuses_more_keywords_than_the_limit(personas, settings):
    settings.MAX_KEYWORDS = 2
    with pytest.raises(ValidationError) as excinfo:
        make_set(personas, keywords=["a", "b", "c"])
    assert errors(excinfo) == {"keywords": ["At most 2 keywords (3 given)."]}
    assert counts() == (0, 0, 0, 0)


def test_it_refuses_a_name_the_team_uses_ignoring_case(personas):
    make_set(personas, name="Shoes")
    with pytest.raises(ValidationError) as excinfo:
        make_set(personas, name="  shoes ", keywords=["x"])
    assert errors(excinfo) == {"name": ["The team has a query set named 'shoes' already."]}
    assert counts() == (1, 1, 3, 0)
    # Another team may use the name.
    query_set_services.query_set_create(team=personas.other_team, created_by=personas.outsider,
                                        name="Shoes", keywords=["x"])


def test_a_changed_list_is_a_new_version_and_the_same_list_is_not(personas):
    query_set = make_set(personas)
    version, created = query_set_services.query_set_version_create(
        query_set=query_set, created_by=personas.admin, keywords=["boots", "clogs"])
    assert created and (version.number, version.keyword_count) == (2, 2)
    assert version.created_by == personas.admin
    assert query_set.current_version() == version
    diff = version_diff(version)
    assert (diff.previous_number, diff.added, diff.removed) == (1, 1, 2)
    assert version_diff(query_set.versions.get(number=1)) is None

    same, created = query_set_services.query_set_version_create(
        query_set=query_set, created_by=personas.lead, keywords=["boots ", "", "clogs"])
    assert not created and same == version
    assert query_set.versions.count() == 2
    # Version 1 is untouched.
    assert version_keywords(query_set.versions.get(number=1)) == ["boots", "sandals", "heels"]


def test_a_new_version_of_no_keywords_is_refused_and_nothing_changes(personas):
    query_set = make_set(personas)
    with pytest.raises(ValidationError) as excinfo:
        query_set_services.query_set_version_create(query_set=query_set, created_by=personas.lead,
                                                    keywords=["\r\n"])
    assert errors(excinfo) == {"keywords": ["Add at least one keyword."]}
    assert counts() == (1, 1, 3, 0)


def test_it_creates_a_set_from_an_evaluations_keywords_in_their_order(personas):
    evaluation = EvaluationFactory(model__endpoint__team=personas.team)
    KeywordFactory(evaluation=evaluation, text="zebra", position=1)
    KeywordFactory(evaluation=evaluation, text="apple", position=2)
    query_set = query_set_services.query_set_create_from_evaluation(
        evaluation=evaluation, created_by=personas.lead, name="From spring")
    assert query_set.team == personas.team
    assert version_keywords(query_set.current_version()) == ["zebra", "apple"]


def test_archive_frees_the_name_and_restore_refuses_when_it_was_taken(personas):
    query_set = make_set(personas)
    query_set_services.query_set_archive(query_set=query_set)
    query_set.refresh_from_db()
    assert query_set.archived_at is not None
    make_set(personas, name="Shoes", keywords=["x"])
    with pytest.raises(ValidationError) as excinfo:
        query_set_services.query_set_restore(query_set=query_set)
    assert errors(excinfo) == {"name": ["The team has a query set named 'Shoes' already."]}
    query_set.refresh_from_db()
    assert query_set.archived_at is not None
    query_set_services.query_set_update(query_set=query_set, name="Old shoes")
    query_set_services.query_set_restore(query_set=query_set)
    query_set.refresh_from_db()
    assert query_set.archived_at is None


def test_an_evaluation_from_a_set_records_its_current_version_and_copies_its_keywords(
        personas):
    model = SearchModelFactory(endpoint__team=personas.team)
    query_set = make_set(personas, keywords=["zebra", "apple", "mango"])
    query_set_services.query_set_version_create(query_set=query_set, created_by=personas.lead,
                                                keywords=["mango", "zebra", "kiwi", "apple"])
    evaluation = query_set_services.evaluation_create_from_query_set(
        query_set=query_set, **evaluation_fields(personas, model))
    assert evaluation.query_set_version.number == 2
    assert stored(evaluation) == ["mango", "zebra", "kiwi", "apple"]
    assert list(evaluation.keywords.order_by("position").values_list("position", flat=True)) \
        == [1, 2, 3, 4]
    # An explicit older version.
    older = query_set_services.evaluation_create_from_query_set(
        query_set=query_set, version=query_set.versions.get(number=1),
        **evaluation_fields(personas, model))
    assert older.query_set_version.number == 1
    assert stored(older) == ["zebra", "apple", "mango"]
    # A version an evaluation ran is not deleted.
    with pytest.raises(ProtectedError):
        query_set.versions.get(number=2).delete()


def test_an_archived_or_foreign_set_gives_no_evaluation(personas):
    model = SearchModelFactory(endpoint__team=personas.team)
    query_set = make_set(personas)
    query_set_services.query_set_archive(query_set=query_set)
    with pytest.raises(ValidationError) as excinfo:
        query_set_services.evaluation_create_from_query_set(query_set=query_set,
                                                            **evaluation_fields(personas, model))
    assert errors(excinfo) == {"query_set": ["Shoes is archived."]}
    foreign = query_set_services.query_set_create(team=personas.other_team, created_by=None,
                                                  name="Theirs", keywords=["x"])
    with pytest.raises(ValidationError) as excinfo:
        query_set_services.evaluation_create_from_query_set(query_set=foreign,
                                                            **evaluation_fields(personas, model))
    assert errors(excinfo) == {"query_set": ["No such query set in this team."]}
    assert Evaluation.objects.count() == 0


def test_saving_typed_keywords_as_a_set_links_the_evaluation_or_writes_nothing(personas):
    model = SearchModelFactory(endpoint__team=personas.team)
    make_set(personas, name="Taken")
    with pytest.raises(ValidationError) as excinfo:
        query_set_services.evaluation_create_saving_query_set(
            query_set_name="taken", keywords=["a", "b"], **evaluation_fields(personas, model))
    assert errors(excinfo) == {
        "save_as_query_set": ["The team has a query set named 'taken' already."]}
    assert counts() == (1, 1, 3, 0)
    evaluation = query_set_services.evaluation_create_saving_query_set(
        query_set_name="Spring list", keywords=["a", "b"], **evaluation_fields(personas, model))
    assert evaluation.query_set_version.query_set.name == "Spring list"
    assert version_keywords(evaluation.query_set_version) == ["a", "b"]


def test_editing_an_evaluations_keywords_forgets_the_version_clone_keeps_it(personas):
    model = SearchModelFactory(endpoint__team=personas.team)
    query_set = make_set(personas, keywords=["a", "b"])
    evaluation = query_set_services.evaluation_create_from_query_set(
        query_set=query_set, **evaluation_fields(personas, model))
    version = evaluation.query_set_version
    clone = configuration.evaluation_clone(evaluation=evaluation, created_by=personas.lead)
    assert clone.query_set_version == version
    configuration.evaluation_update(evaluation=evaluation, keywords=["a", "b"])
    evaluation.refresh_from_db()
    assert evaluation.query_set_version == version  # the same list
    configuration.evaluation_update(evaluation=evaluation, keywords=["a", "b", "c"])
    evaluation.refresh_from_db()
    assert evaluation.query_set_version is None


def test_a_large_version_is_written_in_batches(personas, django_assert_max_num_queries):
    keywords = [f"keyword {n}" for n in range(2500)]
    # Batches of 1,000 rows (SQLite splits them further, to its 999 parameters): a few
    # INSERTs, never one per keyword.
    with django_assert_max_num_queries(30):
        query_set = make_set(personas, keywords=keywords)
    assert query_set.current_version().keyword_count == 2500
    assert QuerySetKeyword.objects.count() == 2500


# --- pages ---------------------------------------------------------------------------------


def test_a_lead_creates_a_set_by_typing_and_by_upload(client, personas):
    client.force_login(personas.lead)
    response = client.post("/query-sets/new/", {
        "name": "Typed", "description": "", "keywords": "boots\r\nhat\r\nBOOTS\r\n"})
    query_set = KeywordSet.objects.get(name="Typed")
    assert response.status_code == 302 and response["Location"] == f"/query-sets/{query_set.pk}/"
    assert version_keywords(query_set.current_version()) == ["boots", "hat"]

    upload = SimpleUploadedFile("k.csv", b"keyword\nscarf\n\"wool, socks\",x\n")
    response = client.post("/query-sets/new/", {"name": "Uploaded", "keywords": "",
                                                "keywords_file": upload})
    assert response.status_code == 302
    assert version_keywords(KeywordSet.objects.get(name="Uploaded").current_version()) == [
        "scarf", "wool, socks"]

    page = client.get(f"/query-sets/{query_set.pk}/")
    assert page.status_code == 200
    assert [k.text for k in page.context["keywords"].object_list] == ["boots", "hat"]
    listing = client.get("/query-sets/")
    assert [q.name for q in listing.context["query_sets"]] == ["Typed", "Uploaded"]
    assert listing.context["query_sets"][0].current_keyword_count == 2


@pytest.mark.parametrize(("fields", "field", "message"), [
    ({"keywords": "\r\n  \r\n"}, "keywords", "Add at least one keyword."),
    ({"keywords": "", "keywords_file": SimpleUploadedFile("k.txt", b"\n\n")}, "keywords_file",
     "The file holds no keywords."),
    ({"keywords": "ok\r\nbad\x07"}, "keywords", "line 2: control character U+0007 at column 4"),
])
def test_the_create_page_names_the_field_and_saves_nothing(client, personas, fields, field,
                                                            message):
    client.force_login(personas.lead)
    response = client.post("/query-sets/new/", {"name": "Empty", **fields})
    assert response.status_code == 400
    assert response.context["form"].errors[field] == [message]
    assert counts() == (0, 0, 0, 0)


def test_the_create_page_names_a_duplicate_name(client, personas):
    make_set(personas)
    client.force_login(personas.lead)
    response = client.post("/query-sets/new/", {"name": "SHOES", "keywords": "x"})
    assert response.status_code == 400
    assert response.context["form"].errors["name"] == [
        "The team has a query set named 'SHOES' already."]
    assert counts() == (1, 1, 3, 0)


def test_the_edit_page_adds_a_version_only_for_a_changed_list(client, personas):
    query_set = make_set(personas)
    client.force_login(personas.lead)
    page = client.get(f"/query-sets/{query_set.pk}/edit/")
    assert page.context["form"].initial["keywords"] == "boots\nsandals\nheels"
    response = client.post(f"/query-sets/{query_set.pk}/edit/", {
        "name": "Shoes", "keywords": "boots\nsandals\nheels"}, follow=True)
    assert "The keywords are unchanged: still version 1." in response.content.decode()
    assert query_set.versions.count() == 1
    response = client.post(f"/query-sets/{query_set.pk}/edit/", {
        "name": "Footwear", "keywords": "boots\nclogs"}, follow=True)
    assert "Saved as version 2 (2 keywords)." in response.content.decode()
    query_set.refresh_from_db()
    assert query_set.name == "Footwear"
    assert response.context["diff"].added == 1 and response.context["diff"].removed == 2


def test_an_edit_to_no_keywords_changes_nothing(client, personas):
    query_set = make_set(personas)
    client.force_login(personas.lead)
    response = client.post(f"/query-sets/{query_set.pk}/edit/", {"name": "Renamed",
                                                                 "keywords": ""})
    assert response.status_code == 400
    assert response.context["form"].errors["keywords"] == ["Add at least one keyword."]
    query_set.refresh_from_db()
    assert query_set.name == "Shoes" and query_set.versions.count() == 1


def test_a_grader_reads_but_may_not_write(client, personas):
    query_set = make_set(personas)
    client.force_login(personas.grader)
    assert client.get("/query-sets/").status_code == 200
    assert client.get(f"/query-sets/{query_set.pk}/").status_code == 200
    assert client.post("/query-sets/new/", {"name": "X", "keywords": "a"}).status_code == 403
    assert client.post(f"/query-sets/{query_set.pk}/edit/",
                       {"name": "X", "keywords": "a"}).status_code == 403
    assert client.post(f"/query-sets/{query_set.pk}/archive/").status_code == 403
    assert counts() == (1, 1, 3, 0)


def test_an_outsider_gets_404(client, personas):
    query_set = make_set(personas)
    client.force_login(personas.outsider)
    for url in (f"/query-sets/{query_set.pk}/", f"/query-sets/{query_set.pk}/edit/"):
        assert client.get(url).status_code == 404
    assert client.post(f"/query-sets/{query_set.pk}/restore/").status_code == 404


def test_the_pages_refuse_other_methods(client, personas):
    query_set = make_set(personas)
    client.force_login(personas.lead)
    assert client.post("/query-sets/").status_code == 405
    assert client.post(f"/query-sets/{query_set.pk}/").status_code == 405
    assert client.get(f"/query-sets/{query_set.pk}/restore/").status_code == 405
    assert client.delete("/query-sets/new/").status_code == 405


def test_archive_asks_then_archives_and_restore_brings_it_back(client, personas):
    query_set = make_set(personas)
    client.force_login(personas.lead)
    assert "Archive query set" in client.get(f"/query-sets/{query_set.pk}/archive/") \
        .content.decode()
    response = client.post(f"/query-sets/{query_set.pk}/archive/")
    assert response.status_code == 302 and response["Location"] == "/query-sets/"
    query_set.refresh_from_db()
    assert query_set.archived_at is not None
    assert [q.pk for q in client.get("/query-sets/").context["archived_query_sets"]] == [
        query_set.pk]
    response = client.post(f"/query-sets/{query_set.pk}/restore/")
    query_set.refresh_from_db()
    assert response.status_code == 302 and query_set.archived_at is None


def test_an_evaluations_keywords_are_saved_as_a_set_from_its_page(client, personas):
    evaluation = EvaluationFactory(model__endpoint__team=personas.team, name="Spring")
    KeywordFactory(evaluation=evaluation, text="boots", position=1)
    client.force_login(personas.lead)
    page = client.get(f"/evaluations/{evaluation.pk}/")
    assert f'href="/query-sets/from-evaluation/{evaluation.pk}/"' in page.content.decode()
    assert client.get(f"/query-sets/from-evaluation/{evaluation.pk}/") \
        .context["form"].initial["name"] == "Spring"
    response = client.post(f"/query-sets/from-evaluation/{evaluation.pk}/", {"name": "Spring"})
    query_set = KeywordSet.objects.get()
    assert response["Location"] == f"/query-sets/{query_set.pk}/"
    assert version_keywords(query_set.current_version()) == ["boots"]
    client.force_login(personas.grader)
    assert client.post(f"/query-sets/from-evaluation/{evaluation.pk}/",
                       {"name": "Mine"}).status_code == 403


def evaluation_post(model, **fields) -> dict:
    return {"name": "Spring", "description": "", "model": model.pk, "keywords": "",
            "scale": "graded", "strategy": "1", "metrics": "ndcg@10", "transformers": "",
            "tags": "", "guidelines": "", "reuse_grades": "none", **fields}


def test_the_evaluation_form_creates_from_a_set_and_records_the_version(client, personas):
    model = SearchModelFactory(endpoint__team=personas.team)
    query_set = make_set(personas)
    client.force_login(personas.lead)
    page = client.get(f"/evaluations/new/?query_set={query_set.pk}")
    assert page.context["form"].initial["query_set"] == str(query_set.pk)
    response = client.post("/evaluations/new/", evaluation_post(model, query_set=query_set.pk),
                           follow=True)
    evaluation = Evaluation.objects.get()
    assert "created with 3 keywords" in response.content.decode()
    assert evaluation.query_set_version == query_set.current_version()
    assert stored(evaluation) == ["boots", "sandals", "heels"]
    assert response.context["evaluation"].query_set_version.number == 1


def test_the_evaluation_form_takes_one_source_of_keywords(client, personas):
    model = SearchModelFactory(endpoint__team=personas.team)
    query_set = make_set(personas)
    client.force_login(personas.lead)
    response = client.post("/evaluations/new/", evaluation_post(
        model, query_set=query_set.pk, keywords="hat", save_as_query_set="X"))
    assert response.status_code == 400
    assert response.context["form"].errors["query_set"] == [
        "Choose a query set or type/upload keywords, not both."]
    assert response.context["form"].errors["save_as_query_set"] == [
        "The keywords are the query set's already; leave this empty."]
    assert Evaluation.objects.count() == 0


def test_the_evaluation_form_saves_typed_keywords_as_a_set(client, personas):
    model = SearchModelFactory(endpoint__team=personas.team)
    client.force_login(personas.lead)
    response = client.post("/evaluations/new/", evaluation_post(
        model, keywords="hat\r\nscarf", save_as_query_set="Winter"))
    assert response.status_code == 302
    evaluation = Evaluation.objects.get()
    assert evaluation.query_set_version.query_set.name == "Winter"
    assert version_keywords(evaluation.query_set_version) == ["hat", "scarf"]


# --- API -----------------------------------------------------------------------------------


def test_the_api_creates_lists_and_details_a_set(personas):
    api = api_for(personas.lead)
    response = api.post("/api/v1/query-sets/", {"name": "Shoes", "keywords": ["boots", "hat"]},
                        format="json")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert (body["name"], body["current_version"], body["keyword_count"]) == ("Shoes", 1, 2)
    assert [v["number"] for v in body["versions"]] == [1]
    assert body["versions"][0]["created_by"] == "lead"
    response = api.post("/api/v1/query-sets/", {"name": "Text", "keywords_text": "a\nb\n\nc"},
                        format="json")
    assert response.status_code == 201 and response.json()["keyword_count"] == 3
    listing = api_for(personas.grader).get("/api/v1/query-sets/").json()
    assert [(q["name"], q["keyword_count"]) for q in listing["results"]] == [
        ("Shoes", 2), ("Text", 3)]
    detail = api_for(personas.grader).get(f"/api/v1/query-sets/{body['id']}/")
    assert detail.status_code == 200 and detail.json()["versions"][0]["keyword_count"] == 2
    keywords = api_for(personas.grader).get(
        f"/api/v1/query-sets/{body['id']}/versions/1/keywords/").json()
    assert [(k["position"], k["text"]) for k in keywords["results"]] == [(1, "boots"),
                                                                         (2, "hat")]
    assert api_for(personas.grader).get(
        f"/api/v1/query-sets/{body['id']}/versions/9/keywords/").status_code == 404


@pytest.mark.parametrize(("payload", "expected"), [
    ({"name": "E", "keywords": []}, {"keywords": ["Add at least one keyword."]}),
    ({"name": "E", "keywords_text": " \n"}, {"keywords": ["Add at least one keyword."]}),
    ({"name": "E"},
     {"keywords": ["This field is required (or give keywords_text or keywords_file)."]}),
    ({"name": "E", "keywords": ["a"], "keywords_text": "a"},
     {"keywords_text": ["Give keywords or keywords_text, not both."]}),
    ({"name": "shoes", "keywords": ["a"]},
     {"name": ["The team has a query set named 'shoes' already."]}),
])
def test_the_api_answers_400_naming_the_field(personas, payload, expected):
    make_set(personas)
    response = api_for(personas.lead).post("/api/v1/query-sets/", payload, format="json")
    assert response.status_code == 400
    assert response.json() == expected
    assert counts() == (1, 1, 3, 0)


def test_the_api_adds_versions_renames_and_archives(personas):
    query_set = make_set(personas)
    api = api_for(personas.lead)
    url = f"/api/v1/query-sets/{query_set.pk}/"
    response = api.post(url + "versions/", {"keywords": ["boots", "clogs"]}, format="json")
    assert response.status_code == 201
    assert (response.json()["number"], response.json()["created"]) == (2, True)
    response = api.post(url + "versions/", {"keywords_text": "boots\nclogs\n"}, format="json")
    assert response.status_code == 200
    assert (response.json()["number"], response.json()["created"]) == (2, False)
    response = api.post(url + "versions/", {"keywords": []}, format="json")
    assert response.status_code == 400
    assert response.json() == {"keywords": ["Add at least one keyword."]}
    response = api.patch(url, {"name": "Footwear"}, format="json")
    assert response.status_code == 200 and response.json()["name"] == "Footwear"
    response = api.post(url + "archive/")
    assert response.status_code == 200 and response.json()["archived_at"] is not None
    assert api.get("/api/v1/query-sets/").json()["count"] == 0
    response = api.post(url + "restore/")
    assert response.status_code == 200 and response.json()["archived_at"] is None
    grader = api_for(personas.grader)
    assert grader.post(url + "versions/", {"keywords": ["x"]}, format="json").status_code == 403
    assert api_for(personas.outsider).get(url).status_code == 404


def test_the_evaluation_api_creates_from_a_set_and_reports_the_version(personas):
    model = SearchModelFactory(endpoint__team=personas.team)
    query_set = make_set(personas)
    query_set_services.query_set_version_create(query_set=query_set, created_by=personas.lead,
                                                keywords=["heels", "boots"])
    payload = {"name": "Spring", "model": model.pk, "scale": "graded", "strategy": 1,
               "metrics": [{"code": "ndcg", "k": 10}]}
    api = api_for(personas.lead)
    response = api.post("/api/v1/evaluations/", {**payload, "query_set": query_set.pk},
                        format="json")
    assert response.status_code == 201, response.json()
    version = query_set.versions.get(number=2)
    assert response.json()["query_set_version"] == {"id": version.pk,
                                                    "query_set": query_set.pk, "number": 2}
    assert response.json()["keyword_count"] == 2
    assert stored(Evaluation.objects.get()) == ["heels", "boots"]
    listed = api.get("/api/v1/evaluations/").json()["results"]
    assert listed[0]["query_set_version"]["number"] == 2

    for extra, expected in (
        ({"query_set": query_set.pk, "keywords": ["a"]},
         {"query_set": ["Give keywords or query_set, not both."]}),
        ({}, {"keywords": ["This field is required."]}),
        ({"query_set": 999999}, {"query_set": ["No such query set in this team."]}),
    ):
        response = api.post("/api/v1/evaluations/", {**payload, **extra}, format="json")
        assert response.status_code == 400
        assert response.json() == expected
    assert Evaluation.objects.count() == 1
    typed = api.post("/api/v1/evaluations/", {**payload, "keywords": ["a"]}, format="json")
    assert typed.json()["query_set_version"] is None



def test_a_set_whose_version_an_evaluation_ran_cannot_be_deleted(personas):
    model = SearchModelFactory(endpoint__team=personas.team)
    query_set = make_set(personas)
    query_set_services.evaluation_create_from_query_set(query_set=query_set,
                                                        **evaluation_fields(personas, model))
    with pytest.raises(ProtectedError):
        query_set.delete()
    assert counts() == (1, 1, 3, 1)
