"""Prompt templates per scale, their rendering for a batch of documents, the answer schema.

Placeholders are ``{{name}}`` (JSON examples in a template keep their single braces).
Rendering is one pass: a value is inserted as given, never escaped and never expanded
again, so a keyword or document that contains ``{{keyword}}`` stays that text. The only
encoding is stated in the templates: each document is one JSON object on one line
(``{"id": ..., "fields": {...}}``), which keeps the boundaries between documents
unambiguous whatever their text holds.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

from metrics_engine.scales import Scale

MAX_BATCH_SIZE = 20
PLACEHOLDERS = ("keyword", "guidelines", "documents", "scale", "images")
# Without these the model has nothing to grade or nothing to grade against.
REQUIRED_PLACEHOLDERS = ("keyword", "documents")
_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
# A custom (admin-defined) scale has no shipped wording; its template names it via {{scale}}.
CUSTOM_TEMPLATE = "custom"


class PromptError(ValueError):
    """A template or a batch that cannot make a prompt; the message says which part."""


@dataclass(frozen=True)
class Document:
    """One result to grade: the id the answer must quote and the fields the judge sees."""

    id: str
    fields: Mapping[str, Any]
    # The result's image URL; sent only by a judge that sends images, to a template with
    # {{images}} (see build_prompt).
    image: str = ""


@dataclass(frozen=True)
class JudgePrompt:
    """Everything a provider's build_request needs besides parameters and key."""

    system: str
    user: str
    schema: dict[str, Any]
    # (document id, image URL) to send after the user prompt, in the batch's order.
    images: tuple[tuple[str, str], ...] = ()


@functools.cache
def _shipped(name: str) -> str:
    # Read once a process: every call builds its prompt from these (a lane's call threads
    # read them from disk each time before).
    return resources.files("judges.core").joinpath("templates", f"{name}.txt").read_text(
        encoding="utf-8")


def system_prompt() -> str:
    return _shipped("system").strip()


def default_template(scale: Scale) -> str:
    """The shipped template for a built-in scale (templates/<code>.txt), else the custom one."""
    return _shipped(scale.code if scale.is_builtin else CUSTOM_TEMPLATE)


def check_template(template: str) -> None:
    """Raise PromptError for an unknown or malformed placeholder or a missing required one."""
    used = set()
    for match in re.finditer(r"\{\{", template):
        placeholder = _PLACEHOLDER.match(template, match.start())
        if placeholder is None:
            snippet = template[match.start():match.start() + 30].split("\n")[0]
            raise PromptError(f"malformed placeholder at {snippet!r}: write {{{{name}}}} with"
                              f" one of {', '.join(PLACEHOLDERS)}")
        name = placeholder.group(1)
        if name not in PLACEHOLDERS:
            raise PromptError(f"unknown placeholder {{{{{name}}}}} (known: "
                              f"{', '.join(PLACEHOLDERS)})")
        used.add(name)
    missing = [name for name in REQUIRED_PLACEHOLDERS if name not in used]
    if missing:
        raise PromptError("the template must contain "
                          + " and ".join(f"{{{{{name}}}}}" for name in missing))


def check_documents(documents: Sequence[Document]) -> None:
    if not 1 <= len(documents) <= MAX_BATCH_SIZE:
        raise PromptError(f"a batch holds 1 to {MAX_BATCH_SIZE} documents, not {len(documents)}")
    seen: set[str] = set()
    for document in documents:
        if not isinstance(document.id, str) or not document.id:
            raise PromptError(f"document id {document.id!r} is not a non-empty string")
        if document.id in seen:
            raise PromptError(f"document id {document.id!r} appears twice in the batch")
        seen.add(document.id)


def render_documents(documents: Sequence[Document]) -> str:
    """One JSON object a line, in the batch's order, fields in the order given."""
    lines = []
    for document in documents:
        try:
            lines.append(json.dumps({"id": document.id, "fields": dict(document.fields)},
                                    ensure_ascii=False, allow_nan=False))
        except (TypeError, ValueError) as error:
            raise PromptError(f"document {document.id!r} has a field that is not JSON: "
                              f"{error}") from error
    return "\n".join(lines)


def describe_scale(scale: Scale) -> str:
    """One line per grade, ``<grade> = <label>`` where the scale has labels."""
    return "\n".join(f"{grade} = {scale.labels[grade]}" if grade in scale.labels
                     else str(grade) for grade in scale.grades)


def grades_schema(grades: Sequence[int]) -> dict[str, Any]:
    """The JSON schema of an answer: {"grades": [{"id", "grade" in the scale, "reason"}]}.

    Written within what OpenAI's strict mode accepts (every property required, no extra
    ones), which Anthropic tool input and Ollama's format accept too.
    """
    return {
        "type": "object",
        "properties": {"grades": {"type": "array", "items": {
            "type": "object",
            "properties": {
                "id": {"type": "string"},
                "grade": {"type": "integer", "enum": list(grades)},
                "reason": {"type": "string"},
            },
            "required": ["id", "grade", "reason"],
            "additionalProperties": False,
        }}},
        "required": ["grades"],
        "additionalProperties": False,
    }


IMAGES_NOTE = ("The images of the documents that have one follow this text, each after a "
               "line naming its document id.")


def asks_for_images(template: str) -> bool:
    return any(match.group(1) == "images" for match in _PLACEHOLDER.finditer(template))


def render(template: str, *, keyword: str, guidelines: str, documents: Sequence[Document],
           scale: Scale, with_images: bool = False) -> str:
    """The user prompt: ``template`` with its placeholders filled in one pass; {{images}}
    says the images follow when they are sent, and is empty otherwise."""
    check_template(template)
    check_documents(documents)
    values = {"keyword": keyword, "guidelines": guidelines,
              "documents": render_documents(documents), "scale": describe_scale(scale),
              "images": IMAGES_NOTE if with_images else ""}
    return _PLACEHOLDER.sub(lambda match: values[match.group(1)], template)


def images_to_send(template: str, documents: Sequence[Document], *, send_images: bool
                   ) -> tuple[tuple[str, str], ...]:
    """(id, image URL) of the documents with an image, when the judge sends images and the
    template asks for them ({{images}}); else none."""
    if not send_images or not asks_for_images(template):
        return ()
    return tuple((document.id, document.image) for document in documents if document.image)


def build_prompt(template: str, *, keyword: str, guidelines: str,
                 documents: Sequence[Document], scale: Scale,
                 send_images: bool = False) -> JudgePrompt:
    images = images_to_send(template, documents, send_images=send_images)
    return JudgePrompt(
        system=system_prompt(),
        user=render(template, keyword=keyword, guidelines=guidelines, documents=documents,
                    scale=scale, with_images=bool(images)),
        schema=grades_schema(list(scale.grades)),
        images=images,
    )
