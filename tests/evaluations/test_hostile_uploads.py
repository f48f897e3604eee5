"""Hostile keyword files uploaded through the evaluation create and edit pages.

Random bytes, truncated and re-encoded files, BOMs, NULs, 100 KB lines: the page either
saves the evaluation with the file's keywords or answers 400 with a form error that names
the problem (a line number for a file error), and a refused form saves nothing.
"""

import itertools
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evaluations.models import Evaluation, Keyword
from tests.evaluations.factories import EvaluationFactory, SearchModelFactory
from tests.property_depth import examples

pytestmark = pytest.mark.django_db

HOSTILE = settings(max_examples=examples(40), deadline=None, derandomize=True,
                   suppress_health_check=[HealthCheck.function_scoped_fixture,
                                          HealthCheck.too_slow])
VALID_TXT = "red shoes\nblue hat\ncafé au lait\n".encode()
VALID_CSV = 'keyword,note\nred shoes,x\n"two\nlines",y\ncafé,z\n'.encode()
LINE_MESSAGE = re.compile(
    r"^line \d+: \S|^… and \d+ more errors\.$|^The submitted file is empty\.$"
    # A file of blank lines alone names no line: the recogniser says so of the whole file.
    r"|^The file holds no keywords\.$")
# What the file was read as comes first, as on the query-set form (query_sets.file_formats),
# then the problems, each by its line.
READ_AS = re.compile(r"^Read as .+\.$")
_names = itertools.count(1)


def hostile_bytes(valid: bytes) -> st.SearchStrategy[bytes]:
    return st.one_of(
        st.binary(max_size=600),
        st.text(max_size=300).map(lambda text: text.encode("utf-8", "surrogatepass")),
        st.integers(0, len(valid)).map(lambda cut: valid[:cut]),
        st.sampled_from(["utf-16", "utf-16-le", "latin-1", "cp1252", "utf-32"]).map(
            lambda encoding: valid.decode().encode(encoding)),
        st.binary(max_size=40).map(lambda tail: b"\xef\xbb\xbf" + valid + tail),
        st.integers(0, len(valid)).map(lambda at: valid[:at] + b"\x00" + valid[at:]),
        st.just(valid + b"k" * 100_000 + b"\n"),
        st.just(valid + b'"' + b"q" * 140_000 + b'"\n'),
        st.binary(min_size=1, max_size=400).map(lambda junk: valid.split(b"\n")[0] + b"\n" + junk),
        st.lists(st.sampled_from([b"\r", b"\n", b"\r\n", b",", b'"', b"\t", b" ", b"\x0b",
                                  b"\x1b", b"\xff", b"\xc3", b"\x85", b"\xe2\x80\xa8", b"x"]),
                 max_size=60).map(b"".join),
    )


def _form(model, content: bytes, filename: str) -> dict:
    return {"name": f"Hostile {next(_names)}", "description": "", "model": model.pk,
            "keywords": "", "keywords_file": SimpleUploadedFile(filename, content),
            "scale": "graded", "strategy": "1", "metrics": "ndcg@10", "transformers": "",
            "tags": "", "guidelines": "", "reuse_grades": "none"}


def _counts() -> tuple[int, int, list]:
    return (Evaluation.objects.count(), Keyword.objects.count(),
            sorted(Keyword.objects.values_list("evaluation_id", "position", "text")))


def _assert_refused_with_a_named_problem(response, before) -> None:
    assert response.status_code == 400, response.content[:300]
    errors = response.context["form"].errors
    assert errors, "a 400 without a form error"
    if "keywords_file" in errors:
        messages = list(errors["keywords_file"])
        problems = messages[1:] if READ_AS.match(messages[0]) else messages
        assert problems and all(LINE_MESSAGE.match(message) for message in problems), errors
    assert _counts() == before, "a refused form saved something"


@HOSTILE
@given(content=hostile_bytes(VALID_TXT) | hostile_bytes(VALID_CSV),
       filename=st.sampled_from(["k.txt", "k.csv", "K.CSV", "keywords", "k.bin"]))
def test_create_page_with_a_hostile_keyword_file_saves_it_or_names_the_problem(
        client, personas, content, filename):
    model = SearchModelFactory(endpoint__team=personas.team)
    client.force_login(personas.lead)
    before = _counts()
    response = client.post("/evaluations/new/", _form(model, content, filename))
    if response.status_code == 302:
        evaluation = Evaluation.objects.latest("pk")
        texts = list(evaluation.keywords.order_by("position").values_list("text", flat=True))
        # Blank lines and a lone header clean away: an evaluation may start with none.
        assert all(text == text.strip() and text for text in texts), texts
        # PostgreSQL refuses NUL in text (a 500 there); SQLite would store it.
        assert not any("\x00" in text for text in texts), texts
        return
    _assert_refused_with_a_named_problem(response, before)


@HOSTILE
@given(content=hostile_bytes(VALID_TXT) | hostile_bytes(VALID_CSV),
       filename=st.sampled_from(["k.txt", "k.csv"]))
