"""searchtweak.queries' statement answers what the ORM answers (SQLite by default;
PostgreSQL with DATABASE_URL)."""

from datetime import timedelta

import pytest
from django.db.models import Q
from django.utils import timezone

from searchtweak import queries, services
from searchtweak.models import ApiToken, hash_token_key
from tests.searchtweak.factories import TeamFactory, UserFactory

pytestmark = pytest.mark.django_db


def orm_token_user_row(*, key_hash: str, stale_before) -> tuple | None:
    token = ApiToken.objects.select_related("user").filter(
        key_hash=key_hash, revoked_at__isnull=True).first()
    if token is None:
        return None
    stale = ApiToken.objects.filter(Q(last_used_at__isnull=True)
                                    | Q(last_used_at__lt=stale_before), pk=token.pk).exists()
    user = token.user
    return (user.pk, user.username, user.is_active, user.current_team_id, token.pk, stale)


def test_token_user_row():
    now = timezone.now()
    user = UserFactory(current_team=TeamFactory())
    fresh, fresh_key = services.api_token_create(user=user, name="fresh")
    ApiToken.objects.filter(pk=fresh.pk).update(last_used_at=now)
    _, never_key = services.api_token_create(user=UserFactory(is_active=False), name="never")
    revoked, revoked_key = services.api_token_create(user=user, name="revoked")
    services.api_token_revoke(token=revoked)
    cases = {fresh_key: False, never_key: True, revoked_key: None, "no-such-key": None}
    for key, stale in cases.items():
        for stale_before in (now - timedelta(seconds=60), now + timedelta(seconds=1)):
            row = queries.token_user_row(key_hash=hash_token_key(key), stale_before=stale_before)
            got = None if row is None else (*row[:2], bool(row[2]), *row[3:5], bool(row[5]))
            expected = orm_token_user_row(key_hash=hash_token_key(key), stale_before=stale_before)
            assert got == expected
            if stale is not None:
                assert got[5] == (stale or stale_before > now)
    assert queries.token_user_row(key_hash=hash_token_key(fresh_key), stale_before=now)[0] == (
        user.pk)
