"""Typed readers for the environment variables that configure SearchTweak.

Each reader raises ImproperlyConfigured with the variable's name when its value cannot
be read as the type asked for, so a typo stops start-up instead of being read as a
default ("yes" is not a boolean).
"""

import os
from collections.abc import Mapping

from django.core.exceptions import ImproperlyConfigured

_TRUE = frozenset({"1", "true", "on"})
_FALSE = frozenset({"0", "false", "off"})


def env_str(name: str, default: str = "", *, environ: Mapping[str, str] | None = None) -> str:
    environ = os.environ if environ is None else environ
    return environ.get(name, default).strip()


def env_bool(name: str, default: bool, *, environ: Mapping[str, str] | None = None) -> bool:
    raw = env_str(name, environ=environ)
    if raw == "":
        return default
    lowered = raw.lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ImproperlyConfigured(
        f"{name}: {raw!r} is not a boolean; use one of true, false, 1, 0, on, off"
    )


def env_int(
    name: str, default: int, *, minimum: int | None = None,
    environ: Mapping[str, str] | None = None,
) -> int:
    raw = env_str(name, environ=environ)
    if raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}: {raw!r} is not an integer") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}: {value} is less than the minimum {minimum}")
    return value


def env_list(
    name: str, default: list[str], *, environ: Mapping[str, str] | None = None
) -> list[str]:
    raw = env_str(name, environ=environ)
    if raw == "":
        return list(default)
    items = [item.strip() for item in raw.split(",")]
    if any(item == "" for item in items):
        raise ImproperlyConfigured(f"{name}: {raw!r} has an empty item; separate values by commas")
    return items


def env_url(
    name: str, *, schemes: tuple[str, ...], environ: Mapping[str, str] | None = None
) -> str:
    """Return the URL in `name`, or "" when unset; reject URLs of another scheme."""
    raw = env_str(name, environ=environ)
    if raw == "":
        return ""
    scheme = raw.split("://", 1)[0].lower() if "://" in raw else ""
    if scheme not in schemes:
        allowed = ", ".join(f"{s}://" for s in schemes)
        raise ImproperlyConfigured(f"{name}: {raw!r} must start with one of {allowed}")
    return raw
