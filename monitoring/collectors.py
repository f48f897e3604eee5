"""What /metrics reports: the counters every process adds to (searchtweak.instruments),
summed over processes in multiprocess mode, and the gauges read from shared state at
scrape time (Celery queue depths in Redis, the recompute's lag in the database)."""

import functools
import logging
from collections.abc import Iterator

import redis
from django.conf import settings
from django.db import DatabaseError
from django.utils import timezone
from prometheus_client import REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from metrics.selectors import oldest_dirty_since
from monitoring import multiprocess
from searchtweak import instruments

# kombu's Redis transport keeps a queue's prioritised messages in lists named
# queue + separator + priority step (0 is the plain name); settings change none of it.
_PRIORITY_SEPARATOR = "\x06\x16"
_PRIORITY_STEPS = (3, 6, 9)

logger = logging.getLogger(__name__)


def redis_queue_keys(queue: str) -> list[str]:
    """The Redis lists that hold `queue`'s waiting messages."""
    return [queue, *(f"{queue}{_PRIORITY_SEPARATOR}{step}" for step in _PRIORITY_STEPS)]


@functools.lru_cache(maxsize=2)
def _broker_client(url: str) -> redis.Redis:
    """One client (and its connection pool) per process and broker: a scrape reuses its
    connection instead of opening one, which was most of the queue lengths' 10 ms."""
    return redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)


def queue_depths() -> dict[str, int]:
    """Messages waiting in each queue some worker consumes (settings.WORKER_QUEUES); empty
    when the broker is not Redis (tasks run eagerly: there is no queue). One round trip."""
    url = settings.CELERY_BROKER_URL
    if not url.startswith(("redis://", "rediss://")):
        return {}
    queues = list(settings.WORKER_QUEUES)
    pipeline = _broker_client(url).pipeline(transaction=False)
    for queue in queues:
        for key in redis_queue_keys(queue):
            pipeline.llen(key)
    lengths = pipeline.execute()
    per_queue = len(_PRIORITY_STEPS) + 1
    return {queue: sum(lengths[i * per_queue:(i + 1) * per_queue])
            for i, queue in enumerate(queues)}


def recompute_lag_seconds() -> float:
    """How long the longest-waiting dirty keyword has waited for its recompute; 0 when
    every keyword is clean."""
    oldest = oldest_dirty_since()
    return 0.0 if oldest is None else max((timezone.now() - oldest).total_seconds(), 0.0)


class SharedStateCollector(Collector):
    """Gauges read at scrape time from what every process shares."""

    def collect(self) -> Iterator[Metric]:
        lag = GaugeMetricFamily(
            "searchtweak_recompute_lag_seconds",
            "Age of the oldest keyword waiting for its metrics' recompute (0: none waits).")
        try:
            lag.add_metric([], recompute_lag_seconds())
        except DatabaseError:
            # The scrape still reports the counters; the missing sample is the alert.
            logger.warning("/metrics could not read the recompute lag", exc_info=True)
        yield lag
        try:
            depths = queue_depths()
            up = 1.0
        except redis.RedisError:
            depths, up = {}, 0.0
        depth = GaugeMetricFamily(
            "searchtweak_celery_queue_length", "Messages waiting in a Celery queue.",
            labels=["queue"])
        for queue, length in depths.items():
            depth.add_metric([queue], length)
        yield depth
        if settings.CELERY_BROKER_URL.startswith(("redis://", "rediss://")):
            broker = GaugeMetricFamily(
                "searchtweak_broker_up", "1 when /metrics could read the queues from Redis.")
            broker.add_metric([], up)
            yield broker


def exposition() -> bytes:
    """The text /metrics answers, in Prometheus's text format."""
    if instruments.MULTIPROCESS_DIR:
        counted = multiprocess.summer.text(instruments.MULTIPROCESS_DIR)
    else:
        counted = generate_latest(REGISTRY)
    shared = CollectorRegistry()
    shared.register(SharedStateCollector())
    return counted + generate_latest(shared)
