"""Writing the audit trail: every row goes through audit_record."""

import ipaddress
import re
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.utils import timezone

from audit.context import client_address
from audit.models import Action, AuditEvent

MASK = "********"
# A changed field whose name says it holds a secret is recorded as changed, never its value.
_SECRET_NAME = re.compile(r"(?i)(secret|token|password|passwd|api_?key|key_hash|authorization)")


def changes_masked(before: Mapping[str, Any] | None, after: Mapping[str, Any] | None
                   ) -> dict[str, list[Any]]:
    """{"field": [before, after]} for each field whose value differs (a field missing on
    one side is None there), values of secret-named fields replaced by MASK."""
    before, after = dict(before or {}), dict(after or {})
    changed = {}
    for name in sorted(before.keys() | after.keys()):
        old, new = before.get(name), after.get(name)
        if old == new:
            continue
        if _SECRET_NAME.search(name):
            old, new = (MASK if old is not None else None), (MASK if new is not None else None)
        changed[name] = [old, new]
    return changed


def _address(raw: str | None) -> str | None:
    try:
        return str(ipaddress.ip_address(raw)) if raw else None
    except ValueError:
        return None


def audit_record(*, action: Action | str, actor=None, actor_id: int | None = None,
                 actor_label: str = "",
                 team_id: int | None = None, object_type: str = "", object_id: Any = "",
                 before: Mapping[str, Any] | None = None,
                 after: Mapping[str, Any] | None = None,
                 address: str | None = None) -> AuditEvent:
    """Add one row to the trail, in the caller's transaction (it commits or rolls back with
    what it records). `actor` (or its id): the user who acted, or None (a rule, a worker;
    a failed sign-in names the attempted username in `actor_label`). `address`: the
    client's, else the request's being served (audit.middleware), else none (a worker)."""
    if action not in Action.values:
        raise ValueError(f"unknown audit action {action!r}")
    if actor is None and actor_id is not None:
        actor = get_user_model().objects.filter(pk=actor_id).only("username").first()
    return AuditEvent.objects.create(
        action=action, actor_id=getattr(actor, "pk", actor_id),
        actor_label=(actor_label or getattr(actor, "username", ""))[:150],
        team_id=team_id, object_type=object_type, object_id=str(object_id)[:64],
        client_address=_address(address or client_address.get()),
        changes=changes_masked(before, after))


# Rows one prune transaction deletes: short transactions, and the trigger's per-row check
# is paid in bounded steps.
PRUNE_BATCH = 10_000


def audit_events_prune(*, older_than_days: int, now: datetime | None = None) -> int:
    """Delete the events older than `older_than_days` days before `now`, and record that
    it was done (Action.TRAIL_PRUNED: how many, up to when). The only path by which rows
    leave the trail: on PostgreSQL each batch's transaction sets the
    `searchtweak.audit_prune_before` setting, which the table's trigger requires of a
    DELETE, for rows older than that instant only (audit/migrations/0003). Returns the
    number of rows deleted."""
    if older_than_days < 1:
        raise ValueError("older_than_days must be at least 1")
    cutoff = (now or timezone.now()) - timedelta(days=older_than_days)
    deleted = 0
    while True:
        with transaction.atomic():
            if connection.vendor == "postgresql":
                with connection.cursor() as cursor:
                    # is_local=true: the permission ends with this transaction.
                    cursor.execute("SELECT set_config('searchtweak.audit_prune_before', %s, true)",
                                   [cutoff.isoformat()])
            batch = list(AuditEvent.objects.filter(at__lt=cutoff).order_by("at")
                         .values_list("pk", flat=True)[:PRUNE_BATCH])
            if batch:
                deleted += AuditEvent.objects.filter(pk__in=batch).delete()[0]
        if len(batch) < PRUNE_BATCH:
            break
    if deleted:
        audit_record(action=Action.TRAIL_PRUNED, actor_label="retention",
                     after={"deleted": deleted, "before": cutoff.isoformat()})
    return deleted
