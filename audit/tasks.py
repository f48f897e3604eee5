from celery import shared_task
from django.conf import settings

from audit.services import audit_events_prune


@shared_task(name="audit.prune_expired", time_limit=1800, soft_time_limit=1700)
def prune_expired() -> int:
    """Beat's daily retention run: AUDIT_RETENTION_DAYS; 0 keeps everything."""
    if settings.AUDIT_RETENTION_DAYS <= 0:
        return 0
    return audit_events_prune(older_than_days=settings.AUDIT_RETENTION_DAYS)
