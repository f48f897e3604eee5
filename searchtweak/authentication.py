from datetime import timedelta

from django.db import connection
from django.utils import timezone
from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication

from searchtweak import queries
from searchtweak.models import ApiToken, User, hash_token_key

# Writing on every request would make each API call a write; a minute is precise enough.
TOKEN_TOUCH_INTERVAL = timedelta(seconds=60)


# What the API views read of the caller; other fields load on first use (deferred).
_USER_FIELDS = ["id", "username", "is_active", "current_team_id"]


class ApiTokenAuthentication(TokenAuthentication):
    """`Authorization: Token <key>` against hashed, revocable, named personal tokens."""

    def authenticate_credentials(self, key: str):
        # Every API call runs this: one read of token and user together (queries).
        now = timezone.now()
        row = queries.token_user_row(key_hash=hash_token_key(key),
                                     stale_before=now - TOKEN_TOUCH_INTERVAL)
        if row is None or not row[2]:
            raise exceptions.AuthenticationFailed("Invalid or revoked token.")
        user_id, username, is_active, current_team_id, token_id, stale = row
        user = User.from_db(
            connection.alias, _USER_FIELDS, [user_id, username, bool(is_active), current_team_id])
        if stale:
            ApiToken.objects.filter(pk=token_id).update(last_used_at=now)
        return user, token_id
