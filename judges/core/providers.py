"""The three chat protocols a judge speaks: a request out, an answer or a clear error in.

A provider only translates (system prompt, user prompt, JSON schema, model parameters,
API key) into an httpx.Request and an httpx.Response into a Completion; it never sends.
Sending, timeouts and retries live in judges.core.sending, credentials masking in
judges.core.redaction, so each protocol is testable without a network.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, ClassVar

import httpx

OPENAI_BASE_URL = "https://api.openai.com/v1"
ANTHROPIC_BASE_URL = "https://api.anthropic.com"
ANTHROPIC_VERSION = "2023-06-01"
OLLAMA_BASE_URL = "http://127.0.0.1:11434"
# Anthropic requires max_tokens; 20 grades with a sentence of reason each fit easily.
ANTHROPIC_DEFAULT_MAX_TOKENS = 4096
# The one tool Anthropic is forced to call: its input is the answer, shaped by the schema.
GRADES_TOOL = "record_grades"
# Overloaded or briefly unavailable: worth another try. 529 is Anthropic's "overloaded".
RETRYABLE_STATUSES = frozenset({408, 409, 425, 500, 502, 503, 504, 529})
ERROR_SNIPPET_CHARS = 300


class ProviderError(Exception):
    """A call that gave no usable answer; ``retryable`` says whether trying again can help."""

    retryable: bool = False

    def __init__(self, message: str, *, status_code: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status_code = status_code


class HTTPStatusError(ProviderError):
    """The provider answered with an error status."""

    def __init__(self, message: str, *, status_code: int,
                 retry_after_seconds: float | None = None) -> None:
        super().__init__(message, status_code=status_code)
        self.retryable = status_code in RETRYABLE_STATUSES or status_code == 429
        # Some providers send Retry-After with a 503 too; the sender honours it either way.
        self.retry_after_seconds = retry_after_seconds


class RateLimited(HTTPStatusError):
    """HTTP 429: wait ``retry_after_seconds`` (None when the provider did not say)."""


class MalformedResponse(ProviderError):
    """A success status whose body is not the protocol's shape: not retried, the same
    request would most likely get the same answer."""


class ProviderTimeout(ProviderError):
    """No answer within the timeout."""


class ProviderUnreachable(ProviderError):
    """The request may never have reached the provider (connection refused, reset)."""

    retryable = True


class ProviderRefused(ProviderError):
    """The app's outbound rules stopped the request (a denied network, a redirect they do
    not follow): asking again would be refused again."""


class ProviderConfigError(ValueError):
    """A judge's settings that cannot make a valid request (e.g. a parameter that would
    overwrite a field the protocol needs)."""


@dataclass(frozen=True)
class Completion:
    """What the model answered, with the tokens the provider counted (None if it did not)."""

    text: str
    """The answer as written; for a tool call, its input serialised as JSON."""
    data: Any = None
    """The answer as JSON when the protocol hands it over structured (tool use), else None."""
    tokens_in: int | None = None
    tokens_out: int | None = None

    @property
    def answer(self) -> Any:
        """What answer validation reads: the structured data when there is some."""
        return self.data if self.data is not None else self.text


def parse_retry_after(value: str | None, *, now: datetime | None = None) -> float | None:
    """Seconds to wait from a Retry-After header: delay-seconds or an HTTP-date (RFC 9110
    §10.2.3). A date in the past means 0; an unreadable value means None (not said)."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - (now or datetime.now(UTC))).total_seconds()
    if seconds != seconds or seconds in (float("inf"), float("-inf")):
        return None
    return max(0.0, seconds)


def _retry_after(response: httpx.Response) -> float | None:
    # OpenAI also sends milliseconds; the finer figure wins.
    milliseconds = parse_retry_after(response.headers.get("retry-after-ms"))
    if milliseconds is not None:
        return milliseconds / 1000
    # An HTTP-date is the provider's clock: measure it against the provider's Date header
    # so that a skewed local clock neither skips nor stretches the wait.
    now = None
    if "date" in response.headers:
        try:
            now = parsedate_to_datetime(response.headers["date"])
        except (TypeError, ValueError, IndexError):
            now = None
    return parse_retry_after(response.headers.get("retry-after"), now=now)


def _error_detail(response: httpx.Response) -> str:
    """The provider's own words about an error: error.message, error (Ollama) or the body."""
    text = response.text
    try:
        body = json.loads(text)
    except ValueError:
        body = None
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return error["message"][:ERROR_SNIPPET_CHARS]
        if isinstance(error, str):
            return error[:ERROR_SNIPPET_CHARS]
    return text.strip()[:ERROR_SNIPPET_CHARS]


