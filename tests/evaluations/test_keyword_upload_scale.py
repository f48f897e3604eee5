"""Keyword lists at scale: up to settings.MAX_KEYWORDS (100,000) keywords,
an upload read a chunk at a time, and one bad line among 100,000 named alone with nothing
stored (the evaluation page, the query set page and the API)."""

import pytest
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from evaluations.models import Evaluation, Keyword, KeywordSet, QuerySetKeyword
from evaluations.services import keyword_input
from evaluations.services import keywords as keyword_services
from tests.evaluations.factories import KeywordFactory, SearchModelFactory

pytestmark = pytest.mark.django_db


def texts(entries) -> list[str]:
    return [entry.text for entry in entries]


def form_post(model, **fields) -> dict:
    return {"name": "Spring", "description": "", "model": model.pk, "keywords": "",
            "scale": "graded", "strategy": "1", "metrics": "ndcg@10", "transformers": "",
            "tags": "", "guidelines": "", "reuse_grades": "none", **fields}


def lines_with_bad(count: int, bad: int) -> list[str]:
    """`count` distinct keywords; number `bad` (1-based) carries a bell (U+0007)."""
    return [f"keyword {n}\x07" if n == bad else f"keyword {n}" for n in range(1, count + 1)]


def counts() -> tuple[int, int, int, int]:
    return (Evaluation.objects.count(), Keyword.objects.count(), KeywordSet.objects.count(),
            QuerySetKeyword.objects.count())


# --- reading in chunks -------------------------------------------------------------------


def test_chunks_split_anywhere_read_as_the_whole_file():
    # Every line end (\n, \r\n, \r), a BOM, a blank line, no final line end; split at every
    # byte and in one-byte chunks, the lines are the whole file's.
    content = b"\xef\xbb\xbfa\r\nb\rcd\n\r\n\re"
    expected = ["a", "b", "cd", "", "", "e"]
    assert texts(keyword_input.keywords_from_upload(filename="k.txt", content=content)) == expected
    for cut in range(len(content) + 1):
        chunks = iter([content[:cut], content[cut:]])
        assert texts(keyword_input.keywords_from_upload(
            filename="k.txt", content=chunks)) == expected, cut
    ones = (content[i:i + 1] for i in range(len(content)))
    assert texts(keyword_input.keywords_from_upload(filename="k.txt", content=ones)) == expected


def test_a_crlf_split_between_chunks_is_one_line_end_for_the_line_numbers():
    chunks = iter([b"a\r", b"\nb\r", b"\nc\x07\n"])
    with pytest.raises(ValidationError) as raised:
        keyword_input.keywords_from_upload(filename="k.txt", content=chunks)
    assert raised.value.message_dict["keywords_file"] == [
        "line 3: control character U+0007 at column 2"]


def test_a_csv_upload_in_chunks_keeps_a_quoted_field_across_a_chunk_boundary():
    content = b'keyword\n"two\nlines",x\nthree\n'
    chunks = iter([content[:12], content[12:]])
    assert texts(keyword_input.keywords_from_upload(filename="k.csv", content=chunks)) == [
        "two\nlines", "three"]


# --- 100,000 keywords --------------------------------------------------------------------


@pytest.mark.slow_reason("stores 100,000 keywords through the page: the limit is the behaviour")
def test_the_evaluation_page_stores_a_100000_line_file(client, personas):
    model = SearchModelFactory(endpoint__team=personas.team)
    client.force_login(personas.lead)
    body = "".join(f"keyword {n}\r\n" for n in range(1, 100_001)).encode()
    response = client.post("/evaluations/new/", form_post(
        model, keywords_file=SimpleUploadedFile("many.txt", body)))
    assert response.status_code == 302
    evaluation = Evaluation.objects.get()
    assert evaluation.keywords.count() == 100_000
    assert list(evaluation.keywords.order_by("-position").values_list(
        "position", "text")[:2]) == [(100_000, "keyword 100000"), (99_999, "keyword 99999")]


@pytest.mark.parametrize("url", ["/evaluations/new/", "/query-sets/new/"])
def test_one_bad_line_in_100000_is_named_alone_and_nothing_is_stored(client, personas, url):
    model = SearchModelFactory(endpoint__team=personas.team)
    KeywordFactory(evaluation__model=model)  # something to count
    before = counts()
    client.force_login(personas.lead)
    body = "".join(line + "\n" for line in lines_with_bad(100_000, 99_999)).encode()
    upload = SimpleUploadedFile("many.txt", body)
    fields = (form_post(model, keywords_file=upload) if url == "/evaluations/new/"
              else {"name": "Big", "description": "", "keywords": "", "keywords_file": upload})
    response = client.post(url, fields)
    assert response.status_code == 400
    # Both uploads are recognised first (query_sets.file_formats), and say as what.
    read_as = ["Read as Plain text (no header, no commas: one keyword a line)."]
    assert response.context["form"].errors["keywords_file"] == [
        *read_as, "line 99999: control character U+0007 at column 14"]
    assert counts() == before
    assert before[1] == 1


