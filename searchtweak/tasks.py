from celery import shared_task


@shared_task(name="searchtweak.ping", time_limit=10)
def ping(payload: str) -> str:
    """Echo for health checks and the real-worker test: proves a worker consumed a message."""
    return f"pong:{payload}"
