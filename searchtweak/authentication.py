from datetime import timedelta

from django.db import connection
from django.utils import timezone
from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication

from searchtweak import sql
from searchtweak.models import ApiToken, User, hash_token_key

# Writing on every request would make each API call a write; a minute is precise enough.
TOKEN_TOUCH_INTERVAL = timedelta(seconds=60)


# What the API views read of the caller; other fields load on first use (deferred).
_USER_FIELDS = ["id", "username", "is_active", "current_team_id"]
_TOKEN_USER_SQL = (
    'SELECT u."id", u."username", u."is_active", u."current_team_id", t."id",'
    ' (t."last_used_at" IS NULL OR t."last_used_at" < %s)'
    ' FROM "searchtweak_apitoken" t JOIN "searchtweak_user" u ON u."id" = t."user_id"'
    ' WHERE t."key_hash" = %s AND t."revoked_at" IS NULL'
)


class ApiTokenAuthentication(TokenAuthentication):
    """`Authorization: Token <key>` against hashed, revocable, named personal tokens."""

    def authenticate_credentials(self, key: str):
        # Every API call runs this: one raw read of token and user together (the ORM's
        # query building cost more than the query).
        now = timezone.now()
        row = sql.fetch_row(_TOKEN_USER_SQL, [
            sql.time_param(now - TOKEN_TOUCH_INTERVAL), hash_token_key(key)])
        if row is None or not row[2]:
            raise exceptions.AuthenticationFailed("Invalid or revoked token.")
        user_id, username, is_active, current_team_id, token_id, stale = row
        user = User.from_db(
            connection.alias, _USER_FIELDS, [user_id, username, bool(is_active), current_team_id])
        if stale:
            ApiToken.objects.filter(pk=token_id).update(last_used_at=now)
        return user, token_id
