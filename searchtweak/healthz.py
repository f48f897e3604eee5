"""Liveness of the pieces SearchTweak needs: the database, the Celery broker, and workers
consuming every queue (each queue's heartbeat: a task beat sends to it every
WORKER_HEARTBEAT_SECONDS, whose run stamps the time in Redis)."""

import time

import redis
from django.conf import settings

from searchtweak.models import Team

_HEARTBEAT_KEY = "searchtweak:worker-heartbeat:{queue}"


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


def _redis() -> redis.Redis:
    return redis.Redis.from_url(settings.CELERY_BROKER_URL, socket_timeout=2,
                                socket_connect_timeout=2)


def heartbeat_store(*, queue: str, at: float | None = None) -> None:
    """Stamp `queue` as consumed now (or `at`, seconds since the epoch)."""
    _redis().set(_HEARTBEAT_KEY.format(queue=queue), repr(time.time() if at is None else at),
                 ex=max(settings.WORKER_HEARTBEAT_STALE_SECONDS * 10, 3600))


def workers_status() -> dict[str, str] | str:
    """Per queue of WORKER_QUEUES: "ok" when a worker consumed its heartbeat within
    WORKER_HEARTBEAT_STALE_SECONDS, else "error: …" saying since when; "eager" without a
    broker (nothing to consume)."""
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return "eager"
    queues = list(settings.WORKER_QUEUES)
    try:
        stamps = _redis().mget([_HEARTBEAT_KEY.format(queue=queue) for queue in queues])
    except redis.RedisError as error:
        return f"error: {error.__class__.__name__}: {error}"
    now, stale = time.time(), settings.WORKER_HEARTBEAT_STALE_SECONDS
    report = {}
    for queue, stamp in zip(queues, stamps, strict=True):
        if stamp is None:
            report[queue] = ("error: no worker has consumed this queue's heartbeat (beat "
                             f"sends one every {settings.WORKER_HEARTBEAT_SECONDS} s)")
        elif now - float(stamp) > stale:
            report[queue] = (f"error: stale: no worker has consumed this queue for "
                             f"{now - float(stamp):.0f} s (more than {stale} s)")
        else:
            report[queue] = "ok"
    return report
