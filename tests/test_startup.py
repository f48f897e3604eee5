"""What tests.startup settles before the first test: a Redis database per xdist worker, and
a garbage collector that leaves collection's objects alone."""

import gc

import pytest

from tests.startup import GC_THRESHOLDS, redis_url_for_worker, worker_index


def test_what_collection_built_is_frozen_and_the_young_are_collected_less_often():
    # Set by the pytest_collection_finish hook of this very run.
    assert gc.get_threshold() == GC_THRESHOLDS
    assert gc.get_freeze_count() > 10_000


def test_each_worker_has_a_redis_database_of_its_own_from_1_to_14():
    assert [worker_index(name) for name in ("gw0", "gw13", "master", "")] == [0, 13, None, None]
    assert redis_url_for_worker("redis://127.0.0.1:6379/0", 0) == "redis://127.0.0.1:6379/1"
    assert redis_url_for_worker("redis://h:1/0?x=1", 13) == "redis://h:1/14?x=1"
    assert redis_url_for_worker("rediss://h", 14) == "rediss://h/1"
    with pytest.raises(ValueError, match="not a Redis URL"):
        redis_url_for_worker("amqp://h/0", 0)
