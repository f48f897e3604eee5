from celery import shared_task

from searchtweak import healthz


@shared_task(name="searchtweak.ping", time_limit=10)
def ping(payload: str) -> str:
    """Echo for health checks and the real-worker test: proves a worker consumed a message."""
    return f"pong:{payload}"


@shared_task(name="searchtweak.worker_heartbeat", time_limit=10, ignore_result=True)
def worker_heartbeat(queue: str) -> None:
    """Beat sends one to each queue (settings.WORKER_QUEUES): running it is the proof that
    a worker consumes that queue, which /healthz reads."""
    healthz.heartbeat_store(queue=queue)
