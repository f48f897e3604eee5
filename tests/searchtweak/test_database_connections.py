"""A database connection kept between requests (CONN_MAX_AGE) that the server cut (a
restart, a failover, an idle timeout) is replaced before the next request uses it."""

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.core.signals import request_finished, request_started
from django.db import connection

from tests.conftest import skip_or_fail


def _cut_from_another_session(pid: int) -> None:
    import psycopg

    config = settings.DATABASES["default"]
    with psycopg.connect(host=config["HOST"] or None, port=config["PORT"] or None,
                         user=config["USER"], password=config["PASSWORD"] or None,
                         dbname=config["NAME"], autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [pid])


@pytest.mark.django_db(transaction=True)
def test_a_cut_connection_costs_a_reconnect_not_a_500():
    if connection.vendor != "postgresql":
        skip_or_fail("terminating a backend needs PostgreSQL: set DATABASE_URL")
    assert settings.DATABASES["default"]["CONN_MAX_AGE"] == 60
    # One request, as the web handler runs it, leaves its connection open for the next.
    request_started.send(sender=None)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    request_finished.send(sender=None)
    _cut_from_another_session(pid)
    # The next request on this worker: without health checks its first query failed.
    request_started.send(sender=None)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        assert cursor.fetchone()[0] != pid
    request_finished.send(sender=None)


@pytest.mark.django_db
def test_the_apps_postgresql_connections_never_compile_statements():
    # JIT compiled a judge's claim for 0.9 s, for 1 ms of work (searchtweak.settings).
    if connection.vendor != "postgresql":
        skip_or_fail("JIT is PostgreSQL's: set DATABASE_URL")
    with connection.cursor() as cursor:
        cursor.execute("SHOW jit")
        assert cursor.fetchone()[0] == "off"


def _database_options(**overrides: str) -> dict:
    env = {name: value for name, value in os.environ.items() if name != "DATABASE_JIT"}
    env.update(DATABASE_URL="postgres://app@db.invalid:5432/searchtweak", **overrides)
    result = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c",
         "from django.conf import settings; print(repr(settings.DATABASES['default']"
         "['OPTIONS']))"],
        cwd=Path(__file__).resolve().parents[2], env=env, capture_output=True, text=True,
        timeout=120)
    assert result.returncode == 0, result.stderr
    return ast.literal_eval(result.stdout.strip().splitlines()[-1])


def test_database_jit_lets_postgresql_compile_again():
    assert _database_options()["options"] == "-c jit=off"
    assert "options" not in _database_options(DATABASE_JIT="true")
