"""Each protocol's request and answer, without a network: the shapes the services expect."""

import json
from datetime import UTC, datetime

import httpx
import pytest

from judges.core.providers import (
    ANTHROPIC_VERSION,
    GRADES_TOOL,
    Anthropic,
    HTTPStatusError,
    MalformedResponse,
    Ollama,
    OpenAICompatible,
    ProviderConfigError,
    RateLimited,
    parse_retry_after,
)

SCHEMA = {"type": "object", "properties": {"grades": {"type": "array"}},
          "required": ["grades"], "additionalProperties": False}
KEY = "sk-unit-0123456789"


def build(provider, parameters=None, api_key=KEY):
    return provider.build_request(system="be a judge", user="grade these", schema=SCHEMA,
                                  parameters=parameters or {}, api_key=api_key)


def response(status=200, body=None, headers=None, text=None):
    content = text.encode() if text is not None else json.dumps(body).encode()
    return httpx.Response(status, content=content, headers=headers or {},
                          request=httpx.Request("POST", "http://127.0.0.1/"))


def test_openai_asks_for_the_json_schema_with_the_bearer_key_and_the_parameters():
    request = build(OpenAICompatible(model="gpt-x", base_url="http://127.0.0.1:9/v1/"),
                    parameters={"temperature": 0, "seed": 7})
    body = json.loads(request.content)
    assert str(request.url) == "http://127.0.0.1:9/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert body == {
        "model": "gpt-x", "temperature": 0, "seed": 7,
        "messages": [{"role": "system", "content": "be a judge"},
                     {"role": "user", "content": "grade these"}],
        "response_format": {"type": "json_schema", "json_schema": {
            "name": "grades", "strict": True, "schema": SCHEMA}},
    }


def test_openai_falls_back_to_json_object_and_a_bare_key_header_when_configured():
    provider = OpenAICompatible(model="m", base_url="http://127.0.0.1:9/openai/v1",
                                json_schema=False, api_key_header="api-key")
    request = build(provider)
    assert json.loads(request.content)["response_format"] == {"type": "json_object"}
    assert request.headers["api-key"] == KEY
    assert "authorization" not in request.headers


def test_no_key_means_no_credential_header():
    request = build(OpenAICompatible(model="m", base_url="http://127.0.0.1:9/v1"), api_key="")
    assert "authorization" not in request.headers


def test_anthropic_forces_the_grades_tool_and_sends_key_and_version():
    request = build(Anthropic(model="claude-x", base_url="http://127.0.0.1:9"),
                    parameters={"temperature": 0.2})
    body = json.loads(request.content)
    assert str(request.url) == "http://127.0.0.1:9/v1/messages"
    assert request.headers["x-api-key"] == KEY
    assert request.headers["anthropic-version"] == ANTHROPIC_VERSION
    assert body["system"] == "be a judge"
    assert body["messages"] == [{"role": "user", "content": "grade these"}]
    assert body["max_tokens"] == 4096 and body["temperature"] == 0.2
    assert body["tools"][0]["name"] == GRADES_TOOL
    assert body["tools"][0]["input_schema"] == SCHEMA
    assert body["tool_choice"] == {"type": "tool", "name": GRADES_TOOL}


def test_anthropic_max_tokens_comes_from_the_parameters_when_given():
    body = json.loads(build(Anthropic(model="c"), parameters={"max_tokens": 512}).content)
    assert body["max_tokens"] == 512


def test_ollama_sends_the_schema_as_format_and_parameters_as_options():
    request = build(Ollama(model="llama3", base_url="http://127.0.0.1:9"),
                    parameters={"temperature": 0, "num_predict": 300}, api_key=None)
    body = json.loads(request.content)
    assert str(request.url) == "http://127.0.0.1:9/api/chat"
    assert "authorization" not in request.headers
    assert body["format"] == SCHEMA and body["stream"] is False
    assert body["options"] == {"temperature": 0, "num_predict": 300}
    assert [m["role"] for m in body["messages"]] == ["system", "user"]


@pytest.mark.parametrize("provider, parameter", [
    (OpenAICompatible(model="m"), "response_format"),
    (OpenAICompatible(model="m"), "messages"),
    (Anthropic(model="m"), "tool_choice"),
    (Anthropic(model="m"), "system"),
])
def test_a_parameter_may_not_overwrite_what_the_judge_sets(provider, parameter):
    with pytest.raises(ProviderConfigError, match=parameter):
        build(provider, parameters={parameter: "x"})


def test_identity_names_protocol_and_endpoint_for_the_cache():
    assert OpenAICompatible(model="m", base_url="http://h/v1/").identity == "openai http://h/v1"
    assert Ollama(model="m").identity == "ollama http://127.0.0.1:11434"


