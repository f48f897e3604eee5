"""Reading documents out of a search engine's JSON answer with JMESPath expressions.

A mapper is {"documents": <expr to the list>, "id": <expr in one document>, "name": …,
"image": … or null, "fields": {label: expr}}. Every error names the mapper field that
failed ("mapper.id: …") so the Test page and the keyword's fetch error point at it.
"""

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jmespath
from jmespath.exceptions import JMESPathError

PRESETS: dict[str, dict[str, Any]] = {
    "elasticsearch": {
        "label": "Elasticsearch / OpenSearch",
        "documents": "hits.hits", "id": "_id", "name": "_source.title",
        "image": "_source.image", "fields": {"Description": "_source.description"},
    },
    "solr": {
        "label": "Solr",
        "documents": "response.docs", "id": "id", "name": "title",
        "image": None, "fields": {},
    },
    "json_list": {
        "label": "Generic JSON list",
        "documents": "@", "id": "id", "name": "name", "image": None, "fields": {},
    },
    # The app's own /demo/search (evaluations.demo); the endpoint form adds its URL on the
    # current host, which only the request knows.
    "demo": {
        "label": "SearchTweak demo engine",
        "documents": "hits", "id": "id", "name": "title", "image": "image",
        "fields": {"Category": "category", "Brand": "brand", "Price": "price",
                   "Description": "description"},
    },
}
MAX_ID_LENGTH = 500


class MapperError(Exception):
    def __init__(self, field: str, problem: str) -> None:
        self.field = field
        self.problem = problem
        super().__init__(f"{field}: {problem}")


@dataclass
class Document:
    doc_id: str
    name: str
    image: str
    fields: dict[str, Any] = field(default_factory=dict)


def preset_mapper(preset: str) -> dict[str, Any]:
    return {key: value for key, value in PRESETS[preset].items() if key != "label"}


def validate_mapper(mapper: Any) -> dict[str, Any]:
    """Check the mapper's shape and compile every expression; return it normalised.

    Raises the first problem; mapper_problems lists them all."""
    problems = mapper_problems(mapper)
    if problems:
        field_name, problem = next(iter(problems.items()))
        raise MapperError(field_name, problem)
    return _normalised(mapper)


def mapper_problems(mapper: Any) -> dict[str, str]:
    """Every problem of the mapper, by field ("mapper.id", "mapper.fields.Price"), so a form
    can name each bad field in one answer; empty when the mapper is valid."""
    if not isinstance(mapper, dict):
        return {"mapper": "must be an object"}
    problems: dict[str, str] = {}
    unknown = sorted(set(mapper) - {"documents", "id", "name", "image", "fields"})
    if unknown:
        problems[f"mapper.{unknown[0]}"] = ("unknown key (known: documents, id, name, image, "
                                            "fields)")
    for key in ("documents", "id", "name"):
        expression = mapper.get(key)
        if not isinstance(expression, str) or not expression.strip():
            problems[f"mapper.{key}"] = "is required"
        else:
            _note_problem(problems, f"mapper.{key}", expression.strip())
    image = mapper.get("image")
    if image is not None and not isinstance(image, str):
        problems["mapper.image"] = "must be an expression or null"
    elif image and image.strip():
        _note_problem(problems, "mapper.image", image.strip())
    fields = mapper.get("fields") or {}
    if not isinstance(fields, dict):
        problems["mapper.fields"] = "must be an object {label: expression}"
        return problems
    for label, expression in fields.items():
        if not str(label).strip() or not isinstance(expression, str) or not expression.strip():
            problems[f"mapper.fields.{label}"] = "needs a label and an expression"
        elif "\x00" in str(label):
            problems[f"mapper.fields.{label}"] = _NUL_PROBLEM
        else:
            _note_problem(problems, f"mapper.fields.{label}", expression.strip())
    return problems


# PostgreSQL's jsonb cannot hold U+0000: storing one would fail the whole request.
_NUL_PROBLEM = "may not contain a NUL character (U+0000)"


def _note_problem(problems: dict[str, str], field_name: str, expression: str) -> None:
    if "\x00" in expression:
        problems[field_name] = _NUL_PROBLEM
        return
    try:
        _compiled(field_name, expression)
    except MapperError as error:
        problems[field_name] = error.problem


def _normalised(mapper: dict[str, Any]) -> dict[str, Any]:
    image = mapper.get("image")
    return {
        "documents": mapper["documents"].strip(), "id": mapper["id"].strip(),
        "name": mapper["name"].strip(), "image": image.strip() if image and image.strip() else None,
        "fields": {str(label).strip(): expression.strip()
                   for label, expression in (mapper.get("fields") or {}).items()},
    }