def json_body(response: httpx.Response) -> dict[str, Any]:
    """The body of a successful answer as a JSON object, or the error the status means."""
    status = response.status_code
    if status == 429:
        raise RateLimited(f"HTTP 429 (rate limited): {_error_detail(response)}",
                          status_code=status, retry_after_seconds=_retry_after(response))
    if status >= 400:
        raise HTTPStatusError(f"HTTP {status}: {_error_detail(response)}", status_code=status,
                              retry_after_seconds=_retry_after(response))
    if not 200 <= status < 300:
        raise HTTPStatusError(f"HTTP {status}: unexpected status", status_code=status)
    try:
        body = json.loads(response.text)
    except ValueError as error:
        raise MalformedResponse(f"the provider's answer is not JSON: {error}",
                                status_code=status) from error
    except RecursionError as error:
        # A body of a few KB can nest deeper than the parser's stack: a bad answer, not a
        # crash of the worker that read it.
        raise MalformedResponse("the provider's answer nests its JSON too deeply to read",
                                status_code=status) from error
    if not isinstance(body, dict):
        raise MalformedResponse("the provider's answer is not a JSON object", status_code=status)
    return body


def _token_count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _checked_parameters(parameters: Mapping[str, Any], reserved: frozenset[str]) -> dict:
    clashes = sorted(set(parameters) & reserved)
    if clashes:
        raise ProviderConfigError(
            f"model parameters may not set {', '.join(clashes)}: the judge sets them itself")
    return dict(parameters)


def _json_request(url: str, body: dict[str, Any], headers: dict[str, str]) -> httpx.Request:
    content = json.dumps(body, ensure_ascii=False).encode()
    return httpx.Request("POST", url, content=content, headers={
        "Content-Type": "application/json", "Accept": "application/json", **headers})


class _HttpProvider:
    """What every provider shares: its identity (for the cache key) and its URLs."""

    kind: ClassVar[str]
    base_url: str

    @property
    def identity(self) -> str:
        return f"{self.kind} {self.base_url.rstrip('/')}"

    def _url(self, path: str) -> str:
        return f"{self.base_url.rstrip('/')}{path}"


def _chat_messages(system: str, user: str | list) -> list[dict[str, Any]]:
    """The system + user turns of the chat APIs that take a system message in the list."""
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def _with_images(user: str, images: Sequence[tuple[str, str]], image_part
                 ) -> str | list[dict[str, Any]]:
    """The user turn: its text alone, or content parts with each image after a line naming
    its document (``image_part(url)`` is the protocol's part)."""
    if not images:
        return user
    parts: list[dict[str, Any]] = [{"type": "text", "text": user}]
    for document_id, url in images:
        parts += [{"type": "text", "text": f"Image of document {document_id}:"},
                  image_part(url)]
    return parts


@dataclass(frozen=True)
class OpenAICompatible(_HttpProvider):
    """Any OpenAI-compatible chat-completions API (OpenAI, vLLM, llama.cpp server, LM Studio,
    Groq, Mistral, DeepSeek, OpenRouter, Azure's v1 API): POST {base_url}/chat/completions.

    ``json_schema``: ask for ``response_format`` json_schema (strict); servers that lack it
    get json_object, and the prompt alone describes the shape. ``api_key_header``:
    "Authorization" sends ``Bearer <key>``; any other name (Azure's "api-key") the bare key.
    """

    model: str
    base_url: str = OPENAI_BASE_URL
    json_schema: bool = True
    api_key_header: str = "Authorization"
    kind: ClassVar[str] = "openai"
    reserved: ClassVar[frozenset[str]] = frozenset(
        {"model", "messages", "response_format", "stream", "n", "tools", "tool_choice"})

    def build_request(self, *, system: str, user: str, schema: Mapping[str, Any],
                      parameters: Mapping[str, Any], api_key: str | None,
                      images: Sequence[tuple[str, str]] = ()) -> httpx.Request:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": _chat_messages(system, _with_images(user, images, lambda url: {
                "type": "image_url", "image_url": {"url": url}})),
            **_checked_parameters(parameters, self.reserved),
        }
        if self.json_schema:
            body["response_format"] = {"type": "json_schema", "json_schema": {
                "name": "grades", "strict": True, "schema": dict(schema)}}
        else:
            body["response_format"] = {"type": "json_object"}
        headers = {}
        if api_key:
            bearer = self.api_key_header.lower() == "authorization"
            headers[self.api_key_header] = f"Bearer {api_key}" if bearer else api_key
        return _json_request(self._url("/chat/completions"), body, headers)

    def parse_response(self, response: httpx.Response) -> Completion:
        body = json_body(response)
        choices = body.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise MalformedResponse("the answer has no choices", status_code=response.status_code)
        message = choices[0].get("message")
        if not isinstance(message, dict):
            raise MalformedResponse("the first choice has no message",
                                    status_code=response.status_code)
        content = message.get("content")
        if not isinstance(content, str):
            refusal = message.get("refusal")
            reason = f"the model refused: {refusal}" if isinstance(refusal, str) \
                else "the message has no text content"
            raise MalformedResponse(reason, status_code=response.status_code)
        usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
        return Completion(text=content, tokens_in=_token_count(usage.get("prompt_tokens")),
                          tokens_out=_token_count(usage.get("completion_tokens")))


