"""Reads of the audit trail for a team's owner."""

from datetime import date, datetime, time

from django.db.models import QuerySet
from django.utils import timezone

from audit.models import AuditEvent


def team_events(*, team_id: int, action: str = "", actor: str = "", object_type: str = "",
                since: date | datetime | None = None, until: date | datetime | None = None,
                ) -> QuerySet[AuditEvent]:
    """The team's events, newest first, narrowed by action, actor's username (exact),
    object type and time. `since` and `until` are inclusive: a date takes the whole day
    in the site's time zone, a datetime that instant. Served by the (team_id, -at) index."""
    events = AuditEvent.objects.filter(team_id=team_id).order_by("-at", "-pk")
    if action:
        events = events.filter(action=action)
    if actor:
        events = events.filter(actor_label=actor)
    if object_type:
        events = events.filter(object_type=object_type)
    zone = timezone.get_current_timezone()
    if isinstance(since, datetime):
        events = events.filter(at__gte=since)
    elif since is not None:
        events = events.filter(at__gte=datetime.combine(since, time.min, tzinfo=zone))
    if isinstance(until, datetime):
        events = events.filter(at__lte=until)
    elif until is not None:
        events = events.filter(at__lte=datetime.combine(until, time.max, tzinfo=zone))
    return events
