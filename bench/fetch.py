"""Fetch throughput: N keywords against a local endpoint that answers in L ms.

    .venv/bin/python bench/fetch.py                   # 1,000 keywords, 50 ms, PostgreSQL
    .venv/bin/python bench/fetch.py --keywords 100000 --latency-ms 20
    .venv/bin/python bench/fetch.py --database sqlite --mode eager

Target: the fetch runs at the concurrency limit. With C requests in flight per
endpoint (FETCH_CONCURRENCY_PER_ENDPOINT, 16) the fastest possible fetch takes
N x L / C (the "limit": 1,000 x 50 ms / 16 = 3.1 s); every keyword must be stored within
1.3 x that (4 s for 1,000 keywords at 50 ms, 163 s for 100,000 at 20 ms), and the
progress page stays responsive meanwhile.

It serves a search endpoint on a free 127.0.0.1 port (an asyncio server in a process of
its own, 10 results per query after an L ms sleep), creates a throw-away PostgreSQL
database named after BENCH_DATABASE_PREFIX (or a SQLite file, or uses --database-url),
migrates it, creates an evaluation of N keywords and starts it. Loopback is opened in the
outbound policy (OUTBOUND_DENY_NETWORKS: the production list without 127.0.0.0/8), so every
request still goes through searchtweak/outbound's checks, as in production. "worker" mode sends the
fetch tasks through Redis to a real `celery worker` process (--pool=solo, as
tests/workers.py); "eager" mode runs them in this process, as the embedded default does
without a broker. While it fetches, this process polls the evaluation's progress page
through Django's test client every second, as the page does, and reports that page's
latency; it watches the evaluation's status every 50 ms for the end. The total is
from the start request to the evaluation becoming active with every keyword stored. The
worker is stopped with a warm shutdown once the fetch is over; any traceback in its log is
printed and fails the run.

--processes N runs the worker as a prefork pool of N processes sharing the 16 requests in
flight (FETCH_CONCURRENCY_PER_ENDPOINT = 16 / N each), as a production fetch worker does
(docker-compose.yml's worker-fetch runs four): one process is bound by its GIL. For the
same 16 in flight, more processes with fewer threads each are faster: a thread whose answer
has arrived waits for its process's GIL while the store's Python or another request
thread runs, and fewer threads a process wait less (figures: bench/RESULTS.md).

--shared-limit gives each process the full FETCH_CONCURRENCY_PER_ENDPOINT (16) and lets
the endpoint's own "16 at once" (outbound_limits, on Redis) hold them all to 16, as a
worker with the default settings does; it reports how the turns gathered in the
processes (bench/RESULTS.md). The threads left waiting still poll Redis, so for one
endpoint's large fetches, FETCH_CONCURRENCY_PER_ENDPOINT x the worker's processes = the
endpoint's limit stays the fastest.

BENCH_ROOT runs another checkout's code (the worker too), for old-vs-new comparisons:
    cd /work/main && BENCH_ROOT=$PWD .venv/bin/python /path/to/new/bench/fetch.py
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
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

ROOT = Path(os.environ.get("BENCH_ROOT") or Path(__file__).resolve().parents[1]).resolve()
sys.path.insert(0, str(ROOT))
sys.path.insert(1, str(Path(__file__).resolve().parent))
from _support import bench_database, bench_redis, drop_database, report  # noqa: E402

DEFAULT_REDIS = "redis://127.0.0.1:6379/13"
# The progress page is polled as the evaluation page polls it (static/evaluations/
# evaluations.js, every second): at 100,000 keywords a poll every 0.1 s took 70 % of a CPU
# from the two the worker shares. The end is watched on the status alone, more often.
PAGE_POLL_SECONDS = 1.0
END_POLL_SECONDS = 0.05
# searchtweak.settings.OUTBOUND_PRODUCTION_DENY_NETWORKS without loopback (127.0.0.0/8).
DENY_BUT_LOOPBACK = [
    "::1/128", "0.0.0.0/8", "::/128", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16",
    "fc00::/7", "169.254.0.0/16", "fe80::/10", "100.64.0.0/10", "240.0.0.0/4", "224.0.0.0/4",
    "ff00::/8"]


def engine_serve(latency: float) -> None:
    """The engine's process: prints its port, then answers until killed. GET /stats
    answers how many connections it accepted.

    One asyncio loop reading HTTP/1.1 requests by hand (keep-alive, Content-Length), not
    http.server's thread per connection: that one parsed each request's headers with the
    email package, CPU that a real engine spends on a machine of its own
    (bench/RESULTS.md). asyncio's transports
    set TCP_NODELAY, as real engines do."""
    import asyncio

    connections = 0
    head = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n")

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        try:
            while True:
                request = await reader.readuntil(b"\r\n\r\n")
                request_line, _, headers = request.partition(b"\r\n")
                target = request_line.split(b" ")[1].decode("latin-1")
                for line in headers.split(b"\r\n"):
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length" and int(value):
                        await reader.readexactly(int(value))
                if target == "/stats":
                    body = json.dumps({"connections": connections}).encode()
                else:
                    query = parse_qs(urlsplit(target).query).get("q", [""])[0]
                    await asyncio.sleep(latency)
                    body = json.dumps({"hits": [{"id": f"{query}-{n}",
                                                 "title": f"{query} #{n}"}
                                                for n in range(1, 11)]}).encode()
                writer.write(head % len(body) + body)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # the client closed its connection
        finally:
            writer.close()

    async def serve() -> None:
        # listen()'s backlog: at 5, connections opened at once beyond it lost their SYN
        # and retried a second later.
        server = await asyncio.start_server(answer, "127.0.0.1", 0, backlog=128)
        print(server.sockets[0].getsockname()[1], flush=True)
        await server.serve_forever()

    asyncio.run(serve())


class Engine:
    """The search engine in a process of its own, as a real one is: in this process its
    threads waited for the GIL while the progress page was polled, which no engine does."""

    def __init__(self, latency: float) -> None:
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--engine", "--latency-ms", str(round(latency * 1000))],
            stdout=subprocess.PIPE, text=True)
        self.host, self.port = "127.0.0.1", int(self.process.stdout.readline())

    def connections(self) -> int:
        import httpx

        return httpx.get(f"http://{self.host}:{self.port}/stats").json()["connections"]

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


def floor_seconds(url: str, requests: int, concurrency: int) -> float:
    """The machine's floor: `requests` plain GETs with `concurrency` threads sharing one
    httpx client (no policy checks, no mapping, no database), against the same server."""
    from concurrent.futures import ThreadPoolExecutor

    import httpx

    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    with httpx.Client(limits=limits, timeout=30) as client:
        def get(n: int) -> None:
            response = client.get(url, params={"q": f"keyword {n}"})
            response.raise_for_status()
            response.json()

        began = time.monotonic()
        with ThreadPoolExecutor(max_workers=concurrency) as pool:
            list(pool.map(get, range(requests)))
        return time.monotonic() - began


def redis_reachable(url: str) -> bool:
    try:
        import redis

        redis.Redis.from_url(url, socket_connect_timeout=1).ping()
        return True
    except Exception:
        return False


def start_worker(env: dict[str, str], queue: str, log_path: Path,
                 processes: int = 1) -> subprocess.Popen:
    log = open(log_path, "w")  # noqa: SIM115 (closed with the process)
    pool = ["--pool=solo"] if processes == 1 else ["--pool=prefork",
                                                   f"--concurrency={processes}"]
    process = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "searchtweak", "worker", *pool,
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


def stop_worker(worker: subprocess.Popen) -> None:
    """Warm shutdown (SIGTERM): the solo pool finishes the task under way and exits; a
    SIGKILL only if it hangs, which the log check below then reports."""
    worker.terminate()
    try:
        worker.wait(timeout=60)
    except subprocess.TimeoutExpired:
        worker.kill()
        worker.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keywords", type=int, default=1000)
    parser.add_argument("--latency-ms", type=int, default=50)
    parser.add_argument("--mode", choices=["auto", "worker", "eager"], default="auto")
    parser.add_argument("--database", choices=["postgres", "sqlite"], default="postgres",
                        help="a throw-away database of this kind (default: PostgreSQL)")
    parser.add_argument("--database-url", default="",
                        help="use this database instead (it is filled, not dropped)")
    parser.add_argument("--floor-requests", type=int, default=-1,
                        help="requests of the bare httpx reference (default: --keywords; "
                             "0 skips it)")
    parser.add_argument("--redis-url", default=bench_redis(
        os.environ.get("CELERY_BROKER_URL") or DEFAULT_REDIS))
    parser.add_argument("--processes", type=int, default=1,
                        help="worker processes (prefork); the 16 requests in flight are "
                             "shared among them (FETCH_CONCURRENCY_PER_ENDPOINT = 16 / N)")
    parser.add_argument("--shared-limit", action="store_true",
                        help="each process keeps FETCH_CONCURRENCY_PER_ENDPOINT requests in "
                             "flight; the endpoint's own limit (16 at once) holds them all")
    parser.add_argument("--engine", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.engine:
        engine_serve(args.latency_ms / 1000)
        return

    mode = args.mode
    if mode == "auto":
        mode = "worker" if redis_reachable(args.redis_url) else "eager"
    tmp = tempfile.TemporaryDirectory(prefix="searchtweak-bench-fetch-")
    throwaway = ""
    if args.database_url:
        database_url = args.database_url
    elif args.database == "sqlite":
        database_url = f"sqlite:///{tmp.name}/bench.sqlite3"
    else:
        import psycopg

        throwaway = bench_database("fetch")
        drop_database(throwaway)
        with psycopg.connect("postgres://postgres@127.0.0.1:5432/postgres",
                             autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {throwaway}")
        database_url = f"postgres://postgres@127.0.0.1:5432/{throwaway}"
    queue = f"bench-fetch-{uuid.uuid4().hex[:8]}"
    env = {**os.environ, "DATABASE_URL": database_url, "DEBUG": "false",
           "SECRET_KEY": "bench-only-secret", "LOG_LEVEL": "WARNING",
           "ALLOWED_HOSTS": "127.0.0.1",
           # The test client asks over plain HTTP: production's HTTPS redirect would answer
           # the progress poll with a 301 page instead of its JSON.
           "SECURE_SSL_REDIRECT": "false", "SECURE_HSTS_SECONDS": "0",
           # DEBUG off denies loopback, where the bench's endpoint listens: open it alone,
           # so the requests still pass the outbound policy's checks.
           "OUTBOUND_DENY_NETWORKS": ",".join(DENY_BUT_LOOPBACK),
           "PYTHONPATH": str(ROOT)}
    if args.processes > 1 and not args.shared_limit:
        # The endpoint sees at most 16 requests at once however many processes fetch.
        total = int(os.environ.get("FETCH_CONCURRENCY_PER_ENDPOINT", "16"))
        env["FETCH_CONCURRENCY_PER_ENDPOINT"] = str(max(1, total // args.processes))
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

    from evaluations.endpoints import services as endpoint_services
    from evaluations.models import Evaluation, Keyword, Snapshot
    from evaluations.services import configuration, lifecycle
    from judgments.models import FeedbackSlot
    from searchtweak.models import Membership, Role, Team, User

    call_command("migrate", verbosity=0)
    engine = Engine(args.latency_ms / 1000)
    host, port = engine.host, engine.port
    team = Team.objects.create(name="Bench")
    user = User.objects.create_user("bench-lead", password="x", current_team=team)
    Membership.objects.create(team=team, user=user, role=Role.LEAD)
    endpoint = endpoint_services.endpoint_create(
        team=team, created_by=user, name="Local 50 ms", url=f"http://{host}:{port}/search",
        mapper={"documents": "hits", "id": "id", "name": "title"},
        max_concurrent_requests=16)
    model = endpoint_services.search_model_create(team=team, created_by=user, endpoint=endpoint,
                                                  name="m", params={"q": "#query#"})
    evaluation = configuration.evaluation_create(
        team=team, created_by=user, model=model, name="bench", scale="graded", strategy=1,
        keywords=[f"keyword {n}" for n in range(min(args.keywords, 1000))],
        metrics=[{"code": "ndcg", "k": 10}])
    # An evaluation holds at most MAX_KEYWORDS (10,000) through the form; a larger bench
    # adds the rest directly, as a future larger limit would.
    Keyword.objects.bulk_create((
        Keyword(evaluation=evaluation, position=n + 1, text=f"keyword {n}",
                normalized_text=Keyword.normalize(f"keyword {n}"))
        for n in range(1000, args.keywords)), batch_size=5000)

    worker = None
    if mode == "worker":
        worker = start_worker(env, queue, Path(tmp.name) / "worker.log", args.processes)
    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(user)
    progress_url = f"/evaluations/{evaluation.pk}/progress/"
    latencies: list[float] = []
    errors: list[BaseException] = []

    def start() -> None:
        try:
            lifecycle.evaluation_start(evaluation=evaluation)
        except BaseException as error:  # reported below
            errors.append(error)
        finally:
            from django.db import connection

            connection.close()

    how = ("real celery worker on Redis" if mode == "worker"
           else "no broker: tasks run eagerly in this process")
    database = "SQLite" if database_url.startswith("sqlite") else "PostgreSQL"
    from evaluations.fetching.dispatch import fetch_batch_size

    batch = fetch_batch_size(evaluation_id=evaluation.pk, keywords=args.keywords)
    print(f"fetching {args.keywords} keywords, endpoint latency {args.latency_ms} ms, "
          f"concurrency {settings.FETCH_CONCURRENCY_PER_ENDPOINT} per endpoint, batches of "
          f"{batch}, mode: {mode} ({how}, {args.processes} process(es)), "
          f"database: {database}")
    concurrency = settings.FETCH_CONCURRENCY_PER_ENDPOINT * args.processes
    if args.shared_limit:
        concurrency = min(concurrency, endpoint.max_concurrent_requests)
    limit = args.keywords * args.latency_ms / 1000 / concurrency
    target = 1.3 * limit
    # The floor of this machine, measured now (a loaded machine is slower than the limit):
    # the same requests through a bare client, scaled to N when fewer were sent.
    floor_requests = args.keywords if args.floor_requests < 0 else args.floor_requests
    floor = 0.0
    if floor_requests:
        floor = floor_seconds(f"http://{host}:{port}/search", floor_requests, concurrency)
        floor *= args.keywords / floor_requests
        print(f"floor: a bare httpx client with {concurrency} threads, {floor_requests} "
              f"requests: {floor:.2f} s for {args.keywords} ({floor / limit:.2f} x the limit)")
    if mode == "worker":
        # The web process's first task opens its broker connection (kombu's Redis transport,
        # imported then: 0.1 s here), once per process, not per fetch: paid before the clock.
        from searchtweak.celery import app

        with app.producer_or_acquire():
            pass
    connections_before = engine.connections()
    began = time.monotonic()
    thread = threading.Thread(target=start)
    thread.start()
    status = "pending"
    try:
        give_up = max(300.0, 10 * limit)
        polled = -PAGE_POLL_SECONDS
        while time.monotonic() - began < give_up:
            if time.monotonic() - polled >= PAGE_POLL_SECONDS:
                polled = time.monotonic()
                response = client.get(progress_url)
                if response.status_code != 200:
                    raise SystemExit(f"{progress_url} answered {response.status_code} "
                                     f"{response.headers.get('Content-Type')}, not its JSON")
                response.json()
                latencies.append((time.monotonic() - polled) * 1000)
            status = Evaluation.objects.values_list("status", flat=True).get(pk=evaluation.pk)
            if status == Evaluation.Status.ACTIVE or errors:
                break
            time.sleep(END_POLL_SECONDS)
        total = time.monotonic() - began
        thread.join()
    finally:
        if worker is not None:
            stop_worker(worker)
        connections = engine.connections() - connections_before
        engine.stop()
    if errors:
        raise errors[0]
    fetched = Keyword.objects.filter(evaluation=evaluation, fetch_status="fetched").count()
    snapshots = Snapshot.objects.filter(keyword__evaluation=evaluation).count()
    slots = FeedbackSlot.objects.filter(evaluation=evaluation).count()
    ok = status == Evaluation.Status.ACTIVE and fetched == args.keywords
    print(f"total: {total:.2f} s for {fetched}/{args.keywords} keywords fetched "
          f"({snapshots} snapshots, {slots} slots), {fetched / total:.0f} keywords/s; "
          f"limit {limit:.2f} s, ratio {total / limit:.2f} -> "
          f"{'PASS' if ok and total <= target else 'FAIL'} (target <= {target:.2f} s)"
          + (f"; ratio to the floor {total / floor:.2f}" if floor else ""))
    if worker is not None:
        log = (Path(tmp.name) / "worker.log").read_text()
        if "Traceback" in log or "WorkerLostError" in log:
            print(f"the worker logged errors:\n{log[-3000:]}")
            ok = False
    report(f"fetch at {args.latency_ms} ms, concurrency {concurrency}: total", "s",
           {f"{args.keywords / 1000:g}k": total},
           target=f"<= {target:.1f} s (1.3 x the limit {limit:.1f} s)",
           note=f"floor here {floor:.1f} s, ratio to it {total / floor:.2f}" if floor else "")
    # Requests of one fetch share their connections (keep-alive): about one per request
    # thread, not one per keyword.
    print(f"connections the fetch opened to the engine: {connections}")
    if latencies:
        print(f"progress page while fetching: {len(latencies)} requests, p50 "
              f"{statistics.median(latencies):.0f} ms, max {max(latencies):.0f} ms")
    tmp.cleanup()
    if throwaway:
        drop_database(throwaway)
    sys.exit(0 if ok and total <= target else 1)


if __name__ == "__main__":
    main()