@dataclass(frozen=True)
class Anthropic(_HttpProvider):
    """The Anthropic Messages API: POST {base_url}/v1/messages, the answer forced into the
    schema by a single tool the model must call (``tool_choice``)."""

    model: str
    base_url: str = ANTHROPIC_BASE_URL
    kind: ClassVar[str] = "anthropic"
    reserved: ClassVar[frozenset[str]] = frozenset(
        {"model", "messages", "system", "tools", "tool_choice", "stream"})

    def build_request(self, *, system: str, user: str, schema: Mapping[str, Any],
                      parameters: Mapping[str, Any], api_key: str | None,
                      images: Sequence[tuple[str, str]] = ()) -> httpx.Request:
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": ANTHROPIC_DEFAULT_MAX_TOKENS,
            **_checked_parameters(parameters, self.reserved),
            "system": system,
            "messages": [{"role": "user", "content": _with_images(user, images, lambda url: {
                "type": "image", "source": {"type": "url", "url": url}})}],
            "tools": [{"name": GRADES_TOOL, "description": "Record one grade and reason per "
                       "document.", "input_schema": dict(schema)}],
            "tool_choice": {"type": "tool", "name": GRADES_TOOL},
        }
        headers = {"anthropic-version": ANTHROPIC_VERSION}
        if api_key:
            headers["x-api-key"] = api_key
        return _json_request(self._url("/v1/messages"), body, headers)

    def parse_response(self, response: httpx.Response) -> Completion:
        body = json_body(response)
        blocks = body.get("content")
        if not isinstance(blocks, list):
            raise MalformedResponse("the answer has no content blocks",
                                    status_code=response.status_code)
        usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
        tokens = {"tokens_in": _token_count(usage.get("input_tokens")),
                  "tokens_out": _token_count(usage.get("output_tokens"))}
        for block in blocks:
            if isinstance(block, dict) and block.get("type") == "tool_use" \
                    and block.get("name") == GRADES_TOOL:
                data = block.get("input")
                return Completion(text=json.dumps(data, ensure_ascii=False), data=data, **tokens)
        # No tool call (a model that ignored tool_choice): its text may still hold the JSON.
        texts = [block["text"] for block in blocks if isinstance(block, dict)
                 and block.get("type") == "text" and isinstance(block.get("text"), str)]
        if not texts:
            raise MalformedResponse(f"the answer has neither a {GRADES_TOOL} call nor text",
                                    status_code=response.status_code)
        return Completion(text="\n".join(texts), **tokens)


@dataclass(frozen=True)
class Ollama(_HttpProvider):
    """Ollama's POST {base_url}/api/chat, non-streaming, ``format`` set to the JSON schema;
    model parameters go in ``options`` (temperature, seed, num_predict, ...)."""

    model: str
    base_url: str = OLLAMA_BASE_URL
    kind: ClassVar[str] = "ollama"

    def build_request(self, *, system: str, user: str, schema: Mapping[str, Any],
                      parameters: Mapping[str, Any], api_key: str | None,
                      images: Sequence[tuple[str, str]] = ()) -> httpx.Request:
        messages = _chat_messages(system, user)
        if images:
            # Ollama takes a message's images as base64 only, with no text between them:
            # the user turn names them in order after its text. ``images`` are (document
            # id, base64 data), data "" for an image that could not be fetched
            # (judges.images fetches them).
            lines, sent = [user, ""], []
            for document_id, data in images:
                if data:
                    sent.append(data)
                    lines.append(f"Image {len(sent)} is of document {document_id}.")
                else:
                    lines.append(f"The image of document {document_id} could not be fetched.")
            messages[1] = {"role": "user", "content": "\n".join(lines), "images": sent}
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "stream": False,
            "format": dict(schema),
        }
        if parameters:
            body["options"] = dict(parameters)
        # Ollama itself has no key; one behind a proxy or on ollama.com takes a bearer token.
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        return _json_request(self._url("/api/chat"), body, headers)

    def parse_response(self, response: httpx.Response) -> Completion:
        body = json_body(response)
        message = body.get("message")
        if not isinstance(message, dict) or not isinstance(message.get("content"), str):
            raise MalformedResponse("the answer has no message content",
                                    status_code=response.status_code)
        return Completion(text=message["content"],
                          tokens_in=_token_count(body.get("prompt_eval_count")),
                          tokens_out=_token_count(body.get("eval_count")))


Provider = OpenAICompatible | Anthropic | Ollama
PROVIDERS: dict[str, type[OpenAICompatible] | type[Anthropic] | type[Ollama]] = {
    cls.kind: cls for cls in (OpenAICompatible, Anthropic, Ollama)}
