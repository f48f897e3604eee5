"""Benchmark of a /metrics scrape in multiprocess mode.

Four worker processes (as four gunicorn workers) each count a request under every view
name of the URL configuration in two status classes, time it in the latency histogram, and
add to every other counter; then this process builds the scrape as /metrics does
(`monitoring.collectors.exposition`: the files summed, the recompute lag read from
PostgreSQL, the queue lengths from Redis) 50 times. Target: median <= 50 ms.

    .venv/bin/python bench/metrics_endpoint.py [--workers 4] [--scrapes 50] [--views N] [--http]

With --http the scrapes are GET /metrics to gunicorn (gunicorn.conf.py, as many workers as
--workers) sharing the directory: the time a Prometheus scrape waits, whichever worker
answers, its own counts and the server's middleware included.

It creates (and drops) the database `searchtweak_bench_metrics` on the local PostgreSQL and
reads the queue lengths from Redis database 13 (BENCH_REDIS_URL). Figures print; nothing
is asserted.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _support import (
    REPO,
    bench_database,
    bench_redis,
    database_url,
    drop_database,
    percentile,
    recreate_database,
    setup_django,
)

DB_NAME = bench_database("metrics")
ENV = {"DATABASE_URL": database_url(DB_NAME),
       "CELERY_BROKER_URL": bench_redis("redis://127.0.0.1:6379/13"),
       "DEBUG": "false", "SECRET_KEY": "bench-only", "ALLOWED_HOSTS": "127.0.0.1"}

# One worker's counting: every view, two status classes, a latency each; every other series.
WORKER = """
import json, sys
from searchtweak import instruments as i
for view in json.loads(sys.argv[1]):
    for status in ("2xx", "4xx"):
        i.REQUESTS.labels(view, status).inc()
    i.REQUEST_SECONDS.labels(view).observe(0.02)
for source in ("person", "judge", "reuse"):
    i.GRADES.labels(source).inc()
for outcome in ("ok", "error"):
    i.FETCHES.labels(outcome).inc(); i.JUDGE_CALLS.labels(outcome).inc()
i.FETCH_SECONDS.observe(0.05); i.JUDGE_CALL_SECONDS.observe(2)
for outcome in ("delivered", "retry", "failed"):
    i.WEBHOOK_DELIVERIES.labels(outcome).inc()
i.SCHEDULE_TICKS.inc(); i.SCHEDULE_RUNS_OVERDUE.inc()
"""


def view_names() -> list[str]:
    from django.urls import URLPattern, URLResolver, get_resolver

    names = []

    def walk(patterns, namespace: str) -> None:
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                inner = f"{namespace}{pattern.namespace}:" if pattern.namespace else namespace
                walk(pattern.url_patterns, inner)
            elif isinstance(pattern, URLPattern) and pattern.name:
                names.append(namespace + pattern.name)
    walk(get_resolver().url_patterns, "")
    return sorted(set(names))


def http_scrapes(directory: str, workers: int, scrapes: int) -> tuple[list[float], bytes]:
    """Times of GET /metrics from a gunicorn of `workers` workers counting in `directory`."""
    import socket

    import httpx

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    token = "bench-scrape"
    environment = {**os.environ, **ENV, "PROMETHEUS_MULTIPROC_DIR": directory,
                   "WEB_CONCURRENCY": str(workers), "WEB_BIND": f"127.0.0.1:{port}",
                   "WEB_ACCESS_LOG": "", "METRICS_TOKEN": token,
                   "SECURE_PROXY_SSL_HEADER": "true", "PYTHONPATH": str(REPO)}
    server = subprocess.Popen(
        [str(Path(sys.executable).parent / "gunicorn"), "searchtweak.wsgi:application",
         "--config", "gunicorn.conf.py"], cwd=REPO, env=environment,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    headers = {"Authorization": f"Bearer {token}", "X-Forwarded-Proto": "https"}
    try:
        with httpx.Client(timeout=30, headers=headers) as http:
            deadline = time.monotonic() + 60
            while True:
                try:
                    text = http.get(f"http://127.0.0.1:{port}/metrics").content
                    break
                except httpx.TransportError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.2)
            for _ in range(workers * 3):  # each worker's first scrape reads every file
                http.get(f"http://127.0.0.1:{port}/metrics")
            times = []
            for _ in range(scrapes):
                started = time.perf_counter()
                response = http.get(f"http://127.0.0.1:{port}/metrics")
                times.append((time.perf_counter() - started) * 1000)
                assert response.status_code == 200
            text = response.content
    finally:
        server.terminate()
        server.wait(timeout=30)
    return times, text


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--scrapes", type=int, default=50)
    parser.add_argument("--views", type=int, default=0,
                        help="count only this many views in each worker (0: every view)")
    parser.add_argument("--http", action="store_true",
                        help="scrape a gunicorn of --workers workers over HTTP")
    args = parser.parse_args()
    directory = tempfile.mkdtemp(prefix="bench-metrics-")
    environment = {**ENV, "PROMETHEUS_MULTIPROC_DIR": directory}
    recreate_database(DB_NAME, environment)
    try:
        setup_django(environment)
        from monitoring.collectors import exposition

        views = view_names()[:args.views or None]
        for _ in range(args.workers):
            subprocess.run([sys.executable, "-c", WORKER, json.dumps(views)], cwd=REPO,
                           env={**os.environ, "PYTHONPATH": str(REPO)}, check=True)
        if args.http:
            times, text = http_scrapes(directory, args.workers, args.scrapes)
        else:
            exposition()  # the first scrape opens the connections
            times = []
            for _ in range(args.scrapes):
                started = time.perf_counter()
                text = exposition()
                times.append((time.perf_counter() - started) * 1000)
        files, lines = len(os.listdir(directory)), text.count(b"\n")
        print(f"{len(views)} view names, {args.workers} workers' files ({files} files), "
              f"{len(text):,} bytes, {lines:,} lines per scrape")
        print(f"scrape: median {statistics.median(times):.1f} ms, "
              f"p95 {percentile(times, 0.95):.1f} ms over {args.scrapes} (target <= 50 ms)")
    finally:
        drop_database(DB_NAME)


if __name__ == "__main__":
    main()
