"""Query-set files through the pages and the API: what the file was read as is said, a
refusal names the field and line, and nothing is stored on error."""

from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from evaluations.models import KeywordSet, QuerySetKeyword, QuerySetVersion
from evaluations.query_sets.services import query_set_create, version_entries
from evaluations.services.keywords import KeywordEntry

pytestmark = pytest.mark.django_db
FILES = Path(__file__).parent / "files"


def _file(name: str) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, (FILES / name).read_bytes())


def _counts() -> tuple[int, int, int]:
    return (KeywordSet.objects.count(), QuerySetVersion.objects.count(),
            QuerySetKeyword.objects.count())


def _api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_the_page_says_what_a_quepid_export_was_read_as(client, personas):
    client.force_login(personas.lead)
    response = client.post("/query-sets/new/", {
        "name": "From Quepid", "keywords": "", "keywords_format": "auto",
        "keywords_file": _file("quepid_basic.csv")}, follow=True)
    assert response.status_code == 200
    shown = [str(message) for message in response.context["messages"]]
    assert shown == [
        "Query set From Quepid created with 4 keywords. Read as Quepid basic CSV (header "
        "query,docid,rating): 4 keywords. Ratings are left out (import the file on the pool "
        "page to keep them); each query is taken once. 1 query had no rating (`query,,`)."]
    query_set = KeywordSet.objects.get(name="From Quepid")
    assert [entry.text for entry in version_entries(query_set.current_version())] == [
        "star wars", "rocky", "batman, the dark knight", "matrix"]


def test_the_edit_page_reads_a_csv_with_weights_and_tags_as_a_new_version(client, personas):
    query_set = query_set_create(team=personas.team, created_by=personas.lead, name="Shop",
                                 keywords=["laptop"])
    client.force_login(personas.lead)
    response = client.post(f"/query-sets/{query_set.pk}/edit/", {
        "name": "Shop", "description": "", "keywords": "",
        "keywords_file": _file("weighted.csv")}, follow=True)
    assert [str(m) for m in response.context["messages"]] == [
        "Saved as version 2 (3 keywords). Read as SearchTweak CSV (header "
        "keyword,weight,tags): 3 keywords."]
    assert version_entries(query_set.current_version()) == [
        KeywordEntry("laptop", 1200, ("electronics", "head")),
        KeywordEntry("red, white shoes", 35, ("fashion",)), KeywordEntry("usb charger")]


def test_an_ambiguous_file_is_refused_on_the_page_with_the_reason(client, personas):
    client.force_login(personas.lead)
    response = client.post("/query-sets/new/", {
        "name": "Commas", "keywords": "",
        "keywords_file": SimpleUploadedFile("queries", b"laptop\nred, white shoes\n")})
    assert response.status_code == 400
    assert response.context["form"].errors["keywords_file"][0].startswith(
        "line 2: a comma or double quote, and no header row")
    assert _counts() == (0, 0, 0)


def test_a_bad_workbench_line_is_refused_on_the_page_naming_line_and_field(client, personas):
    client.force_login(personas.lead)
    response = client.post("/query-sets/new/", {
        "name": "WB", "keywords": "",
        "keywords_file": SimpleUploadedFile("q.ndjson",
                                            b'{"queryText": "a"}\n{"queryText": ""}\n')})
    assert response.status_code == 400
    assert response.context["form"].errors["keywords_file"] == [
        "Read as OpenSearch Workbench query set (NDJSON lines holding queryText).",
        'line 2: queryText: expected the query text, found ""']
    assert _counts() == (0, 0, 0)


def test_the_api_creates_a_set_from_a_workbench_file_and_says_how_it_read_it(personas):
    response = _api(personas.lead).post("/api/v1/query-sets/", {
        "name": "WB", "keywords_file": _file("workbench_queries.ndjson")}, format="multipart")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["keyword_count"] == 3
    assert body["keywords_read"] == {
        "format": "workbench", "name": "OpenSearch Workbench query set",
        "reason": "NDJSON lines holding queryText", "keyword_count": 3,
        "note": "Fields left out: customField, referenceAnswer."}


def test_the_api_adds_a_version_from_a_file_with_a_chosen_format(personas):
    query_set = query_set_create(team=personas.team, created_by=personas.lead, name="Shop",
                                 keywords=["laptop"])
    response = _api(personas.lead).post(f"/api/v1/query-sets/{query_set.pk}/versions/", {
        "keywords_file": SimpleUploadedFile("list", b"red, white shoes\nlaptop\n"),
        "keywords_format": "text"}, format="multipart")
    assert response.status_code == 201, response.json()
    assert response.json()["keywords_read"]["reason"] == "chosen on the form"
    assert [entry.text for entry in version_entries(query_set.current_version())] == [
        "red, white shoes", "laptop"]


@pytest.mark.parametrize(("name", "content", "expected"), [
    ("q.csv", b"keyword,weight\nlaptop,-3\n",
     ["Read as SearchTweak CSV (header keyword,weight).",
      "line 2: weight: '-3' is not a non-negative integer"]),
    ("queries", b"query\nlaptop\n",
     ["line 1: `query` may be a CSV header or a keyword: name the file .csv (a header) or "
      ".txt (a keyword), or choose the format."]),
])
def test_the_api_answers_400_on_keywords_file_naming_the_line(personas, name, content,
                                                                expected):
    response = _api(personas.lead).post("/api/v1/query-sets/", {
        "name": "Bad", "keywords_file": SimpleUploadedFile(name, content)}, format="multipart")
    assert response.status_code == 400
    assert response.json() == {"keywords_file": expected}
    assert _counts() == (0, 0, 0)


def test_the_api_takes_one_source_of_keywords(personas):
    response = _api(personas.lead).post("/api/v1/query-sets/", {
        "name": "Two", "keywords_text": "a", "keywords_file": SimpleUploadedFile("q.txt", b"b")},
        format="multipart")
    assert response.status_code == 400
    assert response.json() == {"keywords_file": ["Give keywords_text or keywords_file, not both."]}
