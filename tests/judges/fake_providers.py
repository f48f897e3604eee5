"""Real HTTP model servers on 127.0.0.1 that speak OpenAI chat-completions, Anthropic
Messages and Ollama /api/chat, with scripted behaviours and a record of what they received.

A behaviour decides what the model "says" (a ModelAnswer, wrapped in the protocol's
envelope) or how the server fails (a raw Reply: 429, 500, a broken body). Scripted
behaviours answer requests in order; once the script is used up, ``default`` answers.
"""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from email.utils import formatdate
from typing import Any

from tests.evaluations.servers import Received, Reply, SearchServer

OPENAI, ANTHROPIC, OLLAMA = "openai", "anthropic", "ollama"
PATHS = {OPENAI: "/v1/chat/completions", ANTHROPIC: "/v1/messages", OLLAMA: "/api/chat"}
# The documents of judges.core.prompts are JSON objects, one a line, starting with the id.
DOCUMENT_ID = re.compile(r'^\{"id": ("(?:[^"\\]|\\.)*")', re.MULTILINE)


@dataclass
class ModelAnswer:
    """What the model says: a JSON-able object (sent structured where the protocol can) or
    text exactly as written."""

    payload: Any
    tokens_in: int = 120
    tokens_out: int = 40
    delay: float = 0.0


Behaviour = Callable[[str, Received], "ModelAnswer | Reply"]
"""(the user prompt, the request) → the answer or a raw reply."""


def document_ids(prompt: str) -> list[str]:
    return [json.loads(quoted) for quoted in DOCUMENT_ID.findall(prompt)]


def grade_all(grade: Callable[[str], Any] = lambda doc_id: 1,
              reason: str = "matches the keyword") -> Behaviour:
    """A good answer: every document of the prompt graded by ``grade(id)``."""
    return lambda prompt, request: ModelAnswer({"grades": [
        {"id": doc_id, "grade": grade(doc_id), "reason": reason}
        for doc_id in document_ids(prompt)]})


def answer(payload: Any) -> Behaviour:
    """Always the same answer (an object, or text such as fenced JSON or broken JSON)."""
    return lambda prompt, request: ModelAnswer(payload)


def slow(seconds: float, then: Behaviour | None = None) -> Behaviour:
    """Answer as ``then`` does, after ``seconds`` (longer than the client's timeout)."""
    inner = then or grade_all()

    def behaviour(prompt: str, request: Received) -> ModelAnswer | Reply:
        result = inner(prompt, request)
        result.delay = seconds
        return result
    return behaviour


def rate_limited(retry_after: str | None = "1", *, in_seconds: float | None = None,
                 protocol: str = OPENAI) -> Behaviour:
    """HTTP 429; ``in_seconds`` sends Retry-After as an HTTP-date that far ahead."""
    def behaviour(prompt: str, request: Received) -> Reply:
        import time

        value = formatdate(time.time() + in_seconds, usegmt=True) if in_seconds is not None \
            else retry_after
        headers = {"Retry-After": value} if value is not None else {}
        return Reply(status=429, body=error_body(protocol, "rate limit reached"),
                     headers=headers)
    return behaviour


def status(code: int, message: str = "server error", protocol: str = OPENAI) -> Behaviour:
    return lambda prompt, request: Reply(status=code, body=error_body(protocol, message))


def broken_body(text: str = "<html>502 Bad Gateway</html>") -> Behaviour:
    """A 200 whose body is not JSON at all (a proxy's page)."""
    return lambda prompt, request: Reply(status=200, body=text,
                                         headers={"Content-Type": "text/html"})


def error_body(protocol: str, message: str) -> dict:
    if protocol == ANTHROPIC:
        return {"type": "error", "error": {"type": "api_error", "message": message}}
    if protocol == OLLAMA:
        return {"error": message}
    return {"error": {"message": message, "type": "server_error", "code": None}}


