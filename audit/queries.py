"""The audit trail's one hand-written statement."""

from datetime import datetime

from django.db import connection


def prune_permission_set(*, before: datetime) -> None:
    """Let this transaction delete audit rows older than `before` (PostgreSQL; the table's
    trigger reads the setting, audit/migrations/0003). Transaction-local: it ends with the
    caller's transaction, whose `atomic` block must be open."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT set_config('searchtweak.audit_prune_before', %s, true)",
                       [before.isoformat()])
