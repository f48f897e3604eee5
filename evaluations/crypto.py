"""Encryption at rest of endpoint header secrets (API keys, tokens).

The Fernet key is derived from SECRET_KEY, so a database dump alone does not reveal the
secrets; rotating SECRET_KEY makes them unreadable and they must be entered again.
"""

import base64
import hashlib
import json
import re

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings

MASK = "••••"
# Header names whose values are secrets even when entered as ordinary headers.
_SECRET_NAME = re.compile(r"authorization|api[-_]?key|token|secret|password|cookie", re.I)


class SecretsUnreadable(Exception):
    """The stored secrets were encrypted with another SECRET_KEY."""


def fernet(purpose: str) -> Fernet:
    """A Fernet key for one kind of secret, derived from SECRET_KEY; a distinct `purpose`
    keeps one kind's token from decrypting as another's."""
    digest = hashlib.sha256(f"searchtweak.{purpose}:".encode() + settings.SECRET_KEY.encode())
    return Fernet(base64.urlsafe_b64encode(digest.digest()))


def _fernet() -> Fernet:
    return fernet("endpoint-secrets")


def encrypt_headers(headers: dict[str, str]) -> str:
    if not headers:
        return ""
    return _fernet().encrypt(json.dumps(headers).encode()).decode()


def decrypt_headers(token: str) -> dict[str, str]:
    if not token:
        return {}
    try:
        return json.loads(_fernet().decrypt(token.encode()))
    except InvalidToken:
        raise SecretsUnreadable(
            "the secret headers cannot be decrypted (SECRET_KEY changed?); enter them again"
        ) from None


def mask(value: str) -> str:
    """Enough of a secret to recognise it, never enough to use it: '••••abcd'."""
    return MASK + value[-4:] if len(value) >= 12 else MASK


def is_masked(value: str) -> bool:
    return value.startswith(MASK)


def looks_secret(name: str) -> bool:
    return bool(_SECRET_NAME.search(name))