class FakeProvider:
    """One protocol on one SearchServer; ``api_key`` is the key it demands (None: none)."""

    def __init__(self, protocol: str, server: SearchServer, *, api_key: str | None) -> None:
        self.protocol = protocol
        self.server = server
        self.api_key = api_key
        self.script: deque[Behaviour] = deque()
        self.default: Behaviour = grade_all()
        server.handler = self._handle

    @property
    def base_url(self) -> str:
        """The base URL a judge is configured with for this protocol."""
        return f"{self.server.url}/v1" if self.protocol == OPENAI else self.server.url

    @property
    def received(self) -> list[Received]:
        return self.server.received

    def bodies(self) -> list[dict]:
        return [json.loads(request.body) for request in self.received]

    def then(self, *behaviours: Behaviour) -> FakeProvider:
        self.script.extend(behaviours)
        return self

    def _handle(self, request: Received) -> Reply:
        if request.method != "POST" or request.path != PATHS[self.protocol]:
            return Reply(status=404, body=error_body(self.protocol, f"no route {request.path}"))
        refusal = self._refuse(request)
        if refusal is not None:
            return refusal
        try:
            body = json.loads(request.body)
            prompt = self._user_prompt(body)
        except (ValueError, KeyError, IndexError, TypeError):
            return Reply(status=400, body=error_body(self.protocol, "malformed request"))
        behaviour = self.script.popleft() if self.script else self.default
        result = behaviour(prompt, request)
        if isinstance(result, Reply):
            return result
        return Reply(status=200, body=self._envelope(body, result), delay=result.delay)

    def _refuse(self, request: Received) -> Reply | None:
        """What the real service says to a request without its key or version header."""
        headers = request.headers
        if self.protocol == ANTHROPIC:
            if "anthropic-version" not in headers:
                return Reply(status=400, body=error_body(ANTHROPIC, "anthropic-version missing"))
            given = headers.get("x-api-key")
        else:
            authorization = headers.get("authorization", "")
            given = authorization.removeprefix("Bearer ") if authorization else None
        if self.api_key is not None and given != self.api_key:
            return Reply(status=401, body=error_body(self.protocol, "invalid x-api-key"
                                                     if self.protocol == ANTHROPIC
                                                     else "Incorrect API key provided"))
        return None

    def _user_prompt(self, body: dict) -> str:
        messages = body["messages"]
        content = next(m["content"] for m in messages if m["role"] == "user")
        if isinstance(content, list):  # content parts (with images): the text ones
            return "\n".join(part["text"] for part in content if part.get("type") == "text")
        return content

    def _envelope(self, request_body: dict, result: ModelAnswer) -> dict:
        payload = result.payload
        text = payload if isinstance(payload, str) else json.dumps(payload)
        if self.protocol == OPENAI:
            return {
                "id": "chatcmpl-fake", "object": "chat.completion", "model": request_body["model"],
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": text}}],
                "usage": {"prompt_tokens": result.tokens_in,
                          "completion_tokens": result.tokens_out,
                          "total_tokens": result.tokens_in + result.tokens_out},
            }
        if self.protocol == ANTHROPIC:
            if isinstance(payload, str):
                content = [{"type": "text", "text": payload}]
            else:
                tool = request_body["tool_choice"]["name"]
                content = [{"type": "tool_use", "id": "toolu_fake", "name": tool,
                            "input": payload}]
            return {"id": "msg_fake", "type": "message", "role": "assistant",
                    "model": request_body["model"], "content": content,
                    "stop_reason": "tool_use" if not isinstance(payload, str) else "end_turn",
                    "usage": {"input_tokens": result.tokens_in,
                              "output_tokens": result.tokens_out}}
        return {"model": request_body["model"], "created_at": "2026-11-23T00:00:00Z",
                "message": {"role": "assistant", "content": text}, "done": True,
                "done_reason": "stop", "prompt_eval_count": result.tokens_in,
                "eval_count": result.tokens_out}


@contextmanager
def fake_provider(protocol: str, *, api_key: str | None = "sk-test-secret-0123456789"
                  ) -> Iterator[FakeProvider]:
    server = SearchServer().start()
    try:
        yield FakeProvider(protocol, server, api_key=api_key)
    finally:
        server.stop()
