"""A judge's API key at rest: encrypted with a key derived from SECRET_KEY (the endpoint
secrets' rule, evaluations.crypto), never shown back; a form only says whether one is set.
"""

from cryptography.fernet import InvalidToken

from evaluations.crypto import SecretsUnreadable, fernet

_PURPOSE = "judge-api-key"


def encrypt_api_key(api_key: str) -> str:
    return fernet(_PURPOSE).encrypt(api_key.encode()).decode() if api_key else ""


def decrypt_api_key(token: str) -> str:
    """The key, "" when none is set; SecretsUnreadable when SECRET_KEY changed since."""
    if not token:
        return ""
    try:
        return fernet(_PURPOSE).decrypt(token.encode()).decode()
    except InvalidToken:
        raise SecretsUnreadable(
            "the judge's API key cannot be decrypted (SECRET_KEY changed?); enter it again"
        ) from None
