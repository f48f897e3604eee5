"""Answer validation: each pair accepted or rejected with a reason, never dropped."""

import json

import httpx
import pytest

from judges.core.answers import (
    Accepted,
    Rejected,
    Rejection,
    Stray,
    extract_json,
    rejection_counts,
    validate_answer,
)
from judges.core.prompts import Document, build_prompt, default_template
from judges.core.providers import Anthropic, Ollama, OpenAICompatible
from judges.core.sending import send
from metrics_engine.scales import GRADED, SCALES
from tests.judges.fake_providers import (
    ANTHROPIC,
    OLLAMA,
    OPENAI,
    answer,
    fake_provider,
    grade_all,
)

IDS = ["d1", "d2", "d3"]
GRADED_GRADES = range(0, 4)


def entry(doc_id, grade, reason="because"):
    return {"id": doc_id, "grade": grade, "reason": reason}


def check(payload, ids=IDS):
    return validate_answer(payload, ids=ids, grades=GRADED_GRADES)


def test_a_good_answer_accepts_every_pair_in_batch_order():
    verdict = check({"grades": [entry("d3", 0), entry("d1", 3, "exact"), entry("d2", 2)]})
    assert verdict.accepted == (Accepted("d1", 3, "exact"), Accepted("d2", 2, "because"),
                                Accepted("d3", 0, "because"))
    assert verdict.rejected == () and verdict.strays == ()


@pytest.mark.parametrize("text", [
    '```json\n{"grades": [{"id": "d1", "grade": 1, "reason": "r"}]}\n```',
    '```\n{"grades": [{"id": "d1", "grade": 1, "reason": "r"}]}```',
    'Sure! Here are the grades:\n{"grades": [{"id": "d1", "grade": 1, "reason": "r"}]}\nBye.',
    'Thinking {not json} then {"note": 1} and {"grades": [{"id": "d1", "grade": 1, '
    '"reason": "r"}]} done',
    '  {"grades": [{"id": "d1", "grade": 1, "reason": "r"}]}  \n',
])
def test_json_in_fences_or_prose_is_found(text):
    assert check(text, ids=["d1"]).accepted == (Accepted("d1", 1, "r"),)


def test_a_wrong_grade_for_one_pair_never_rejects_the_others():
    verdict = check({"grades": [
        entry("d1", 2), entry("d2", 4), entry("d3", "2"),
    ]})
    assert verdict.accepted == (Accepted("d1", 2, "because"),)
    assert verdict.rejected == (
        Rejected("d2", Rejection.OUT_OF_SCALE, "grade 4 is outside 0..3"),
        Rejected("d3", Rejection.WRONG_TYPE, 'grade "2" is not an integer'),
    )


@pytest.mark.parametrize("grade, detail", [
    ("2", 'grade "2" is not an integer'),
    (2.5, "grade 2.5 is not an integer"),
    (True, "grade true is not an integer"),
    (None, "grade null is not an integer"),
    ([2], "grade [2] is not an integer"),
])
def test_a_grade_that_is_not_an_integer_is_a_wrong_type(grade, detail):
    assert check({"grades": [entry("d1", grade)]}, ids=["d1"]).rejected == (
        Rejected("d1", Rejection.WRONG_TYPE, detail),)


def test_an_integral_float_is_the_integer_as_json_reads_it():
    assert check({"grades": [entry("d1", 2.0)]}, ids=["d1"]).accepted == (
        Accepted("d1", 2, "because"),)


def test_out_of_scale_below_and_above():
    verdict = check({"grades": [entry("d1", -1), entry("d2", 7), entry("d3", 3)]})
    assert [r.code for r in verdict.rejected] == [Rejection.OUT_OF_SCALE] * 2
    assert verdict.accepted == (Accepted("d3", 3, "because"),)


def test_a_missing_pair_is_rejected_as_missing():
    verdict = check({"grades": [entry("d1", 1), entry("d3", 0)]})
    assert verdict.rejected == (
        Rejected("d2", Rejection.MISSING, "the answer has no grade for it"),)
    assert [a.id for a in verdict.accepted] == ["d1", "d3"]


def test_a_duplicate_id_rejects_both_entries_even_when_they_agree():
    verdict = check({"grades": [entry("d1", 1), entry("d2", 2), entry("d1", 1)]}, ids=IDS[:2])
    assert verdict.rejected == (
        Rejected("d1", Rejection.DUPLICATE, "the answer grades it 2 times"),)
    assert verdict.accepted == (Accepted("d2", 2, "because"),)


def test_unknown_or_unusable_ids_are_strays_and_the_pair_they_meant_is_missing():
    verdict = check({"grades": [entry("D1", 1), entry(1, 1), {"grade": 2, "reason": "r"},
                                "d2 is 3", entry("d2", 3), entry("d3", 0)]})
    assert verdict.strays == (
        Stray(entry("D1", 1), Rejection.UNKNOWN_ID, "id 'D1' is not a document of the batch"),
        Stray(entry(1, 1), Rejection.WRONG_TYPE, "id 1 is not a string"),
        Stray({"grade": 2, "reason": "r"}, Rejection.WRONG_TYPE, "an entry has no id"),
        Stray("d2 is 3", Rejection.WRONG_TYPE, "an entry is not an object"),
    )
    assert verdict.rejected == (
        Rejected("d1", Rejection.MISSING, "the answer has no grade for it"),)
    assert [a.id for a in verdict.accepted] == ["d2", "d3"]


