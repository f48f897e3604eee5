"""Reads of the audit trail for a team's owner."""

from datetime import date, datetime, time

from django.db.models import QuerySet
from django.utils import timezone

from audit.models import AuditEvent


def team_events(*, team_id: int, action: str = "", actor: str = "",
                since: date | None = None, until: date | None = None) -> QuerySet[AuditEvent]:
    """The team's events, newest first, narrowed by action, actor's username (exact) and
    days (`since` and `until` inclusive, in the site's time zone). Served by the
    (team_id, -at) index."""
    events = AuditEvent.objects.filter(team_id=team_id).order_by("-at", "-pk")
    if action:
        events = events.filter(action=action)
    if actor:
        events = events.filter(actor_label=actor)
    zone = timezone.get_current_timezone()
    if since is not None:
        events = events.filter(at__gte=datetime.combine(since, time.min, tzinfo=zone))
    if until is not None:
        events = events.filter(at__lt=datetime.combine(until, time.max, tzinfo=zone))
    return events
