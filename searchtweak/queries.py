"""The searchtweak app's hand-written SQL: the API token check every API request runs
(the ORM's query building cost more than the query: bench/grading.py). Table names from
the models' `_meta`; tested against the ORM in tests/searchtweak/test_queries.py."""

from datetime import datetime

from django.db import connection

from searchtweak import sql
from searchtweak.models import ApiToken, User

_q = connection.ops.quote_name
_TOKEN_USER_SQL = (
    'SELECT u."id", u."username", u."is_active", u."current_team_id", t."id",'
    ' (t."last_used_at" IS NULL OR t."last_used_at" < %s)'
    f' FROM {_q(ApiToken._meta.db_table)} t JOIN {_q(User._meta.db_table)} u'
    ' ON u."id" = t."user_id" WHERE t."key_hash" = %s AND t."revoked_at" IS NULL'
)


def token_user_row(*, key_hash: str, stale_before: datetime) -> tuple | None:
    """(user id, username, is_active, current_team_id, token id, last used before
    `stale_before` or never) of the unrevoked token with this hash, or None."""
    return sql.fetch_row(_TOKEN_USER_SQL, [sql.time_param(stale_before), key_hash])
