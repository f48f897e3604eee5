"""Writing the audit trail: every row goes through audit_record."""

import ipaddress
import json
import re
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.core.serializers.json import DjangoJSONEncoder
from django.db import connection, transaction
from django.utils import timezone

from audit.context import client_address, request_user
from audit.models import Action, AuditEvent
from audit.queries import prune_permission_set

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


# Columns that say nothing an event does not already say (its object, team, actor, time).
_NOT_RECORDED = {"id", "team", "created_by", "created_at", "updated_at", "uploaded_by"}


def fields_of(instance: Any, *, only: tuple[str, ...] = (), omit: tuple[str, ...] = ()
              ) -> dict[str, Any]:
    """A row's column values as JSON values, for an event's before or after: every
    concrete field (foreign keys as ids, under the field's name) but the id, team, creator
    and timestamps, or just `only`. Secret columns are masked later, by name."""
    values = {}
    for field in instance._meta.concrete_fields:
        if only and field.name not in only:
            continue
        if (not only and field.name in _NOT_RECORDED) or field.name in omit:
            continue
        values[field.name] = field.value_from_object(instance)
    return json.loads(json.dumps(values, cls=DjangoJSONEncoder))


def _request_actor() -> Any:
    reader = request_user.get()
    user = reader() if reader is not None else None
    return user if getattr(user, "is_authenticated", False) else None


def audit_object(*, action: Action | str, instance: Any, object_type: str,
                 before: Mapping[str, Any] | None = None,
                 after: Mapping[str, Any] | None = None, actor=None,
                 team_id: int | None = None) -> AuditEvent:
    """audit_record for an action on one row: its team (the row's `team_id` unless given)
    and id. The actor is `actor`, else the user of the request being served (a person or
    an API token's owner), else none (a worker, a command)."""
    return audit_record(
        action=action, actor=actor if actor is not None else _request_actor(),
        team_id=team_id if team_id is not None else getattr(instance, "team_id", None),
        object_type=object_type, object_id=instance.pk, before=before, after=after)


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
                prune_permission_set(before=cutoff)
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
