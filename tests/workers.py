"""Start a real `celery worker` process for a test, on Redis."""

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import redis

from tests.conftest import skip_or_fail

REPO = Path(__file__).resolve().parents[1]
# tests.startup gives each xdist worker a database of its own.
DEFAULT_TEST_REDIS = os.environ.get("SEARCHTWEAK_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")


def redis_url() -> str:
    configured = os.environ.get("CELERY_BROKER_URL", "")
    return configured if configured.startswith("redis") else DEFAULT_TEST_REDIS


def require_redis() -> str:
    url = redis_url()
    try:
        redis.Redis.from_url(url, socket_connect_timeout=1).ping()
    except redis.exceptions.RedisError as error:
        skip_or_fail(f"Redis at {url} is unreachable ({error}); the real-worker test needs it")
    return url


@dataclass
class Worker:
    queue: str
    process: subprocess.Popen
    log_path: Path

    def kill(self) -> None:
        """SIGKILL, as the OOM killer or a lost machine would: no shutdown, no ack."""
        self.process.kill()
        self.process.wait(timeout=20)


@contextmanager
def celery_worker(*, broker_url: str, database_url: str | None = None,
                  extra_env: dict[str, str] | None = None) -> Iterator[str]:
    """Run a worker that consumes a private queue; yields the queue's name."""
    with celery_worker_process(broker_url=broker_url, database_url=database_url,
                               extra_env=extra_env) as worker:
        yield worker.queue


@contextmanager
def celery_worker_process(*, broker_url: str, database_url: str | None = None,
                          extra_env: dict[str, str] | None = None,
                          queue: str | None = None) -> Iterator[Worker]:
    """Run a worker that consumes `queue` (a private one unless given); yields it, so a
    test can kill it and start another on the same queue."""
    # A second worker on a given queue logs to a file of its own.
    log_name = f"worker-{queue}-{uuid.uuid4().hex[:6]}.log" if queue else None
    queue = queue or f"test-{uuid.uuid4().hex[:12]}"
    env = {**os.environ, "CELERY_BROKER_URL": broker_url, "CELERY_RESULT_BACKEND": broker_url,
           "CELERY_TASK_DEFAULT_QUEUE": queue, **(extra_env or {})}
    if database_url:
        env["DATABASE_URL"] = database_url
    log_path = REPO / "tests" / "artifacts" / (log_name or f"worker-{queue}.log")
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "searchtweak", "worker", "--pool=solo",
             "--concurrency=1", "--without-gossip", "--without-mingle", "--without-heartbeat",
             "-Q", queue, "--loglevel=INFO", "-n", f"{uuid.uuid4().hex[:8]}-{queue}@%h"],
            cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
        )
        try:
            _wait_until_ready(log_path, process)
            yield Worker(queue=queue, process=process, log_path=log_path)
        finally:
            if process.poll() is None:
                process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _wait_until_ready(log_path: Path, process: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"celery worker exited early:\n{log_path.read_text()}")
        if "ready." in log_path.read_text():
            return
        time.sleep(0.2)
    raise RuntimeError(f"celery worker not ready after {timeout}s:\n{log_path.read_text()}")


def database_url_for_workers() -> str:
    """The URL of the database this test runs on, for a worker process to open."""
    from django.db import connection

    config = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{Path(config['NAME']).resolve()}"
    user = config.get("USER") or "postgres"
    password = f":{config['PASSWORD']}" if config.get("PASSWORD") else ""
    host = config.get("HOST") or "127.0.0.1"
    port = config.get("PORT") or 5432
    return f"postgres://{user}{password}@{host}:{port}/{config['NAME']}"


# Celery reads these before its own configuration.
BROKER_VARIABLES = ("CELERY_BROKER_URL", "CELERY_RESULT_BACKEND")


@contextmanager
def tasks_sent_to(*, broker_url: str, queue: str,
                  result_backend: str | None = None) -> Iterator[None]:
    """Make this process's Celery app publish to Redis (not eagerly) for the duration, its
    results stored at `result_backend` (the broker unless given; "disabled" for none)."""
    from searchtweak.celery import app

    keys = ("broker_url", "result_backend", "task_always_eager", "task_default_queue")
    previous = {key: app.conf[key] for key in keys}
    # Celery reads these variables before its configuration (celery.app.utils.Settings):
    # where they are set, as under .ci/run, a broker given here would otherwise be ignored.
    previous_environ = {name: os.environ.get(name) for name in BROKER_VARIABLES}
    result_backend = result_backend or broker_url
    os.environ.update(CELERY_BROKER_URL=broker_url, CELERY_RESULT_BACKEND=result_backend)
    app.conf.update(broker_url=broker_url, result_backend=result_backend,
                    task_always_eager=False, task_default_queue=queue)
    forget_connections(app)
    try:
        yield
    finally:
        for name, value in previous_environ.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        app.conf.update(previous)
        forget_connections(app)


def forget_connections(app) -> None:
    """Make the next send open new connections.

    Celery caches the producer pool, the default queue and the result backend from the
    configuration at first use: dropped, the next send reads the new configuration, and
    meets no connection a broker outage broke."""
    app._pool = None
    app.__dict__.pop("amqp", None)
    app._backend_cache = None
    app._local.__dict__.pop("backend", None)


def wait_until(condition, what: str, timeout: float = 90.0) -> None:
    """Poll `condition` until it holds; fail naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError(f"not {what} after {timeout} s")
