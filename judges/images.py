"""Results' images for a protocol that takes them only inline: Ollama's base64 `images`.

OpenAI-compatible and Anthropic judges send an image's URL and the provider fetches it;
Ollama cannot, so the worker fetches each image first, through the same outbound rules as
every other request (the network policy on every address and redirect hop, the judge's
timeout), with no credential, at most JUDGE_IMAGE_MAX_BYTES, and only when the answer says
it is an image. An image that cannot be had is named to the model as missing rather than
failing the call: the documents' text is still worth a grade, and the model is told why
one image is absent instead of guessing.

What is logged of the request (JudgeCall.request) names each image by its URL and size,
never its data: a call log row must not carry megabytes of base64.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import httpx
from django.conf import settings

from searchtweak import outbound, outbound_sending


@dataclass(frozen=True)
class FetchedImage:
    document_id: str
    url: str
    # The image's bytes as base64, "" when it could not be had (then `problem` says why).
    data: str = ""
    size: int = 0
    problem: str = ""


def fetch_images(images: Sequence[tuple[str, str]], *, client: httpx.Client,
                 timeout_seconds: float) -> list[FetchedImage]:
    """Each (document id, image URL), fetched; in order, never raising for one image."""
    return [_fetch(document_id, url, client=client, timeout_seconds=timeout_seconds)
            for document_id, url in images]


def _fetch(document_id: str, url: str, *, client: httpx.Client,
           timeout_seconds: float) -> FetchedImage:
    limit = settings.JUDGE_IMAGE_MAX_BYTES

    def missing(problem: str) -> FetchedImage:
        return FetchedImage(document_id, url, problem=problem)

    try:
        request = httpx.Request("GET", url, headers={"Accept": "image/*"})
        # An image host is not the provider: no key goes with it, so another origin's
        # redirect may be followed (each hop still passes the network policy).
        with outbound.deadline(outbound_sending.slow_body_seconds(timeout_seconds)):
            response = outbound.send(client, request, allow_cross_origin_redirects=True)
            try:
                if response.status_code != 200:
                    return missing(f"HTTP {response.status_code}")
                content_type = response.headers.get("Content-Type", "")
                if not content_type.lower().startswith("image/"):
                    return missing(f"not an image (Content-Type {content_type or 'none'})")
                body = bytearray()
                for chunk in response.iter_bytes():
                    body += chunk
                    if len(body) > limit:
                        return missing(f"larger than {limit} bytes (JUDGE_IMAGE_MAX_BYTES)")
            finally:
                response.close()
    except (httpx.HTTPError, httpx.InvalidURL) as error:
        refused = outbound.refusal(error) if isinstance(error, httpx.HTTPError) else None
        return missing(str(refused or error) or type(error).__name__)
    return FetchedImage(document_id, url, base64.b64encode(bytes(body)).decode(),
                        size=len(body))


def inline_images(fetched: Sequence[FetchedImage]) -> tuple[tuple[str, str], ...]:
    """(document id, base64 or "" when missing): what providers.Ollama takes."""
    return tuple((image.document_id, image.data) for image in fetched)


def shown_request(request: dict[str, Any], fetched: Sequence[FetchedImage]) -> dict[str, Any]:
    """The redacted request with each inline image replaced by a line naming it."""
    body = request.get("body")
    if not fetched or not isinstance(body, dict):
        return request
    names = [f"[image of document {image.document_id}: {image.size} bytes from {image.url}]"
             for image in fetched if image.data]
    messages = [{**message, "images": names} if "images" in message else message
                for message in body.get("messages", [])]
    return {**request, "body": {**body, "messages": messages}}
