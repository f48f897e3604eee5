"""Stage 0 of docs/METRICS.md: transformers between scales, their defaults and validation."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from metrics_engine.errors import MetricInputError
from metrics_engine.scales import BINARY, DETAIL, GRADED, SCALES, Scale, is_integer

Transformer = dict[int, int]
"""Source grade → destination grade, one entry for every grade of the source scale."""

_DEFAULTS: dict[tuple[str, str], Transformer] = {
    (BINARY, GRADED): {0: 0, 1: 3},
    (BINARY, DETAIL): {0: 1, 1: 10},
    (GRADED, BINARY): {0: 0, 1: 1, 2: 1, 3: 1},
    (GRADED, DETAIL): {0: 1, 1: 4, 2: 7, 3: 10},
    (DETAIL, BINARY): {1: 0, **dict.fromkeys(range(2, 11), 1)},
    (DETAIL, GRADED): {1: 0, 2: 1, 3: 1, 4: 1, 5: 2, 6: 2, 7: 2, 8: 3, 9: 3, 10: 3},
}


def transformer_key(src: Scale, dst: Scale) -> str:
    """The key of a transformer in an evaluation's ``transformers``: ``"graded->binary"``."""
    return f"{src.code}->{dst.code}"


def default_transformer(src: Scale | str, dst: Scale | str) -> Transformer | None:
    """The default mapping of docs/METRICS.md stage 0 between two built-in scales.

    Identity when ``src`` and ``dst`` are the same scale; None when there is no default
    (an admin-defined scale needs an explicit transformer before the evaluation starts).
    """
    src_scale = SCALES[src] if isinstance(src, str) else src
    dst_scale = SCALES[dst] if isinstance(dst, str) else dst
    if src_scale == dst_scale:
        return {grade: grade for grade in src_scale.grades}
    default = _DEFAULTS.get((src_scale.code, dst_scale.code))
    if default is None or not (src_scale.is_builtin and dst_scale.is_builtin):
        return None
    return dict(default)


def validate_transformer(mapping: Mapping[Any, Any], src: Scale, dst: Scale) -> Transformer:
    """Check that ``mapping`` maps every grade of ``src`` to a grade of ``dst``; return it.

    Keys may be integers or their decimal strings (JSON objects only have string keys).
    Raises MetricInputError on the field ``transformers.<src>-><dst>`` for an unmapped
    source grade, a key that is not a source grade, or a value outside ``dst``.
    """
    field = f"transformers.{transformer_key(src, dst)}"
    if not isinstance(mapping, Mapping):
        raise MetricInputError(field, "must be an object mapping source grades to grades")
    parsed: Transformer = {}
    for raw_key, raw_value in mapping.items():
        key = _parse_grade_key(raw_key)
        if key is None or key not in src.grades:
            raise MetricInputError(field, f"{raw_key!r} is not a grade of {src.describe()}")
        if key in parsed:
            raise MetricInputError(field, f"grade {key} is mapped twice")
        if not is_integer(raw_value) or int(raw_value) not in dst.grades:
            problem = f"grade {key} maps to {raw_value!r}, which is not a grade of {dst.describe()}"
            raise MetricInputError(field, problem)
        parsed[key] = int(raw_value)
    for grade in src.grades:
        if grade not in parsed:
            raise MetricInputError(field, f"grade {grade} is not mapped")
    return parsed


def _parse_grade_key(raw_key: Any) -> int | None:
    if is_integer(raw_key):
        return int(raw_key)
    if isinstance(raw_key, str):
        text = raw_key.strip()
        if text.lstrip("-").isdigit() and text == str(int(text)):
            return int(text)
    return None


def resolve_transformer(
    src: Scale, dst: Scale, transformers: Mapping[str, Any] | None
) -> Transformer:
    """The mapping that stage 0 applies from the evaluation's scale to a metric's scale.

    An explicit ``transformers["<src>-><dst>"]`` wins over the default; a missing one with
    no default (admin-defined scales) is an error naming that key.
    """
    if src == dst:
        return {grade: grade for grade in src.grades}
    key = transformer_key(src, dst)
    if transformers and key in transformers:
        return validate_transformer(transformers[key], src, dst)
    default = default_transformer(src, dst)
    if default is None:
        raise MetricInputError(f"transformers.{key}", "no default transformer; define one")
    return default


def validate_transformers(transformers: Mapping[str, Any] | None, evaluation_scale: Scale,
                          scales: Mapping[str, Scale] | None = None) -> None:
    """Validate every transformer of an evaluation, used or not (rejected when saved).

    Keys are ``"<src>-><dst>"`` where each side is a built-in scale, the evaluation's own or
    one of ``scales`` (the other scales its team owns).
    """
    if transformers is None:
        return
    if not isinstance(transformers, Mapping):
        raise MetricInputError("transformers", "must be an object keyed by '<src>-><dst>'")
    known = {**(scales or {}), **SCALES, evaluation_scale.code: evaluation_scale}
    for key, mapping in transformers.items():
        parts = key.split("->") if isinstance(key, str) else []
        if len(parts) != 2:
            raise MetricInputError("transformers", f"key {key!r} is not '<src>-><dst>'")
        for code in parts:
            if code not in known:
                raise MetricInputError(f"transformers.{key}", f"unknown scale {code!r}")
        validate_transformer(mapping, known[parts[0]], known[parts[1]])