def test_the_api_names_item_99999_of_100000_and_stores_nothing(personas):
    model = SearchModelFactory(endpoint__team=personas.team)
    KeywordFactory(evaluation__model=model)
    before = counts()
    client = APIClient()
    client.force_authenticate(personas.lead)
    response = client.post("/api/v1/evaluations/", {
        "name": "Big", "model": model.pk, "scale": "graded", "strategy": 1,
        "keywords": lines_with_bad(100_000, 99_999), "metrics": [{"code": "ndcg", "k": 10}]},
        format="json")
    assert response.status_code == 400
    assert response.json() == {"keywords": ["line 99999: control character U+0007 at column 14"]}
    assert counts() == before


def test_the_limit_follows_the_setting(settings):
    settings.MAX_KEYWORDS = 3
    with pytest.raises(ValidationError) as raised:
        keyword_input.keywords_from_upload(filename="k.txt", content=b"a\nb\nc\nd\n")
    assert raised.value.message_dict["keywords_file"] == [
        "line 4: more than 3 keywords (the most an evaluation takes); the file was not read "
        "past this line."]
    with pytest.raises(ValidationError) as raised:
        keyword_services.keywords_validate([keyword_services.KeywordEntry(t) for t in "abcd"])
    assert raised.value.message_dict["keywords"] == ["At most 3 keywords (4 given)."]


def _long_keywords(count: int, bad: int) -> list[str]:
    """`count` keywords of about 55 characters: 100,000 of them make a 5.8 MB JSON body,
    more than Django's default 2.5 MB."""
    return [f"a rather long keyword phrase, number {n}, for the body size"
            + ("\x07" if n == bad else "") for n in range(1, count + 1)]


def test_a_json_body_of_100000_long_keywords_is_read_whole(personas):
    model = SearchModelFactory(endpoint__team=personas.team)
    client = APIClient()
    client.force_authenticate(personas.lead)
    before = counts()
    keywords = _long_keywords(100_000, 99_999)
    response = client.post("/api/v1/evaluations/", {
        "name": "Big", "model": model.pk, "scale": "graded", "strategy": 1,
        "keywords": keywords, "metrics": [{"code": "ndcg", "k": 10}]}, format="json")
    # Read to its last items: the bad one is named, and nothing is stored.
    assert response.status_code == 400, response.content[:200]
    assert response.json() == {"keywords": ["line 99999: control character U+0007 at column 62"]}
    assert counts() == before


def test_a_body_over_the_limit_answers_413_naming_the_setting(personas, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 4096
    model = SearchModelFactory(endpoint__team=personas.team)
    client = APIClient()
    client.force_authenticate(personas.lead)
    before = counts()
    response = client.post("/api/v1/evaluations/", {
        "name": "Big", "model": model.pk, "scale": "graded", "strategy": 1,
        "keywords": _long_keywords(200, 0), "metrics": [{"code": "ndcg", "k": 10}]},
        format="json")
    assert response.status_code == 413
    assert response.json() == {"detail": (
        "The request body is larger than 4,096 bytes, the most this server reads "
        "(DATA_UPLOAD_MAX_MEMORY_SIZE). Send keywords as a file upload, or ask the "
        "administrator to raise the setting.")}
    assert counts() == before


def test_a_form_over_the_limit_answers_413_in_the_layout(client, personas, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 4096
    model = SearchModelFactory(endpoint__team=personas.team)
    client.force_login(personas.lead)
    before = counts()
    response = client.post("/evaluations/new/", form_post(
        model, keywords="\n".join(_long_keywords(200, 0))))
    assert response.status_code == 413
    assert b"DATA_UPLOAD_MAX_MEMORY_SIZE" in response.content
    assert b'data-testid="error-page"' in response.content
    assert counts() == before


def test_the_default_limit_holds_the_largest_keyword_file():
    from searchtweak import settings as project_settings

    assert project_settings.DATA_UPLOAD_MAX_MEMORY_SIZE == (
        project_settings.KEYWORD_UPLOAD_MAX_BYTES + 2**20) == 100_000 * 501 + 2**20
