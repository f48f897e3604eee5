"""The test database's commits are not synced to disk on SQLite (tests/conftest.py)."""

import pytest
from django.db import connection


@pytest.mark.django_db
def test_only_the_sqlite_test_database_commits_without_syncing_the_disk():
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("PRAGMA synchronous")
            assert cursor.fetchone() == (0,)  # OFF
        else:
            cursor.execute("SHOW synchronous_commit")
            assert cursor.fetchone() == ("on",)
