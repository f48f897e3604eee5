"""Liveness of the pieces SearchTweak needs: the database and the Celery broker."""

from django.conf import settings

from searchtweak.models import Team


def database_status() -> str:
    try:
        # A real query through the ORM: the connection works and the schema is there.
        Team.objects.exists()
    except Exception as error:  # any driver error means "down"; the message says why
        return f"error: {error.__class__.__name__}: {error}"
    return "ok"


def broker_status() -> str:
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return "eager"
    from searchtweak.celery import app

    try:
        with app.connection_for_write(settings.CELERY_BROKER_URL) as conn:
            conn.ensure_connection(max_retries=1, interval_start=0, timeout=2)
    except Exception as error:
        return f"error: {error.__class__.__name__}: {error}"
    return "ok"
