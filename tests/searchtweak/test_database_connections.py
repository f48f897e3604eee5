"""A database connection kept between requests (CONN_MAX_AGE) that the server cut (a
restart, a failover, an idle timeout) is replaced before the next request uses it."""

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
