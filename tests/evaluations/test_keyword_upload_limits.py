"""A keyword file is refused early: over KEYWORD_UPLOAD_MAX_BYTES before a byte is parsed, and
at the first line past the keyword limit, with the error under the file field and what the
user typed kept."""

import pytest
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import SimpleUploadedFile

from evaluations.models import Evaluation
from evaluations.services import keyword_input
from tests.evaluations.factories import SearchModelFactory

pytestmark = pytest.mark.django_db


def texts(entries) -> list[str]:
    return [entry.text for entry in entries]


def form_post(model, **fields) -> dict:
    return {"name": "Spring", "description": "", "model": model.pk, "keywords": "",
            "scale": "graded", "strategy": "1", "metrics": "ndcg@10", "transformers": "",
            "tags": "", "guidelines": "", "reuse_grades": "none", **fields}


def upload_errors(*, filename: str, content: bytes, max_keywords: int) -> list[str]:
    with pytest.raises(ValidationError) as raised:
        keyword_input.keywords_from_upload(filename=filename, content=content,
                                           max_keywords=max_keywords)
    return raised.value.message_dict["keywords_file"]


def test_a_file_over_the_size_limit_is_refused_under_its_field_keeping_the_typed_keywords(
    client, personas, settings
):
    settings.KEYWORD_UPLOAD_MAX_BYTES = 2 * 1024 * 1024
    model = SearchModelFactory(endpoint__team=personas.team)
    client.force_login(personas.lead)
    upload = SimpleUploadedFile("big.txt", b"shoes\n" * (3 * 1024 * 1024 // 6))
    response = client.post("/evaluations/new/", form_post(
        model, keywords="red shoes\nblue hat", keywords_file=upload))
    assert response.status_code == 400
    form = response.context["form"]
    assert form.errors["keywords_file"] == [
        "big.txt is 3.0 MB; a keyword file may be at most 2.0 MB. Nothing was read from it; "
        "what you typed is kept."]
    assert "keywords" not in form.errors
    assert form["keywords"].value() == "red shoes\nblue hat"
    assert "red shoes\nblue hat</textarea>" in response.content.decode()
    assert not Evaluation.objects.exists()


@pytest.mark.parametrize("filename", ["k.txt", "k.csv"])
def test_reading_stops_at_the_first_line_past_the_keyword_limit(filename):
    # Line 5 is the 4th distinct keyword; the control character on line 6 is never read,
    # so it is not reported: the file was not parsed past the limit.
    content = b"a\nb\n\nc\nd\nbad\x07line\n"
    assert upload_errors(filename=filename, content=content, max_keywords=3) == [
        "line 5: more than 3 keywords (the most an evaluation takes); the file was not read "
        "past this line."]


def test_duplicates_and_blank_lines_do_not_count_towards_the_limit():
    content = b"a\nA\n\n  a \nb\nc\n"
    assert texts(keyword_input.keywords_from_upload(
        filename="k.txt", content=content, max_keywords=3)) == ["a", "A", "", "  a ", "b", "c"]


def test_errors_before_the_limit_are_listed_with_it():
    content = b"a\nb\x07\nc\n\xff\nd\ne\n"
    assert upload_errors(filename="k.txt", content=content, max_keywords=3) == [
        "line 2: control character U+0007 at column 2",
        "line 4: not UTF-8 text (byte 0xff at column 1)",
        "line 6: more than 3 keywords (the most an evaluation takes); the file was not read "
        "past this line."]


def test_the_form_refuses_a_file_one_keyword_over_the_limit_naming_the_line(client, personas):
    # The default limit (settings.MAX_KEYWORDS, 100,000): the file is 100,001 lines.
    model = SearchModelFactory(endpoint__team=personas.team)
    client.force_login(personas.lead)
    lines = "".join(f"keyword {number}\n" for number in range(100_001))
    upload = SimpleUploadedFile("many.txt", lines.encode())
    response = client.post("/evaluations/new/", form_post(model, keywords_file=upload))
    assert response.status_code == 400
    assert response.context["form"].errors["keywords_file"] == [
        "Read as Plain text (no header, no commas: one keyword a line).",
        "line 100001: more than 100,000 keywords (the most an "
        "evaluation takes); the file was not read past this line."]
    assert not Evaluation.objects.exists()


def test_line_ends_are_numbered_as_editors_number_them():
    content = b"a\r\nb\rc\n\r\nd\x07"
    with pytest.raises(ValidationError) as raised:
        keyword_input.keywords_from_upload(filename="k.txt", content=content)
    assert raised.value.message_dict["keywords_file"] == [
        "line 5: control character U+0007 at column 2"]
    assert texts(keyword_input.keywords_from_upload(
        filename="k.txt", content=b"a\r\nb\rc\n\r\n")) == ["a", "b", "c", ""]