def test_retry_after_in_seconds():
    assert parse_retry_after("120") == 120.0
    assert parse_retry_after(" 1.5 ") == 1.5
    assert parse_retry_after("-3") == 0.0


def test_retry_after_as_an_http_date_counts_from_now():
    now = datetime(2026, 11, 23, 22, 0, 0, tzinfo=UTC)
    # 22:00:45 - 22:00:00 = 45 s.
    assert parse_retry_after("Mon, 23 Nov 2026 22:00:45 GMT", now=now) == 45.0
    assert parse_retry_after("Mon, 23 Nov 2026 21:59:00 GMT", now=now) == 0.0


@pytest.mark.parametrize("value", [None, "", "soon", "Mon, 99 Foo 2026"])
def test_retry_after_that_says_nothing_is_none(value):
    assert parse_retry_after(value) is None


def test_429_is_rate_limited_with_its_retry_after_measured_on_the_server_clock():
    headers = {"Retry-After": "Mon, 23 Nov 2026 22:00:30 GMT",
               "Date": "Mon, 23 Nov 2026 22:00:00 GMT"}
    with pytest.raises(RateLimited) as caught:
        OpenAICompatible(model="m").parse_response(
            response(429, {"error": {"message": "slow down"}}, headers))
    assert caught.value.retry_after_seconds == 30.0
    assert caught.value.status_code == 429 and caught.value.retryable
    assert "slow down" in caught.value.message


def test_retry_after_ms_wins_over_retry_after():
    with pytest.raises(RateLimited) as caught:
        OpenAICompatible(model="m").parse_response(
            response(429, {}, {"Retry-After": "2", "retry-after-ms": "1500"}))
    assert caught.value.retry_after_seconds == 1.5


def test_server_errors_are_retryable_and_client_errors_are_not():
    with pytest.raises(HTTPStatusError) as server:
        Anthropic(model="m").parse_response(
            response(529, {"type": "error", "error": {"type": "overloaded_error",
                                                      "message": "Overloaded"}}))
    assert server.value.retryable and server.value.message == "HTTP 529: Overloaded"
    with pytest.raises(HTTPStatusError) as client:
        Ollama(model="m").parse_response(response(404, {"error": "model 'x' not found"}))
    assert not client.value.retryable
    assert client.value.message == "HTTP 404: model 'x' not found"


def test_a_body_that_is_not_json_is_malformed():
    with pytest.raises(MalformedResponse, match="not JSON"):
        OpenAICompatible(model="m").parse_response(response(text="<html>oops</html>"))
    with pytest.raises(MalformedResponse, match="no choices"):
        OpenAICompatible(model="m").parse_response(response(body={"choices": []}))


def test_openai_answer_gives_the_text_and_the_tokens():
    completion = OpenAICompatible(model="m").parse_response(response(body={
        "choices": [{"message": {"role": "assistant", "content": '{"grades": []}'}}],
        "usage": {"prompt_tokens": 321, "completion_tokens": 12}}))
    assert (completion.text, completion.data) == ('{"grades": []}', None)
    assert (completion.tokens_in, completion.tokens_out) == (321, 12)
    assert completion.answer == '{"grades": []}'


def test_openai_refusal_is_malformed_with_the_models_words():
    with pytest.raises(MalformedResponse, match="refused: I cannot"):
        OpenAICompatible(model="m").parse_response(response(body={
            "choices": [{"message": {"content": None, "refusal": "I cannot"}}]}))


def test_anthropic_tool_call_gives_structured_json():
    grades = {"grades": [{"id": "d1", "grade": 1, "reason": "ok"}]}
    completion = Anthropic(model="m").parse_response(response(body={
        "content": [{"type": "text", "text": "Here:"},
                    {"type": "tool_use", "name": GRADES_TOOL, "input": grades}],
        "usage": {"input_tokens": 50, "output_tokens": 9}}))
    assert completion.data == grades and completion.answer == grades
    assert json.loads(completion.text) == grades
    assert (completion.tokens_in, completion.tokens_out) == (50, 9)


def test_anthropic_without_a_tool_call_keeps_the_text_for_validation():
    completion = Anthropic(model="m").parse_response(response(body={
        "content": [{"type": "text", "text": '```json\n{"grades": []}\n```'}]}))
    assert completion.data is None and completion.text.startswith("```json")
    assert completion.tokens_in is None


def test_ollama_answer_gives_content_and_eval_counts():
    completion = Ollama(model="m").parse_response(response(body={
        "message": {"role": "assistant", "content": '{"grades": []}'}, "done": True,
        "prompt_eval_count": 77, "eval_count": 5}))
    assert (completion.text, completion.tokens_in, completion.tokens_out) == (
        '{"grades": []}', 77, 5)
