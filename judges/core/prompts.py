"""Prompt templates per scale, their rendering for a batch of documents, the answer schema.

Placeholders are ``{{name}}`` (JSON examples in a template keep their single braces).
Rendering is one pass: a value is inserted as given, never escaped and never expanded
again, so a keyword or document that contains ``{{keyword}}`` stays that text. The only
encoding is stated in the templates: each document is one JSON object on one line
(``{"id": ..., "fields": {...}}``), which keeps the boundaries between documents
unambiguous whatever their text holds.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

from metrics.core.scales import Scale

MAX_BATCH_SIZE = 20
PLACEHOLDERS = ("keyword", "guidelines", "documents", "scale")
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


@dataclass(frozen=True)
class JudgePrompt:
    """Everything a provider's build_request needs besides parameters and key."""

    system: str
    user: str
    schema: dict[str, Any]


def _shipped(name: str) -> str:
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


def render(template: str, *, keyword: str, guidelines: str, documents: Sequence[Document],
           scale: Scale) -> str:
    """The user prompt: ``template`` with its placeholders filled in one pass."""
    check_template(template)
    check_documents(documents)
    values = {"keyword": keyword, "guidelines": guidelines,
              "documents": render_documents(documents), "scale": describe_scale(scale)}
    return _PLACEHOLDER.sub(lambda match: values[match.group(1)], template)


def build_prompt(template: str, *, keyword: str, guidelines: str,
                 documents: Sequence[Document], scale: Scale) -> JudgePrompt:
    return JudgePrompt(
        system=system_prompt(),
        user=render(template, keyword=keyword, guidelines=guidelines, documents=documents,
                    scale=scale),
        schema=grades_schema(list(scale.grades)),
    )
