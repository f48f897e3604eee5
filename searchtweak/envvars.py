"""Typed readers for the environment variables that configure SearchTweak.

Each reader raises ImproperlyConfigured with the variable's name when its value cannot
be read as the type asked for, so a typo stops start-up instead of being read as a
default ("yes" is not a boolean).
"""

import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import SplitResult, parse_qs, unquote, urlsplit

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


def env_behind_tls_proxy(*, environ: Mapping[str, str] | None = None) -> bool:
    """SECURE_PROXY_SSL_HEADER: a proxy in front terminates TLS and sets X-Forwarded-Proto.
    Read once here for both readers of that header, Django (settings) and gunicorn
    (gunicorn.conf.py), so neither trusts it while the other does not."""
    return env_bool("SECURE_PROXY_SSL_HEADER", default=False, environ=environ)


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


def env_networks(
    name: str, default: list[str], *, environ: Mapping[str, str] | None = None
) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    """Comma-separated CIDR networks ("169.254.0.0/16,fe80::/10"); a bare address is a /32
    or /128."""
    networks = []
    for item in env_list(name, default, environ=environ):
        try:
            networks.append(ipaddress.ip_network(item, strict=False))
        except ValueError:
            raise ImproperlyConfigured(f"{name}: {item!r} is not an IP network") from None
    return networks


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


@dataclass(frozen=True)
class EmailSettings:
    """Django's EMAIL_* settings, as read from one URL."""

    backend: str
    host: str = "localhost"
    port: int = 25
    username: str = ""
    password: str = ""
    use_tls: bool = False
    use_ssl: bool = False


_EMAIL_BACKENDS = {
    "smtp": "django.core.mail.backends.smtp.EmailBackend",
    "smtps": "django.core.mail.backends.smtp.EmailBackend",
    "console": "django.core.mail.backends.console.EmailBackend",
}


def env_email_url(
    name: str, *, environ: Mapping[str, str] | None = None
) -> EmailSettings | None:
    """Read a mail server from a URL, or None when unset.

    smtp://user:pass@host:587?tls=true  (STARTTLS; port 25 when omitted)
    smtps://user:pass@host              (TLS from the start; port 465 when omitted)
    console://                          (print each mail on standard output)
    The user and password are percent-encoded, as in any URL ("@" is %40).
    """
    raw = env_str(name, environ=environ)
    if raw == "":
        return None
    parts = urlsplit(raw)
    scheme = parts.scheme.lower()
    if "://" not in raw or scheme not in _EMAIL_BACKENDS:
        raise ImproperlyConfigured(
            f"{name}: {_without_password(parts, raw)!r} must start with one of "
            + ", ".join(f"{s}://" for s in _EMAIL_BACKENDS)
        )
    if scheme == "console":
        return EmailSettings(backend=_EMAIL_BACKENDS[scheme])
    shown = _without_password(parts, raw)
    try:
        port = parts.port
    except ValueError:
        raise ImproperlyConfigured(f"{name}: {shown!r} has a port that is not 1-65535") from None
    if port == 0:
        raise ImproperlyConfigured(f"{name}: {shown!r} has a port that is not 1-65535")
    if not parts.hostname:
        raise ImproperlyConfigured(f"{name}: {shown!r} names no host")
    options = {}
    for key, values in parse_qs(parts.query, keep_blank_values=True).items():
        if key not in ("tls", "ssl"):
            raise ImproperlyConfigured(f"{name}: unknown option {key!r}; use tls or ssl")
        options[key] = env_bool(f"{name} option {key}", False, environ={
            f"{name} option {key}": values[-1]})
    use_ssl = scheme == "smtps" or options.get("ssl", False)
    use_tls = options.get("tls", False)
    if use_ssl and use_tls:
        raise ImproperlyConfigured(
            f"{name}: tls (STARTTLS) and ssl (smtps) exclude each other; choose one")
    return EmailSettings(
        backend=_EMAIL_BACKENDS[scheme],
        host=parts.hostname,
        port=port or (465 if use_ssl else 25),
        username=unquote(parts.username or ""),
        password=unquote(parts.password or ""),
        use_tls=use_tls,
        use_ssl=use_ssl,
    )


def _without_password(parts: SplitResult, raw: str) -> str:
    """The URL for an error message: its password stays out of logs."""
    if parts.password is None:
        return raw
    return raw.replace(f":{parts.password}@", ":***@", 1)


# Single sign-on's OIDC_GROUP_ROLES (settings; sso.services applies it). Each item is
# `group=team-id:role`: members of the provider's `group` get `role` in the team with that
# id. A group may appear in several items (several teams), a team under several groups.
# searchtweak.models.Role's values, highest first: settings cannot import models (a test
# keeps the two in step).
TEAM_ROLES = ("owner", "admin", "lead", "grader", "viewer")


@dataclass(frozen=True)
class GroupRole:
    group: str
    team_id: int
    role: str


def group_roles_parse(items: list[str]) -> tuple[GroupRole, ...]:
    """The mapping of OIDC_GROUP_ROLES's comma-separated items; ImproperlyConfigured names
    the first item that is not `group=team-id:role` with a known role."""
    mapping = []
    for item in items:
        group, equals, target = item.rpartition("=")
        team, colon, role = target.partition(":")
        if not (equals and colon and group.strip() and team.strip().isdigit()
                and role.strip() in TEAM_ROLES):
            raise ImproperlyConfigured(
                f"OIDC_GROUP_ROLES: {item!r} is not group=team-id:role with role one of "
                + ", ".join(TEAM_ROLES))
        mapping.append(GroupRole(group=group.strip(), team_id=int(team), role=role.strip()))
    return tuple(mapping)
