"""What a test run must settle before pytest loads its plugins and pytest-django imports
the settings (which read CELERY_BROKER_URL once). Loaded first, with `-p tests.startup`
in pyproject's addopts.

1. Bytecode is cached. With PYTHONDONTWRITEBYTECODE set (some shells and images set it),
   every run compiled the app and pytest rewrote and compiled every test module again:
   about 8 of the 11 s that one small test file took.
2. Each pytest-xdist worker has a Redis database of its own. The test database needs
   nothing here: pytest-django gives each worker its own (`_gw0`, `_gw1`, ...). Two workers
   on one Redis database would share every key that carries a primary key: both create
   endpoint 1, and the outbound limiter would count their requests together. Redis has 16
   numbered databases; 0 is left to `make run` and `.ci/run`'s default, and 15 to a run
   without xdist (tests.workers.DEFAULT_TEST_REDIS), so workers take 1 to 14.
3. The garbage collector leaves alone what collection built. Every module, fixture
   definition and test item is alive for the whole run; Python's full collections walked
   them all again and again (in tests/metrics 45 full collections of ~0.6 s each, 35 s of
   GC in 210 s of CPU). After collection they are frozen (`gc.freeze()`: kept out of every
   later collection), and the youngest generation is collected after 50,000 allocations
   rather than 700: 11 s of GC there (docs/dev/testing.md).
"""

import gc
import os
import re
import sys

REDIS_DATABASES_FOR_WORKERS = 14


def worker_index(worker_id: str) -> int | None:
    """0 for `gw0`, 1 for `gw1`, ...; None outside xdist (or for its controller)."""
    match = re.fullmatch(r"gw(\d+)", worker_id)
    return int(match.group(1)) if match else None


def redis_url_for_worker(url: str, index: int) -> str:
    """`url` with its database number replaced by this worker's own (1 to 14).

    More than 14 workers would share databases; `make test` caps them with --maxprocesses.
    """
    database = 1 + index % REDIS_DATABASES_FOR_WORKERS
    base, _, _ = url.partition("?")
    query = url[len(base):]
    match = re.fullmatch(r"(rediss?://[^/]*)(/\d*)?", base)
    if match is None:
        raise ValueError(f"not a Redis URL: {url!r}")
    return f"{match.group(1)}/{database}{query}"


def _isolate_this_worker() -> None:
    index = worker_index(os.environ.get("PYTEST_XDIST_WORKER", ""))
    if index is None:
        return
    for name in ("CELERY_BROKER_URL", "CELERY_RESULT_BACKEND", "OUTBOUND_LIMITS_REDIS_URL"):
        url = os.environ.get(name, "")
        if url.startswith(("redis://", "rediss://")):
            os.environ[name] = redis_url_for_worker(url, index)
    # tests.workers falls back to this when no broker is configured (the SQLite default).
    os.environ.setdefault("SEARCHTWEAK_TEST_REDIS_URL",
                          redis_url_for_worker("redis://127.0.0.1:6379/15", index))


sys.dont_write_bytecode = False
_isolate_this_worker()


GC_THRESHOLDS = (50_000, 50, 20)


def pytest_collection_finish(session) -> None:
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
