from django.utils import timezone
from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication

from searchtweak.models import ApiToken, hash_token_key


class ApiTokenAuthentication(TokenAuthentication):
    """`Authorization: Token <key>` against hashed, revocable, named personal tokens."""

    def authenticate_credentials(self, key: str):
        token = (
            ApiToken.objects.select_related("user")
            .filter(key_hash=hash_token_key(key), revoked_at=None)
            .first()
        )
        if token is None or not token.user.is_active:
            raise exceptions.AuthenticationFailed("Invalid or revoked token.")
        now = timezone.now()
        # Writing on every request would make each API call a write; a minute is precise enough.
        if token.last_used_at is None or (now - token.last_used_at).total_seconds() > 60:
            ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        return token.user, token
