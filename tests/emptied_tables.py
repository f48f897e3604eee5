"""A transactional test's tables emptied by deleting the rows it left, not by `flush`.

Django's TransactionTestCase ends each test with `flush`: on PostgreSQL a TRUNCATE of every
table of the project (each one given new files) and then the post_migrate signal, which
makes the content types and permissions anew. That took 1.2 s a test on this machine's
PostgreSQL, against milliseconds for deleting the few rows a test leaves, and a few
hundred tests end that way.

So the tables that hold rows are found in one statement and their rows deleted in one
transaction, foreign keys checked at its end (PostgreSQL's are deferrable and deferred, as
Django makes them; SQLite is told to defer them). Content types and permissions stay: no
test makes or changes them, so they are what post_migrate would make again. No migration
seeds rows, so empty is what a migrated database is; sequences are not reset, as flush
with reset_sequences=False does not reset them either. A test case that names its
available_apps, asks for reset_sequences or uses serialized_rollback gets Django's flush.
"""

from django.db import connections, transaction
from django.test import TransactionTestCase

KEPT = {"django_content_type", "auth_permission", "django_migrations"}
APPEND_ONLY = "audit_auditevent"


def project_tables(using: str = "default") -> list[str]:
    connection = connections[using]
    return sorted(set(connection.introspection.django_table_names(only_existing=True)) - KEPT)


def tables_with_rows(using: str = "default") -> list[str]:
    """The project's tables that hold rows, but for the content types, permissions and
    migrations, which migrating makes and a test does not change."""
    connection = connections[using]
    quote = connection.ops.quote_name
    tables = project_tables(using)
    probes = " UNION ALL ".join(
        f"SELECT {index} WHERE EXISTS (SELECT 1 FROM {quote(table)})"
        for index, table in enumerate(tables))
    with connection.cursor() as cursor:
        cursor.execute(probes)
        return [tables[index] for (index,) in cursor.fetchall()]


def empty(using: str = "default") -> None:
    connection = connections[using]
    quote = connection.ops.quote_name
    with transaction.atomic(using=using), connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("PRAGMA defer_foreign_keys = ON")
        for table in tables_with_rows(using):
            # The audit trail refuses DELETE on PostgreSQL (audit/migrations/0002); no
            # table refers to it, so TRUNCATE empties it inside this transaction.
            verb = "TRUNCATE" if (connection.vendor == "postgresql"
                                  and table == APPEND_ONLY) else "DELETE FROM"
            cursor.execute(f"{verb} {quote(table)}")


_flush_every_table = TransactionTestCase._fixture_teardown


def _delete_what_the_test_left(test_case: TransactionTestCase) -> None:
    if (test_case.available_apps is not None or test_case.reset_sequences
            or test_case.serialized_rollback):
        _flush_every_table(test_case)
        return
    for using in test_case._databases_names(include_mirrors=False):
        empty(using)


def install() -> None:
    TransactionTestCase._fixture_teardown = _delete_what_the_test_left
