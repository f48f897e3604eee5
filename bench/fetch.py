"""Fetch throughput: 1,000 keywords against a local endpoint that answers in 50 ms.

    .venv/bin/python bench/fetch.py                   # real worker if Redis answers, else eager
    .venv/bin/python bench/fetch.py --mode eager --keywords 1000 --latency-ms 50

Target (issue 4): every keyword fetched in <= 10 s with the default concurrency
(FETCH_CONCURRENCY_PER_ENDPOINT), and the page stays responsive meanwhile.

It serves a search endpoint on a free 127.0.0.1 port (ThreadingHTTPServer, 10 results per
query after a 50 ms sleep), creates a throw-away SQLite database (or uses --database-url,
e.g. a PostgreSQL database it may fill), migrates it, creates an evaluation of N keywords
and starts it. "worker" mode sends the fetch tasks through Redis to a real
`celery worker` process (--pool=solo, as tests/workers.py); "eager" mode runs them in this
process, as the embedded default does without a broker. While it fetches, this process
polls the evaluation's progress page through Django's test client every 100 ms and
reports that page's latency (responsiveness). The total is from the start request to the
evaluation becoming active with every keyword stored.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from _support import bench_redis  # noqa: E402

DEFAULT_REDIS = "redis://127.0.0.1:6379/13"


def serve(latency: float) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:
            pass

        def do_GET(self) -> None:
            query = parse_qs(urlsplit(self.path).query).get("q", [""])[0]
            time.sleep(latency)
            body = json.dumps({"hits": [{"id": f"{query}-{n}", "title": f"{query} #{n}"}
                                        for n in range(1, 11)]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.request_queue_size = 128
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def redis_reachable(url: str) -> bool:
    try:
        import redis

        redis.Redis.from_url(url, socket_connect_timeout=1).ping()
        return True
    except Exception:
        return False


def start_worker(env: dict[str, str], queue: str, log_path: Path) -> subprocess.Popen:
    log = open(log_path, "w")  # noqa: SIM115 (closed with the process)
    process = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "searchtweak", "worker", "--pool=solo",
         "--without-gossip", "--without-mingle", "--without-heartbeat", "-Q", queue,
         "--loglevel=WARNING", "-n", f"{queue}@%h"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    # Ready once the worker has connected; celery logs nothing at WARNING, so ping it.
    from searchtweak.celery import app

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"celery worker exited early, see {log_path}")
        if app.control.ping(destination=[f"{queue}@{os.uname().nodename}"], timeout=0.5):
            return process
    raise SystemExit(f"celery worker not ready after 60 s, see {log_path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keywords", type=int, default=1000)
    parser.add_argument("--latency-ms", type=int, default=50)
    parser.add_argument("--mode", choices=["auto", "worker", "eager"], default="auto")
    parser.add_argument("--database-url", default="",
                        help="default: a throw-away SQLite file")
    parser.add_argument("--redis-url", default=bench_redis(
        os.environ.get("CELERY_BROKER_URL") or DEFAULT_REDIS))
    args = parser.parse_args()

    mode = args.mode
    if mode == "auto":
        mode = "worker" if redis_reachable(args.redis_url) else "eager"
    tmp = tempfile.TemporaryDirectory(prefix="searchtweak-bench-fetch-")
    database_url = args.database_url or f"sqlite:///{tmp.name}/bench.sqlite3"
    queue = f"bench-fetch-{uuid.uuid4().hex[:8]}"
    env = {**os.environ, "DATABASE_URL": database_url, "DEBUG": "false",
           "SECRET_KEY": "bench-only-secret", "LOG_LEVEL": "WARNING",
           "ALLOWED_HOSTS": "127.0.0.1",
           # The test client asks over plain HTTP: production's HTTPS redirect would answer
           # the progress poll with a 301 page instead of its JSON.
           "SECURE_SSL_REDIRECT": "false", "SECURE_HSTS_SECONDS": "0"}
    if mode == "worker":
        env.update(CELERY_BROKER_URL=args.redis_url, CELERY_RESULT_BACKEND=args.redis_url,
                   CELERY_TASK_DEFAULT_QUEUE=queue)
    else:
        env.pop("CELERY_BROKER_URL", None)
        env.pop("CELERY_RESULT_BACKEND", None)
    os.environ.clear()
    os.environ.update(env)
    os.environ["DJANGO_SETTINGS_MODULE"] = "searchtweak.settings"

    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command
    from django.test import Client

    from evaluations import services
    from evaluations.models import Evaluation, Keyword, Snapshot
    from searchtweak.models import Membership, Role, Team, User

    call_command("migrate", verbosity=0)
    server = serve(args.latency_ms / 1000)
    host, port = server.server_address[:2]
    team = Team.objects.create(name="Bench")
    user = User.objects.create_user("bench-lead", password="x", current_team=team)
    Membership.objects.create(team=team, user=user, role=Role.LEAD)
    endpoint = services.endpoint_create(
        team=team, created_by=user, name="Local 50 ms", url=f"http://{host}:{port}/search",
        mapper={"documents": "hits", "id": "id", "name": "title"})
    model = services.search_model_create(team=team, created_by=user, endpoint=endpoint,
                                         name="m", params={"q": "#query#"})
    evaluation = services.evaluation_create(
        team=team, created_by=user, model=model, name="bench", scale="graded", strategy=1,
        keywords=[f"keyword {n}" for n in range(args.keywords)],
        metrics=[{"code": "ndcg", "k": 10}])

    worker = None
    if mode == "worker":
        worker = start_worker(env, queue, Path(tmp.name) / "worker.log")
    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(user)
    progress_url = f"/evaluations/{evaluation.pk}/progress/"
    latencies: list[float] = []
    errors: list[BaseException] = []

    def start() -> None:
        try:
            services.evaluation_start(evaluation=evaluation)
        except BaseException as error:  # reported below
            errors.append(error)
        finally:
            from django.db import connection

            connection.close()

    how = ("real celery worker on Redis" if mode == "worker"
           else "no broker: tasks run eagerly in this process")
    database = "SQLite" if database_url.startswith("sqlite") else "PostgreSQL"
    print(f"fetching {args.keywords} keywords, endpoint latency {args.latency_ms} ms, "
          f"concurrency {settings.FETCH_CONCURRENCY_PER_ENDPOINT} per endpoint, batches of "
          f"{settings.FETCH_BATCH_SIZE}, mode: {mode} ({how}), database: {database}")
    began = time.monotonic()
    thread = threading.Thread(target=start)
    thread.start()
    status = "pending"
    try:
        while time.monotonic() - began < 300:
            asked = time.monotonic()
            response = client.get(progress_url)
            if response.status_code != 200:
                raise SystemExit(f"{progress_url} answered {response.status_code} "
                                 f"{response.headers.get('Content-Type')}, not its JSON")
            body = response.json()
            latencies.append((time.monotonic() - asked) * 1000)
            status = body["status"]
            if status == Evaluation.Status.ACTIVE or errors:
                break
            time.sleep(0.1)
        total = time.monotonic() - began
        thread.join()
    finally:
        if worker is not None:
            worker.terminate()
            worker.wait(timeout=20)
        server.shutdown()
    if errors:
        raise errors[0]
    fetched = Keyword.objects.filter(evaluation=evaluation, fetch_status="fetched").count()
    snapshots = Snapshot.objects.filter(keyword__evaluation=evaluation).count()
    ok = status == Evaluation.Status.ACTIVE and fetched == args.keywords
    print(f"total: {total:.2f} s for {fetched}/{args.keywords} keywords fetched "
          f"({snapshots} snapshots), {fetched / total:.0f} keywords/s -> "
          f"{'PASS' if ok and total <= 10 else 'FAIL'} (target <= 10 s)")
    if latencies:
        print(f"progress page while fetching: {len(latencies)} requests, p50 "
              f"{statistics.median(latencies):.0f} ms, max {max(latencies):.0f} ms")
    tmp.cleanup()
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
