"""The providers end to end against real local servers speaking each protocol."""

import json
import socket
from contextlib import contextmanager

import httpx
import pytest

from judges.core.providers import (
    Anthropic,
    HTTPStatusError,
    MalformedResponse,
    Ollama,
    OpenAICompatible,
    ProviderTimeout,
    ProviderUnreachable,
    RateLimited,
)
from judges.core.redaction import MASK
from judges.core.sending import RetryPolicy, send
from tests.judges.fake_providers import (
    ANTHROPIC,
    OLLAMA,
    OPENAI,
    answer,
    broken_body,
    fake_provider,
    grade_all,
    rate_limited,
    slow,
    status,
)

KEY = "sk-test-secret-0123456789"
SCHEMA = {"type": "object"}
USER = 'Grade:\n{"id": "d1", "fields": {"title": "a"}}\n{"id": "d2", "fields": {"title": "b"}}'
PROVIDERS = {OPENAI: OpenAICompatible, ANTHROPIC: Anthropic, OLLAMA: Ollama}


class Clock:
    """Records the sender's sleeps instead of sleeping."""

    def __init__(self) -> None:
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)


def call(fake, *, key=KEY, clock=None, policy=None, timeout=5.0, random=lambda: 0.0):
    provider = PROVIDERS[fake.protocol](model="judge-model", base_url=fake.base_url)
    request = provider.build_request(system="judge", user=USER, schema=SCHEMA,
                                     parameters={"temperature": 0}, api_key=key)
    with httpx.Client() as client:
        return send(provider, request, client=client, timeout_seconds=timeout,
                    policy=policy or RetryPolicy(), sleep=(clock or Clock()).sleep,
                    random=random)


def secret_appears_in(result) -> bool:
    kept = json.dumps([result.request, [vars(a) for a in result.attempts],
                       str(result.error or "")])
    return KEY in kept


@pytest.mark.parametrize("protocol", [OPENAI, ANTHROPIC, OLLAMA])
def test_a_good_answer_comes_back_with_tokens_and_the_key_reaches_only_the_provider(protocol):
    with fake_provider(protocol, api_key=KEY) as fake:
        fake.default = grade_all(lambda doc_id: {"d1": 1, "d2": 0}[doc_id])
        result = call(fake)
        sent = fake.received[0].headers
    assert result.ok and result.error is None
    answer_json = result.completion.answer
    if isinstance(answer_json, str):
        answer_json = json.loads(answer_json)
    assert answer_json == {"grades": [
        {"id": "d1", "grade": 1, "reason": "matches the keyword"},
        {"id": "d2", "grade": 0, "reason": "matches the keyword"}]}
    assert (result.completion.tokens_in, result.completion.tokens_out) == (120, 40)
    assert KEY in (sent.get("x-api-key", "") + sent.get("authorization", ""))
    assert not secret_appears_in(result)
    assert MASK in json.dumps(result.request["headers"])
    assert len(result.attempts) == 1 and result.attempts[0].status_code == 200


@pytest.mark.parametrize("protocol", [OPENAI, ANTHROPIC])
def test_a_wrong_key_is_an_http_error_not_retried(protocol):
    with fake_provider(protocol, api_key="sk-the-right-one-000") as fake:
        result = call(fake)
        assert len(fake.received) == 1
    assert isinstance(result.error, HTTPStatusError) and not result.error.retryable
    assert result.error.status_code == 401
    assert result.error.message.startswith("HTTP 401: ")


def test_a_provider_echoing_the_key_has_it_scrubbed_from_error_and_log():
    with fake_provider(OPENAI, api_key=KEY) as fake:
        fake.default = status(400, message=f"key {KEY} may not use this model")
        result = call(fake)
    assert result.error.message == f"HTTP 400: key {MASK} may not use this model"
    assert not secret_appears_in(result)


@pytest.mark.parametrize("protocol", [OPENAI, ANTHROPIC, OLLAMA])
def test_malformed_model_json_arrives_as_text_for_validation_to_reject(protocol):
    with fake_provider(protocol, api_key=KEY) as fake:
        fake.default = answer('{"grades": [{"id": "d1", "grade": ')
        result = call(fake)
    assert result.ok and result.completion.text == '{"grades": [{"id": "d1", "grade": '


def test_a_body_that_is_not_the_protocol_is_malformed_and_not_retried():
    with fake_provider(OLLAMA, api_key=None) as fake:
        fake.default = broken_body()
        result = call(fake, key=None)
        assert len(fake.received) == 1
    assert isinstance(result.error, MalformedResponse)
    assert result.attempts[0].response_text == "<html>502 Bad Gateway</html>"


@pytest.mark.parametrize("protocol", [OPENAI, ANTHROPIC, OLLAMA])
def test_a_slow_model_times_out_without_a_retry_by_default(protocol):
    with fake_provider(protocol, api_key=KEY) as fake:
        fake.default = slow(5.0)
        result = call(fake, timeout=0.3)
        assert len(fake.received) == 1
    assert isinstance(result.error, ProviderTimeout)
    assert result.error.message == "no answer within 0.3 s"


def test_a_timeout_is_retried_when_the_policy_says_so():
    clock = Clock()
    with fake_provider(OPENAI, api_key=KEY) as fake:
        fake.then(slow(5.0))
        result = call(fake, timeout=0.3, clock=clock,
                      policy=RetryPolicy(retry_timeouts=True, backoff_seconds=2.0))
    assert result.ok and len(result.attempts) == 2
    assert "no answer" in result.attempts[0].error
    # Equal jitter with random() = 0: 2 / 2 + 0 = 1 s.
    assert clock.sleeps == [1.0]


