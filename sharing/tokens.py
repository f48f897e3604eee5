"""A share link's token: "<id>.<secret>". The row is found by its id and the secret checked
against the stored keyed hash in constant time, so neither a lookup by secret nor the
time a comparison takes says anything about a stored hash."""

import hmac
import secrets

from django.utils.crypto import salted_hmac

_SALT = "sharing.share-link"


def secret_new() -> str:
    return secrets.token_urlsafe(32)


def secret_hash(secret: str) -> str:
    """The keyed (SECRET_KEY) SHA-256 of the secret: what the row keeps."""
    return salted_hmac(_SALT, secret, algorithm="sha256").hexdigest()


def token_of(link_id: int, secret: str) -> str:
    return f"{link_id}.{secret}"


def token_parts(token: str) -> tuple[int, str] | None:
    """(id, secret) of a well-formed token, else None."""
    link_id, dot, secret = token.partition(".")
    if not dot or not link_id.isdigit() or not secret or len(link_id) > 18:
        return None
    return int(link_id), secret


def secret_matches(secret: str, stored_hash: str) -> bool:
    return hmac.compare_digest(secret_hash(secret), stored_hash)
