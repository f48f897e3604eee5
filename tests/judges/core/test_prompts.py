"""Prompt templates: shipped defaults, one-pass rendering, clear errors, the answer schema."""

import json

import pytest

from judges.core.prompts import (
    MAX_BATCH_SIZE,
    Document,
    PromptError,
    build_prompt,
    check_template,
    default_template,
    grades_schema,
    render,
)
from metrics_engine.scales import BINARY, DETAIL, GRADED, SCALES, Scale
from tests.judges.fake_providers import document_ids

DOCS = [Document("d1", {"title": "Red shoes", "price": 49.5}),
        Document("d2", {"title": 'The "best"\nshoe', "tags": ["a", "b"]})]


def test_binary_default_renders_keyword_guidelines_and_one_json_document_a_line():
    text = render(default_template(SCALES[BINARY]), keyword="red shoes",
                  guidelines="Prefer shoes in stock.", documents=DOCS, scale=SCALES[BINARY])
    assert text.startswith("A user searched for:\nred shoes\n\nThe team's guidelines for "
                           "judging:\nPrefer shoes in stock.\n\n")
    assert ('{"id": "d1", "fields": {"title": "Red shoes", "price": 49.5}}\n'
            '{"id": "d2", "fields": {"title": "The \\"best\\"\\nshoe", "tags": ["a", "b"]}}\n'
            ) in text
    assert '"grade": <0 or 1>' in text
    assert "{{" not in text


@pytest.mark.parametrize("code, wording", [
    (BINARY, "0 = irrelevant"), (GRADED, "3 = perfect"), (DETAIL, "10 = a perfect answer")])
def test_each_builtin_scale_ships_its_own_valid_template(code, wording):
    template = default_template(SCALES[code])
    check_template(template)
    assert wording in template


def test_a_custom_scale_gets_the_generic_template_listing_its_grades():
    scale = Scale("stars", 1, 3, {1: "bad", 3: "great"})
    text = render(default_template(scale), keyword="k", guidelines="", documents=DOCS[:1],
                  scale=scale)
    assert "(higher is more relevant):\n1 = bad\n2\n3 = great\n" in text


def test_values_are_inserted_once_and_never_expanded_again():
    text = render("{{keyword}} | {{ guidelines }} | {{documents}}", keyword="{{documents}}",
                  guidelines="<b>& {{keyword}}</b>", documents=[Document("x", {"t": "{{scale}}"})],
                  scale=SCALES[BINARY])
    assert text == ('{{documents}} | <b>& {{keyword}}</b> | '
                    '{"id": "x", "fields": {"t": "{{scale}}"}}')


def test_single_braces_of_a_json_example_are_left_alone():
    template = 'Answer {"grades": [{"id": "..."}]} for {{keyword}}: {{documents}}'
    assert render(template, keyword="k", guidelines="", documents=DOCS[:1],
                  scale=SCALES[BINARY]).startswith('Answer {"grades": [{"id": "..."}]} for k:')


@pytest.mark.parametrize("template, message", [
    ("{{keyword}} {{documents}} {{query}}", r"unknown placeholder \{\{query\}\}"),
    ("{{keyword}} {{documents}} {{ key word }}", "malformed placeholder at '{{ key word }}'"),
    ("{{keyword}} {{documents}} {{", "malformed placeholder"),
    ("{{keyword}} only", r"must contain \{\{documents\}\}"),
    ("{{documents}} only", r"must contain \{\{keyword\}\}"),
])
def test_a_bad_template_fails_naming_the_problem(template, message):
    with pytest.raises(PromptError, match=message):
        check_template(template)
    with pytest.raises(PromptError, match=message):
        render(template, keyword="k", guidelines="", documents=DOCS, scale=SCALES[BINARY])


@pytest.mark.parametrize("documents, message", [
    ([], "1 to 20 documents, not 0"),
    ([Document(f"d{n}", {}) for n in range(MAX_BATCH_SIZE + 1)], "1 to 20 documents, not 21"),
    ([Document("d1", {}), Document("d1", {})], "'d1' appears twice"),
    ([Document("", {})], "is not a non-empty string"),
    ([Document(7, {})], "7 is not a non-empty string"),
    ([Document("d1", {"when": object()})], "document 'd1' has a field that is not JSON"),
    ([Document("d1", {"score": float("nan")})], "document 'd1' has a field that is not JSON"),
])
def test_a_bad_batch_fails_naming_the_document(documents, message):
    with pytest.raises(PromptError, match=message):
        render(default_template(SCALES[GRADED]), keyword="k", guidelines="",
               documents=documents, scale=SCALES[GRADED])


def test_a_batch_of_twenty_is_allowed_and_its_ids_can_be_read_back():
    documents = [Document(f"doc-{n}", {"n": n}) for n in range(MAX_BATCH_SIZE)]
    text = render(default_template(SCALES[DETAIL]), keyword="k", guidelines="",
                  documents=documents, scale=SCALES[DETAIL])
    assert document_ids(text) == [f"doc-{n}" for n in range(MAX_BATCH_SIZE)]


def test_the_schema_asks_for_id_grade_in_scale_and_reason_and_nothing_else():
    schema = grades_schema([0, 1, 2, 3])
    item = schema["properties"]["grades"]["items"]
    assert schema["required"] == ["grades"] and schema["additionalProperties"] is False
    assert item["properties"] == {"id": {"type": "string"},
                                  "grade": {"type": "integer", "enum": [0, 1, 2, 3]},
                                  "reason": {"type": "string"}}
    assert item["required"] == ["id", "grade", "reason"] and item["additionalProperties"] is False


def test_build_prompt_bundles_system_user_and_the_scales_schema():
    prompt = build_prompt(default_template(SCALES[DETAIL]), keyword="k", guidelines="g",
                          documents=DOCS, scale=SCALES[DETAIL])
    assert prompt.system.startswith("You are a careful search relevance judge.")
    assert "JSON only" in prompt.system
    assert prompt.schema == grades_schema(list(range(1, 11)))
    assert document_ids(prompt.user) == ["d1", "d2"]
    json.dumps(prompt.schema)
