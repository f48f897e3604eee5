"""The identity provider's endpoints, read from its discovery document.

The document (OIDC_DISCOVERY_URL) names the authorization, token, userinfo and JWKS
endpoints and the issuer; it is fetched when a sign-in first needs it and kept for
DISCOVERY_TTL seconds in this process, so a provider that rotates an endpoint is followed
within the hour and a sign-in costs no extra round trip. Nothing is fetched at start-up:
a provider that is down must not stop the app (superusers can still sign in).
"""

import threading
import time
from dataclasses import dataclass

import requests
from django.conf import settings

DISCOVERY_TTL = 3600.0

_lock = threading.Lock()
_cache: dict[str, tuple[float, "Provider"]] = {}


class ProviderUnavailable(Exception):
    """The discovery document could not be read or lacks an endpoint sign-in needs."""


@dataclass(frozen=True)
class Provider:
    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    userinfo_endpoint: str
    jwks_uri: str


def sso_enabled() -> bool:
    return bool(settings.OIDC_DISCOVERY_URL)


def provider() -> Provider:
    """The configured provider's endpoints (cached); ProviderUnavailable if unreadable."""
    url = settings.OIDC_DISCOVERY_URL
    now = time.monotonic()
    with _lock:
        cached = _cache.get(url)
        if cached and now - cached[0] < DISCOVERY_TTL:
            return cached[1]
    try:
        response = requests.get(url, timeout=settings.OIDC_TIMEOUT)
        response.raise_for_status()
        document = response.json()
        found = Provider(**{name: str(document[name]) for name in (
            "issuer", "authorization_endpoint", "token_endpoint", "userinfo_endpoint",
            "jwks_uri")})
    except (requests.RequestException, ValueError, KeyError, TypeError) as error:
        raise ProviderUnavailable(f"the provider's discovery document: {error}") from error
    with _lock:
        _cache[url] = (now, found)
    return found


def provider_forget() -> None:
    """Drop the cached documents (tests start providers of their own)."""
    with _lock:
        _cache.clear()
