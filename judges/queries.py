"""The judges app's hand-written SQL: whether a judge counts, read FOR SHARE in the
transaction that stores its grades (Django has no FOR SHARE). Table names from the
models' `_meta`; tested against the ORM in tests/judges/test_queries.py."""

from django.db import connection

from judges.models import Judge
from searchtweak import sql

_q = connection.ops.quote_name


def judge_counts_locked(*, judge_id: int) -> bool:
    """Whether the judge counts now (False when it is gone). On PostgreSQL the row stays
    locked FOR SHARE until the caller's transaction ends: a change of `counts` (taken
    FOR UPDATE, judges.trust) waits for it, and every later transaction sees the change.
    SQLite serialises writers, so a plain read does."""
    lock = " FOR SHARE" if sql.is_postgresql() else ""
    row = sql.fetch_row(f'SELECT "counts" FROM {_q(Judge._meta.db_table)} WHERE "id" = %s{lock}',
                        [judge_id])
    return bool(row and row[0])