# A compiled expression: the JSON value it finds in a JSON value (None for nothing).
Search = Callable[[Any], Any]


def _compiled(field_name: str, expression: str) -> Search:
    try:
        return _search_of(expression)
    except JMESPathError as error:
        raise MapperError(field_name, f"invalid JMESPath {expression!r}: "
                          f"{jmespath_problem(error, expression)}") from None
    except RecursionError:
        # jmespath's parser recurses once per nesting level: "((((…" exhausts the stack.
        raise MapperError(field_name, "invalid JMESPath: nested too deeply") from None


@functools.lru_cache(maxsize=1024)
def _search_of(expression: str) -> Search:
    """The expression's search. Most mappers are plain paths of names ("_id",
    "_source.title", "@"): those are read here, because jmespath builds a new interpreter
    for every search (about 2 µs, twenty-odd searches a keyword, a few percent of a large
    fetch's CPU). The read gives what jmespath's would: each name's value, None once a step
    is not an object."""
    parsed = jmespath.compile(expression)
    names = _plain_path(parsed.parsed)
    if names is None:
        return parsed.search
    return functools.partial(_path_value, names)


def _plain_path(node: dict[str, Any]) -> tuple[str, ...] | None:
    if node["type"] == "current":
        return ()
    if node["type"] == "field":
        return (node["value"],)
    if node["type"] == "subexpression" and all(
            child["type"] == "field" for child in node["children"]):
        return tuple(child["value"] for child in node["children"])
    return None


def _path_value(names: tuple[str, ...], value: Any) -> Any:
    for name in names:
        try:
            value = value.get(name)
        except AttributeError:  # as jmespath's field: a list, a string or None has no name
            return None
    return value


def jmespath_problem(error: JMESPathError, expression: str) -> str:
    """jmespath's whole message on one line: its first line, then where the error is (the
    library draws a caret under the expression on further lines, lost in one line of HTML)."""
    head = str(error).splitlines()[0].rstrip(":").removesuffix(", for expression")
    position = getattr(error, "lex_position", None)
    if not isinstance(position, int):
        return head
    if "at column" not in head:
        head += f" at column {position}"
    return f"{head}: {expression[:position]}⟨here⟩{expression[position:]}"


def map_documents(mapper: dict[str, Any], data: Any, *, limit: int) -> list[Document]:
    """The first `limit` documents of `data`, ids unique (a repeated id keeps its first rank)."""
    found = _compiled("mapper.documents", mapper["documents"])(data)
    if found is None:
        raise MapperError("mapper.documents", f"{mapper['documents']!r} found nothing in the "
                          "response")
    if not isinstance(found, list):
        raise MapperError("mapper.documents", f"{mapper['documents']!r} found a "
                          f"{_json_type(found)}, not a list")
    id_expr = _compiled("mapper.id", mapper["id"])
    name_expr = _compiled("mapper.name", mapper["name"])
    image_expr = _compiled("mapper.image", mapper["image"]) if mapper.get("image") else None
    field_exprs = {label: _compiled(f"mapper.fields.{label}", expression)
                   for label, expression in (mapper.get("fields") or {}).items()}
    documents: list[Document] = []
    seen: set[str] = set()
    for index, item in enumerate(found, start=1):
        doc_id = _scalar_text(id_expr(item))
        if doc_id is None:
            raise MapperError("mapper.id", f"{mapper['id']!r} found no id (a string or a "
                              f"number) in document {index}")
        if len(doc_id) > MAX_ID_LENGTH:
            raise MapperError("mapper.id", f"the id of document {index} is longer than "
                              f"{MAX_ID_LENGTH} characters")
        if doc_id in seen:
            continue
        seen.add(doc_id)
        name = _scalar_text(name_expr(item)) or ""
        image = (_scalar_text(image_expr(item)) or "") if image_expr else ""
        fields = {label: _json_value(expr(item)) for label, expr in field_exprs.items()}
        documents.append(Document(doc_id=doc_id, name=name, image=image, fields=fields))
        if len(documents) >= limit:
            break
    return documents


def _scalar_text(value: Any) -> str | None:
    # Engines return ids as numbers as often as strings; a bool or an object is no id.
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    if isinstance(value, str):
        return value if value.strip() else None
    return None


def _json_value(value: Any) -> Any:
    """A field value as stored in Snapshot.fields: JSON scalars as they are, else compact JSON."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return json.dumps(value, ensure_ascii=False)[:2000]


def _json_type(value: Any) -> str:
    return {dict: "object", str: "string", int: "number", float: "number",
            bool: "boolean"}.get(type(value), type(value).__name__)
