"""The only form of a judge's request that may be shown, logged or stored: keys masked.

Credentials are masked by where they travel (the headers and query parameters that carry
keys) and, as a second net, every occurrence of those values anywhere else (a key pasted
into a parameter, a provider echoing it in an error) is replaced as well.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import httpx

MASK = "[redacted]"
SENSITIVE_HEADERS = frozenset({
    "authorization", "proxy-authorization", "x-api-key", "api-key", "x-goog-api-key",
    "cookie", "openai-organization", "openai-project",
})
SENSITIVE_QUERY = frozenset({"key", "api_key", "api-key", "apikey", "token", "access_token"})
# Replacing a 1-3 character "secret" everywhere would shred the text and hide nothing.
MIN_SECRET_CHARS = 4


def secrets_of(request: httpx.Request) -> list[str]:
    """The credential values the request carries, longest first (so that a key containing
    another is replaced whole)."""
    values: set[str] = set()
    for name, value in request.headers.items():
        if name.lower() in SENSITIVE_HEADERS:
            values.add(value)
            scheme, _, token = value.partition(" ")
            if token and scheme.lower() in {"bearer", "basic", "token"}:
                values.add(token)
    for name, value in parse_qsl(request.url.query.decode(), keep_blank_values=True):
        if name.lower() in SENSITIVE_QUERY:
            values.add(value)
    return sorted((v for v in values if len(v) >= MIN_SECRET_CHARS), key=len, reverse=True)


def scrub(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret value replaced by the mask."""
    for secret in secrets:
        text = text.replace(secret, MASK)
    return text


def _masked_header(name: str, value: str) -> str:
    scheme, _, token = value.partition(" ")
    if name.lower() in {"authorization", "proxy-authorization"} and token:
        return f"{scheme} {MASK}"
    return MASK


def redacted(request: httpx.Request) -> dict[str, Any]:
    """method, url, headers and body (parsed when JSON) of ``request``, with no credential.

    The body must already be in memory (requests built by judges.core.providers are).
    """
    secrets = secrets_of(request)
    parts = urlsplit(str(request.url))
    query = urlencode([(name, MASK if name.lower() in SENSITIVE_QUERY else value)
                       for name, value in parse_qsl(parts.query, keep_blank_values=True)])
    headers = {name: _masked_header(name, value) if name.lower() in SENSITIVE_HEADERS
               else scrub(value, secrets) for name, value in request.headers.items()}
    text = scrub(request.content.decode("utf-8", errors="replace"), secrets)
    try:
        body: Any = json.loads(text) if text else None
    except ValueError:
        body = text
    return {
        "method": request.method,
        "url": scrub(urlunsplit(parts._replace(query=query)), secrets),
        "headers": headers,
        "body": body,
    }