def test_edit_page_with_a_hostile_keyword_file_keeps_the_old_keywords_on_refusal(
        client, personas, content, filename):
    model = SearchModelFactory(endpoint__team=personas.team)
    evaluation = EvaluationFactory(team=personas.team, model=model,
                                   status=Evaluation.Status.PENDING)
    Keyword.objects.create(evaluation=evaluation, position=1, text="kept")
    client.force_login(personas.lead)
    before = _counts()
    response = client.post(f"/evaluations/{evaluation.pk}/edit/",
                           _form(model, content, filename))
    if response.status_code == 302:
        return
    _assert_refused_with_a_named_problem(response, before)
    assert list(evaluation.keywords.values_list("text", flat=True)) == ["kept"]


def test_a_nul_byte_in_a_keyword_file_is_named_by_its_line(client, personas):
    model = SearchModelFactory(endpoint__team=personas.team)
    client.force_login(personas.lead)
    response = client.post("/evaluations/new/",
                           _form(model, b"red shoes\nblue\x00hat\n\x00\n", "k.txt"))
    assert response.status_code == 400
    assert response.context["form"].errors["keywords_file"] == [
        "Read as Plain text (no header, no commas: one keyword a line).",
        "line 2: control character U+0000 at column 5",
        "line 3: control character U+0000 at column 1"]
    assert not Evaluation.objects.exists() and not Keyword.objects.exists()


# --- JSON typed in forms: nesting, lone surrogates, NUL ---------------------------
# Each refused with the field's error and nothing stored; before, the nesting was a
# RecursionError (a 500) and the escapes were stored (PostgreSQL refuses both).

DEEP = "[" * 100_000 + "]" * 100_000
HOSTILE_JSON = [
    ('{"graded->binary": ' + DEEP + "}",
     "The value of 'graded->binary' is nested more than 64 levels deep."),
    (DEEP, "The JSON is nested more than 64 levels deep."),
    ('{"graded->binary": {"0": "\\ud800"}}',
     "The value of 'graded->binary' may not contain a lone surrogate (U+D800 to U+DFFF), "
     "which is not a character: send text as UTF-8."),
    ('{"\\u0000": 1}', "The value of '\\x00' may not contain a NUL character (U+0000)."),
    ('{"graded->binary": NaN}', "NaN and Infinity are not JSON numbers."),
]


def _stored_rows() -> dict[str, list]:
    from django.apps import apps

    return {model._meta.label: list(model.objects.order_by("pk").values())
            for app in ("evaluations", "judgments", "judges")
            for model in apps.get_app_config(app).get_models()}


@pytest.mark.parametrize("text, message", HOSTILE_JSON)
def test_the_evaluation_forms_name_hostile_transformer_json(client, personas, text, message):
    model = SearchModelFactory(endpoint__team=personas.team)
    evaluation = EvaluationFactory(team=personas.team, model=model,
                                   status=Evaluation.Status.PENDING)
    client.force_login(personas.lead)
    before = _stored_rows()
    for url in ("/evaluations/new/", f"/evaluations/{evaluation.pk}/edit/"):
        form = {**_form(model, b"boots\n", "k.txt"), "transformers": text}
        response = client.post(url, form)
        assert response.status_code == 400, url
        assert response.context["form"].errors["transformers"] == [message], url
    assert _stored_rows() == before


def test_the_search_model_form_names_a_body_nested_too_deep(client, personas):
    from tests.evaluations.factories import EndpointFactory

    endpoint = EndpointFactory(team=personas.team)
    client.force_login(personas.admin)
    before = _stored_rows()
    response = client.post("/models/new/", {
        "name": "Deep", "endpoint": endpoint.pk, "description": "", "params": "",
        "body_format": "json", "body": '{"q": "#query#", "x": ' + DEEP + "}", "headers": "",
        "default_keywords": ""})
    assert response.status_code == 400
    assert response.context["form"].errors["body"] == [
        "not valid JSON (The value of 'x' is nested more than 64 levels deep.); put #query# "
        "inside a JSON string, e.g. {\"q\": \"#query#\"}"]
    assert _stored_rows() == before


@pytest.mark.parametrize("text, message", HOSTILE_JSON)
def test_the_judge_forms_name_hostile_json(client, personas, text, message):
    from tests.judges.test_judge_pages import FORM, judge_of

    judge = judge_of(personas.team)
    client.force_login(personas.admin)
    before = _stored_rows()
    response = client.post("/judges/new/", {**FORM, "parameters": text})
    assert response.status_code == 400
    assert response.context["form"].errors["parameters"] == [message]
    one_line = " ".join(text.split())
    response = client.post(f"/judges/{judge.pk}/test/", {
        "keyword": "chair", "scale": "graded", "documents": f'{{"title": "a"}}\n{one_line}'})
    assert response.status_code == 400
    assert response.context["form"].errors["documents"] == [f"Line 2: {message}"]
    assert _stored_rows() == before