@pytest.mark.parametrize("protocol", [OPENAI, ANTHROPIC, OLLAMA])
def test_429_waits_its_retry_after_seconds_then_succeeds(protocol):
    clock = Clock()
    with fake_provider(protocol, api_key=KEY) as fake:
        fake.then(rate_limited("7", protocol=protocol))
        result = call(fake, clock=clock)
        assert len(fake.received) == 2
    assert result.ok
    # Backoff would be 1/2 + 0 = 0.5 s; Retry-After says 7, and 7 wins.
    assert clock.sleeps == [7.0]
    assert result.attempts[0].status_code == 429 and result.attempts[0].waited_seconds == 7.0
    assert "rate limit reached" in result.attempts[0].error


def test_429_with_an_http_date_waits_until_that_date_on_the_servers_clock():
    clock = Clock()
    with fake_provider(OPENAI, api_key=KEY) as fake:
        fake.then(rate_limited(in_seconds=3))
        result = call(fake, clock=clock)
    assert result.ok and len(clock.sleeps) == 1
    # Both dates have whole seconds: 3 s ahead, less the fraction of a second truncated
    # from "now" and the server's Date header, lands between 2 and 4 s.
    assert 2.0 <= clock.sleeps[0] <= 4.0


def test_a_retry_after_beyond_what_the_call_may_wait_ends_the_call():
    clock = Clock()
    with fake_provider(OPENAI, api_key=KEY) as fake:
        fake.then(rate_limited("3600"))
        result = call(fake, clock=clock, policy=RetryPolicy(max_retry_after_seconds=60))
        assert len(fake.received) == 1
    assert isinstance(result.error, RateLimited)
    assert result.error.retry_after_seconds == 3600.0
    assert clock.sleeps == []
    assert "longer than the 60 s" in result.error.message


def test_server_errors_back_off_exponentially_with_jitter_then_give_up():
    clock = Clock()
    with fake_provider(ANTHROPIC, api_key=KEY) as fake:
        fake.default = status(503, protocol=ANTHROPIC)
        result = call(fake, clock=clock, random=lambda: 1.0,
                      policy=RetryPolicy(max_attempts=4, backoff_seconds=1.0,
                                         max_backoff_seconds=3.0))
        assert len(fake.received) == 4
    # random() = 1: b/2 + b/2 = b, with b = min(3, 1·2^(n-1)) = 1, 2, 3 for n = 1, 2, 3.
    assert clock.sleeps == [1.0, 2.0, 3.0]
    assert isinstance(result.error, HTTPStatusError) and result.error.status_code == 503
    assert [a.status_code for a in result.attempts] == [503] * 4
    assert result.attempts[-1].waited_seconds == 0.0


def test_a_server_error_then_a_good_answer_succeeds():
    with fake_provider(OLLAMA, api_key=None) as fake:
        fake.then(status(500, protocol=OLLAMA))
        result = call(fake, key=None)
    assert result.ok and [a.status_code for a in result.attempts] == [500, 200]


def test_an_unreachable_provider_is_retried_then_reported():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    provider = OpenAICompatible(model="m", base_url=f"http://127.0.0.1:{port}/v1")
    request = provider.build_request(system="s", user="u", schema=SCHEMA, parameters={},
                                     api_key=KEY)
    clock = Clock()
    with httpx.Client() as client:
        result = send(provider, request, client=client, timeout_seconds=2,
                      policy=RetryPolicy(max_attempts=3), sleep=clock.sleep,
                      random=lambda: 0.0)
    assert isinstance(result.error, ProviderUnreachable)
    assert len(result.attempts) == 3 and clock.sleeps == [0.5, 1.0]


def test_the_gate_is_held_around_each_attempt_and_never_during_a_wait():
    """The app's shared rate limit is the gate: one turn per HTTP request, none held while
    the sender sleeps before a retry."""
    events: list[str] = []

    @contextmanager
    def gate():
        events.append("enter")
        yield
        events.append("leave")

    class RecordingClock(Clock):
        def sleep(self, seconds: float) -> None:
            events.append("sleep")
            super().sleep(seconds)

    with fake_provider(OPENAI, api_key=KEY) as fake:
        fake.then(rate_limited("2"))
        provider = PROVIDERS[OPENAI](model="judge-model", base_url=fake.base_url)
        request = provider.build_request(system="judge", user=USER, schema=SCHEMA,
                                         parameters={}, api_key=KEY)
        with httpx.Client() as client:
            result = send(provider, request, client=client, timeout_seconds=5.0,
                          sleep=RecordingClock().sleep, random=lambda: 0.0, gate=gate)
    assert result.ok
    assert events == ["enter", "leave", "sleep", "enter", "leave"]


def test_what_the_gate_raises_ends_the_call():
    class NoTurn(Exception):
        pass

    @contextmanager
    def closed_gate():
        raise NoTurn("no turn within 1 s")
        yield

    with fake_provider(OPENAI, api_key=KEY) as fake:
        provider = PROVIDERS[OPENAI](model="judge-model", base_url=fake.base_url)
        request = provider.build_request(system="judge", user=USER, schema=SCHEMA,
                                         parameters={}, api_key=KEY)
        with httpx.Client() as client, pytest.raises(NoTurn):
            send(provider, request, client=client, timeout_seconds=5.0, gate=closed_gate)
        assert fake.received == []
