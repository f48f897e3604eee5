"""JSON that clients send and people type, read so that its shape cannot crash the reader
or the database: the one reader of request bodies (`JSONParser`) and of JSON typed in
forms (`json_loads`).

What it refuses, and why:
- nesting deeper than `MAX_DEPTH`: Python's decoder recurses, and 100,000 brackets raise
  RecursionError (a 500) long before the body size limit; nothing SearchTweak stores
  nests more than a few levels.
- NUL (U+0000): PostgreSQL stores it neither in text nor in jsonb.
- lone surrogates ("\\ud800"): they are not text; UTF-8 cannot encode them, so neither
  PostgreSQL nor the JSON renderer echoing them in an error can.
- NaN and Infinity: not JSON, and jsonb refuses them.
"""

import codecs
import json
import re
from collections.abc import Iterator
from typing import Any

from rest_framework import exceptions, parsers

MAX_DEPTH = 64
NESTING_PROBLEM = f"is nested more than {MAX_DEPTH} levels deep"
NUL_PROBLEM = "may not contain a NUL character (U+0000)"
SURROGATE_PROBLEM = ("may not contain a lone surrogate (U+D800 to U+DFFF), which is not a "
                     "character: send text as UTF-8")
NOT_A_NUMBER_PROBLEM = "NaN and Infinity are not JSON numbers."

# A string (escapes included) or a bracket; what lies between them cannot nest.
_TOKENS = re.compile(r'"(?:[^"\\]+|\\.)*"|[\[\]{}]')
_COLON = re.compile(r"\s*:")


class JSONInputError(ValueError):
    """`problem`: a phrase that follows the thing at fault (the API puts it under `field`),
    or, when `sentence`, a whole sentence about the text. `field`: the top-level key of
    an object whose value is at fault, when there is one."""

    def __init__(self, problem: str, *, field: str | None = None, sentence: bool = False,
                 decode_error: json.JSONDecodeError | None = None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.field = field
        self.sentence = sentence
        # For a caller that words a syntax error its own way (one JSON value per line).
        self.decode_error = decode_error

    @property
    def message(self) -> str:
        """The problem as a sentence, for a form's error or the API's `detail`."""
        if self.sentence:
            return self.problem
        subject = "The JSON" if self.field is None else f"The value of {self.field!r}"
        return f"{subject} {self.problem}."


def _printable(key: str) -> str:
    # A key may itself hold the surrogate that is refused; the name must still render.
    return key.encode("utf-8", "backslashreplace").decode("utf-8")


def _too_deep_at(text: str, max_depth: int) -> JSONInputError | None:
    """The nesting problem, scanned without recursing: a decoder would recurse first."""
    if text.count("[") + text.count("{") <= max_depth:
        return None
    depth = 0
    key: str | None = None
    top_is_object = False
    for match in _TOKENS.finditer(text):
        token = match.group()
        if token in "[{":
            if depth == 0:
                top_is_object = token == "{"
            depth += 1
            if depth > max_depth:
                return JSONInputError(NESTING_PROBLEM, field=key if top_is_object else None)
        elif token in "]}":
            depth -= 1
        elif depth == 1 and top_is_object and _COLON.match(text, match.end()):
            try:
                key = _printable(json.loads(token))
            except ValueError:
                key = None
    return None


def _strings(value: Any) -> Iterator[str]:
    """Every key and string inside `value`, without recursing."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            yield from item.keys()
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)


def _unstorable(value: Any) -> str | None:
    for text in _strings(value):
        if "\x00" in text:
            return NUL_PROBLEM
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return SURROGATE_PROBLEM
    return None


def _refuse_constant(name: str) -> None:
    raise ValueError(NOT_A_NUMBER_PROBLEM)


def json_loads(text: str, *, max_depth: int = MAX_DEPTH, storable: bool = True) -> Any:
    """`text` decoded, or JSONInputError naming the problem (and the top-level key at
    fault). `storable`: also refuse NUL and lone surrogates in any key or string, which is
    what every caller that stores or echoes the value needs; a caller that only checks
    the syntax of a template it sends elsewhere passes False."""
    problem = _too_deep_at(text, max_depth)
    if problem:
        raise problem
    try:
        value = json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as error:
        raise JSONInputError(
            f"Not valid JSON at line {error.lineno}, column {error.colno}: {error.msg}.",
            sentence=True, decode_error=error) from None
    except ValueError as error:
        raise JSONInputError(str(error), sentence=True) from None
    except RecursionError:
        # The scan above bounds the depth; this guards a caller already deep in its stack.
        raise JSONInputError(NESTING_PROBLEM) from None
    if storable:
        if isinstance(value, dict):
            for key, item in value.items():
                unstorable = _unstorable([key, item])
                if unstorable:
                    raise JSONInputError(unstorable, field=_printable(key))
        else:
            unstorable = _unstorable(value)
            if unstorable:
                raise JSONInputError(unstorable)
    return value


class JSONParser(parsers.JSONParser):
    """DRF's parser with `json_loads`' limits: a refused body is a 400 naming the
    top-level field at fault (or `detail`), never a RecursionError or an error message
    that cannot be rendered."""

    def parse(self, stream, media_type=None, parser_context=None) -> Any:
        encoding = parsers.get_encoding(parser_context or {})
        try:
            text = codecs.decode(stream.read(), encoding)
        except ValueError as error:
            raise exceptions.ParseError(f"The body is not {encoding} text: {error}") from None
        try:
            return json_loads(text)
        except JSONInputError as error:
            if error.field is not None:
                raise exceptions.ValidationError({error.field: [error.problem]}) from None
            raise exceptions.ParseError(error.message) from None
