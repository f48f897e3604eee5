"""Writing the audit trail: every row goes through audit_record."""

import ipaddress
import re
from collections.abc import Mapping
from typing import Any

from django.contrib.auth import get_user_model

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
