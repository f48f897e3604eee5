"""The evaluation form's keyword file is recognised as a query set's is
(query_sets.file_formats): Quepid's and the Workbench's files are read, an ambiguous file is
refused naming its line until a format is chosen, and a refusal stores nothing."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from evaluations.models import Evaluation, Keyword
from tests.evaluations.factories import SearchModelFactory

pytestmark = pytest.mark.django_db


def post(client, model, upload, **fields):
    return client.post("/evaluations/new/", {
        "name": "Moved in", "description": "", "model": model.pk, "keywords": "",
        "keywords_file": upload, "scale": "graded", "strategy": "1", "metrics": "ndcg@10",
        "transformers": "", "tags": "", "guidelines": "", "reuse_grades": "none", **fields})


def keywords_of(evaluation: Evaluation) -> list[str]:
    return list(evaluation.keywords.order_by("position").values_list("text", flat=True))


def notices(response) -> list[str]:
    return [str(message) for message in response.wsgi_request._messages]


def test_a_quepid_basic_csv_gives_its_queries_once_each_in_order(client, personas):
    model = SearchModelFactory(endpoint__team=personas.team)
    client.force_login(personas.lead)
    # As Quepid's "basic" export writes it: a rated query a row per document, an unrated
    # query as `query,,`.
    upload = SimpleUploadedFile("quepid.csv", b"query,docid,rating\nstar wars,11,3\n"
                                              b"star wars,1891,1\nbatman,,\nalien,348,0\n")
    response = post(client, model, upload)
    assert response.status_code == 302
    assert keywords_of(Evaluation.objects.get()) == ["star wars", "batman", "alien"]
    assert notices(response)[0] == (
        "Read as Quepid basic CSV (header query,docid,rating): 3 keywords. Ratings are left "
        "out (import the file on the pool page to keep them); each query is taken once. "
        "1 query had no rating (`query,,`).")


def test_a_workbench_query_set_gives_its_query_texts(client, personas):
    model = SearchModelFactory(endpoint__team=personas.team)
    client.force_login(personas.lead)
    upload = SimpleUploadedFile("queries.ndjson", b'{"queryText": "laptop"}\n'
                                                  b'{"queryText": "red shoes", '
                                                  b'"referenceAnswer": "x"}\n')
    response = post(client, model, upload)
    assert response.status_code == 302
    assert keywords_of(Evaluation.objects.get()) == ["laptop", "red shoes"]
    assert notices(response)[0] == (
        "Read as OpenSearch Workbench query set (NDJSON lines holding queryText): 2 keywords. "
        "Fields left out: referenceAnswer.")


def test_an_ambiguous_file_is_refused_naming_its_line_until_a_format_is_chosen(
    client, personas
):
    model = SearchModelFactory(endpoint__team=personas.team)
    client.force_login(personas.lead)
    content = b"shoes\nshoes, red\n"
    response = post(client, model, SimpleUploadedFile("keywords", content))
    assert response.status_code == 400
    assert response.context["form"].errors["keywords_file"] == [
        "line 2: a comma or double quote, and no header row: these may be CSV rows "
        "(keyword,weight,tags) or keywords holding commas. Add the header keyword,weight,tags, "
        "name the file .csv or .txt, or choose the format."]
    assert not Evaluation.objects.exists() and not Keyword.objects.exists()

    response = post(client, model, SimpleUploadedFile("keywords", content),
                    keywords_format="text")
    assert response.status_code == 302
    assert keywords_of(Evaluation.objects.get()) == ["shoes", "shoes, red"]


def test_a_bad_workbench_line_is_named_with_its_field_and_nothing_is_stored(client, personas):
    model = SearchModelFactory(endpoint__team=personas.team)
    client.force_login(personas.lead)
    upload = SimpleUploadedFile("q.ndjson", b'{"queryText": "laptop"}\n{"queryText": 7}\n')
    response = post(client, model, upload)
    assert response.status_code == 400
    assert response.context["form"].errors["keywords_file"] == [
        "Read as OpenSearch Workbench query set (NDJSON lines holding queryText).",
        "line 2: queryText: expected the query text, found 7"]
    assert not Evaluation.objects.exists()


def test_the_cap_names_an_evaluation_for_a_quepid_file(client, personas, settings):
    settings.MAX_KEYWORDS = 2
    model = SearchModelFactory(endpoint__team=personas.team)
    client.force_login(personas.lead)
    upload = SimpleUploadedFile("q.csv", b"query,docid,rating\na,1,1\nb,,\nc,,\n")
    response = post(client, model, upload)
    assert response.status_code == 400
    assert response.context["form"].errors["keywords_file"] == [
        "Read as Quepid basic CSV (header query,docid,rating).",
        "line 4: more than 2 keywords (the most an evaluation takes); the file was not read "
        "past this line."]
    assert not Evaluation.objects.exists()