def test_a_pair_without_grade_or_reason_is_incomplete_and_a_reason_must_be_text():
    verdict = check({"grades": [{"id": "d1", "reason": "r"}, {"id": "d2", "grade": 1},
                                entry("d3", 1, reason=5)]})
    assert verdict.rejected == (
        Rejected("d1", Rejection.INCOMPLETE, "no grade"),
        Rejected("d2", Rejection.INCOMPLETE, "no reason"),
        Rejected("d3", Rejection.WRONG_TYPE, "reason 5 is not a string"),
    )
    assert check({"grades": [{"id": "d1"}]}, ids=["d1"]).rejected[0].detail == (
        "no grade and no reason")


@pytest.mark.parametrize("payload, detail", [
    ('{"grades": [{"id": "d1", "grade": ', "the answer is not JSON: "),
    ("I cannot grade these.", "the answer is not JSON: the answer holds no JSON object"),
    ([entry("d1", 1)], 'the answer is not a JSON object with "grades"'),
    ('{"scores": []}', 'the answer has no "grades" list'),
    ({"grades": {"d1": 1}}, 'the answer has no "grades" list'),
])
def test_a_malformed_whole_answer_rejects_every_pair_with_that_reason(payload, detail):
    verdict = check(payload)
    assert verdict.accepted == ()
    assert [r.id for r in verdict.rejected] == IDS
    assert {r.code for r in verdict.rejected} == {Rejection.MALFORMED}
    assert all(r.detail.startswith(detail) for r in verdict.rejected)


def test_every_id_is_accounted_for_exactly_once():
    verdict = check({"grades": [entry("d1", 1), entry("d1", 2), entry("d2", 9), entry("x", 1)]})
    ids = [a.id for a in verdict.accepted] + [r.id for r in verdict.rejected]
    assert sorted(ids) == IDS
    assert rejection_counts(verdict) == {Rejection.DUPLICATE: 1, Rejection.OUT_OF_SCALE: 1,
                                         Rejection.MISSING: 1}


def test_extract_json_raises_when_there_is_nothing():
    with pytest.raises(ValueError, match="no JSON object"):
        extract_json("[1, 2")


def test_the_batch_ids_must_be_unique():
    with pytest.raises(ValueError, match="unique"):
        validate_answer({"grades": []}, ids=["a", "a"], grades=[0, 1])


@pytest.mark.parametrize("protocol", [OPENAI, ANTHROPIC, OLLAMA])
def test_wrong_and_missing_grades_from_a_real_provider_reject_only_those_pairs(protocol):
    scale = SCALES[GRADED]
    documents = [Document(doc_id, {"title": doc_id.upper()}) for doc_id in IDS]
    prompt = build_prompt(default_template(scale), keyword="shoes", guidelines="",
                          documents=documents, scale=scale)
    provider_class = {OPENAI: OpenAICompatible, ANTHROPIC: Anthropic, OLLAMA: Ollama}[protocol]
    with fake_provider(protocol, api_key="sk-e2e-0123456789") as fake:
        fake.default = answer({"grades": [entry("d1", 3), entry("d2", 5)]})
        provider = provider_class(model="m", base_url=fake.base_url)
        request = provider.build_request(system=prompt.system, user=prompt.user,
                                         schema=prompt.schema, parameters={},
                                         api_key="sk-e2e-0123456789")
        with httpx.Client() as client:
            result = send(provider, request, client=client, timeout_seconds=5)
    verdict = validate_answer(result.completion.answer, ids=IDS, grades=scale.grades)
    assert verdict.accepted == (Accepted("d1", 3, "because"),)
    assert [(r.id, r.code) for r in verdict.rejected] == [
        ("d2", Rejection.OUT_OF_SCALE), ("d3", Rejection.MISSING)]


@pytest.mark.parametrize("protocol", [OPENAI, ANTHROPIC, OLLAMA])
def test_a_full_batch_of_twenty_is_graded_end_to_end(protocol):
    scale = SCALES[GRADED]
    ids = [f"slot-{n}" for n in range(20)]
    documents = [Document(doc_id, {"title": f"result {doc_id}"}) for doc_id in ids]
    prompt = build_prompt(default_template(scale), keyword="shoes", guidelines="Be strict.",
                          documents=documents, scale=scale)
    provider_class = {OPENAI: OpenAICompatible, ANTHROPIC: Anthropic, OLLAMA: Ollama}[protocol]
    with fake_provider(protocol, api_key=None) as fake:
        fake.default = grade_all(lambda doc_id: int(doc_id.split("-")[1]) % 4)
        provider = provider_class(model="m", base_url=fake.base_url)
        request = provider.build_request(system=prompt.system, user=prompt.user,
                                         schema=prompt.schema, parameters={}, api_key=None)
        with httpx.Client() as client:
            result = send(provider, request, client=client, timeout_seconds=5)
        sent = fake.bodies()[0]
    verdict = validate_answer(result.completion.answer, ids=ids, grades=scale.grades)
    assert verdict.rejected == () and verdict.strays == ()
    assert [(a.id, a.grade) for a in verdict.accepted] == [(i, n % 4) for n, i in enumerate(ids)]
    assert "Be strict." in json.dumps(sent)
