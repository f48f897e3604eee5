"""The cache key of one (keyword, document) question to one model with one prompt.

The same question is never asked twice: the key covers everything that shapes the
answer (keyword, the document's fields as shown, guidelines, template text, scale
grades, provider endpoint, model, parameters) and nothing that does not (dict order,
0 written as 0.0). A new KEY_VERSION retires every earlier key if this recipe changes.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

KEY_VERSION = 1


def _canonical(value: Any) -> Any:
    """Plain JSON with integral floats as ints, so 0 and 0.0 hash alike; NaN is refused."""
    if isinstance(value, Mapping):
        return {str(key): _canonical(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_canonical(item) for item in value]
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{value!r} cannot be part of a cache key")
        return int(value) if value.is_integer() else value
    return value


def cache_key(*, keyword: str, fields: Mapping[str, Any], template: str, provider: str,
              model: str, parameters: Mapping[str, Any], guidelines: str = "",
              grades: Sequence[int] = (), image: str = "") -> str:
    """A SHA-256 hex digest; ``provider`` is the provider's identity ("openai <base URL>").
    ``image``: the image URL sent with the document, if one was (absent from the recipe
    otherwise, so keys without images stay as they were)."""
    recipe = {
        "version": KEY_VERSION, "keyword": keyword, "fields": fields, "template": template,
        "guidelines": guidelines, "grades": list(grades), "provider": provider,
        "model": model, "parameters": parameters,
    }
    if image:
        recipe["image"] = image
    text = json.dumps(_canonical(recipe), sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False, allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()
