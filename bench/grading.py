"""Grading throughput through HTTP on PostgreSQL (part of `make bench`).

    .venv/bin/python bench/grading.py                      # both flows, 1, 4, 8 graders, 10 s
    .venv/bin/python bench/grading.py --graders 8 --seconds 5 --recompute eager

It creates a benchmark database (default searchtweak_bench_grading on the local
PostgreSQL), migrates and seeds it (a team, 8 graders with API tokens, one active
evaluation per round with enough results), starts gunicorn with the production settings
(gunicorn.conf.py) on a free 127.0.0.1 port (DEBUG off) and, for each flow and grader
count, lets that many simulated graders grade as fast as they can:

- combined: one request a grade, `POST /api/v1/evaluations/{id}/next/ {"snapshot",
  "grade"}` grading the result it was handed and taking the next one (what a grading
  client does; the bare `next/` starts the loop);
- pair: `POST /api/v1/evaluations/{id}/next/` then `POST /api/v1/snapshots/{id}/grade/`.

It reports grades/s (acknowledged grades per second of wall time), the p50/p95 latency of
the request carrying the grade and of the whole cycle, the CPU each part spent per grade
(web = gunicorn, worker = Celery, postgres = the benchmark database's backends, client =
this process, other = the rest of the machine, from /proc), and checks the database
afterwards: every acknowledged grade is stored under its grader (0 lost), no slot was
handed to two graders and no slot holds a grade nobody sent (0 duplicated).

Each evaluation measures ndcg@10, precision@10 and err@10, so the worker's recompute of a
keyword and of the evaluation's means does the work it does in production.

Recompute (--recompute): "worker" (default, the production shape) sends recompute tasks
through Redis to a real Celery worker running beside the server on the same 2 cores;
"queue" only enqueues them (no worker: isolates the web path); "eager" runs the recompute
in the web process after each commit (the embedded default without a broker).
Everything started is stopped and the database dropped at the end (--keep-db to keep it).
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import random
import runpy
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from _support import bench_database, bench_redis

ROOT = Path(__file__).resolve().parents[1]
PYTHON = sys.executable


@dataclass
class GraderResult:
    user: str
    cycles: list[float] = field(default_factory=list)
    grade_latencies: list[float] = field(default_factory=list)
    next_latencies: list[float] = field(default_factory=list)
    assigned: list[int] = field(default_factory=list)
    acknowledged: dict[int, int] = field(default_factory=dict)  # slot id -> grade
    errors: list[str] = field(default_factory=list)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def fresh_database_env(*, server_url: str, database: str, queue: str,
                       redis: str | None = None) -> dict[str, str]:
    """What a bench's processes run with (production settings, tasks on `queue`, Redis as
    the broker when given) on `database`, dropped and created afresh here."""
    env = {
        "DATABASE_URL": server_url.rsplit("/", 1)[0] + f"/{database}",
        "DEBUG": "false", "SECRET_KEY": "bench-" + uuid.uuid4().hex,
        "ALLOWED_HOSTS": "127.0.0.1,localhost", "SECURE_COOKIES": "false",
        "SECURE_SSL_REDIRECT": "false", "SECURE_HSTS_SECONDS": "0",
        "CELERY_TASK_DEFAULT_QUEUE": queue,
    }
    if redis:
        env["CELERY_BROKER_URL"] = redis
    admin_sql(server_url, f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
    admin_sql(server_url, f'CREATE DATABASE "{database}"')
    return env


def admin_sql(server_url: str, sql: str) -> None:
    import psycopg

    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(sql)


def postgres_backends(server_url: str, database: str) -> set[int]:
    import psycopg

    with psycopg.connect(server_url, autocommit=True) as conn:
        rows = conn.execute("SELECT pid FROM pg_stat_activity WHERE datname = %s",
                            [database]).fetchall()
    return {pid for (pid,) in rows}


# PostgreSQL's counters of the benchmark database (pg_stat_database): in autocommit each
# statement outside an explicit transaction is a transaction of its own, so
# "transactions" counts those statements plus BEGIN..COMMIT blocks.
_PG_COUNTERS = {
    "transactions": "xact_commit + xact_rollback",
    "rows_read": "tup_returned + tup_fetched",
    "rows_written": "tup_inserted + tup_updated + tup_deleted",
}
# A backend reports its counters when a transaction ends, at most once a second, or at
# the latest 10 s after it went idle (PostgreSQL 15): wait that long for them to settle.
PG_STATS_SETTLE_SECONDS = 11.0


def postgres_counters(server_url: str, database: str) -> dict[str, int]:
    import psycopg

    columns = ", ".join(f"{expression} AS {name}" for name, expression in _PG_COUNTERS.items())
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute("SELECT pg_stat_clear_snapshot()")
        row = conn.execute(f"SELECT {columns} FROM pg_stat_database WHERE datname = %s",
                           [database]).fetchone()
    return dict(zip(_PG_COUNTERS, row, strict=True))


def setup_django(env: dict[str, str]) -> None:
    import logging

    logging.getLogger("httpx").setLevel(logging.WARNING)
    os.environ.update(env)
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "searchtweak.settings")
    import django

    django.setup()
    logging.getLogger("httpx").setLevel(logging.WARNING)


def seed(graders: int) -> tuple[int, dict[str, str]]:
    """A team with graders and their API tokens; returns (team id, {username: key})."""
    from searchtweak.models import Membership, Role, Team, User
    from searchtweak.services import api_token_create

    team = Team.objects.create(name="Bench")
    keys = {}
    for n in range(graders):
        user = User.objects.create_user(username=f"bench{n}", password=uuid.uuid4().hex,
                                        current_team=team)
        Membership.objects.create(team=team, user=user, role=Role.GRADER)
        _, keys[user.username] = api_token_create(user=user, name="bench")
    return team.pk, keys


def seed_evaluation(team_id: int, *, keywords: int, positions: int, strategy: int) -> int:
    from django.db import transaction
    from django.utils import timezone

    from evaluations.models import (
        Endpoint,
        Evaluation,
        EvaluationMetric,
        Keyword,
        SearchModel,
        Snapshot,
    )
    from judgments.slots import slots_create_for_snapshots

    with transaction.atomic():
        endpoint = Endpoint.objects.create(
            team_id=team_id, name="bench", url="http://127.0.0.1:9/search",
            mapper={"documents": "docs", "id": "id", "name": "title", "image": None,
                    "fields": {}})
        model = SearchModel.objects.create(team_id=team_id, endpoint=endpoint, name="bench")
        evaluation = Evaluation.objects.create(
            team_id=team_id, model=model, name=f"bench {uuid.uuid4().hex[:6]}", scale="graded",
            strategy=strategy, status=Evaluation.Status.ACTIVE, started_at=timezone.now())
        # Metrics as a real evaluation has them, so each recompute does real metric work.
        for position, (code, k) in enumerate([("ndcg", 10), ("precision", 10), ("err", 10)]):
            EvaluationMetric.objects.create(evaluation=evaluation, code=code, k=k,
                                            position=position)
        for k in range(keywords):
            text = f"query {k} {evaluation.pk}"
            keyword = Keyword.objects.create(evaluation=evaluation, position=k + 1, text=text,
                                             normalized_text=Keyword.normalize(text))
            snapshots = Snapshot.objects.bulk_create([
                Snapshot(keyword=keyword, position=p, doc_id=f"d{k}-{p}", name=f"Doc {k}/{p}")
                for p in range(1, positions + 1)
            ])
            slots_create_for_snapshots(evaluation=evaluation, keyword=keyword,
                                       snapshots=snapshots)
    return evaluation.pk


def wait_for(url: str, timeout: float = 120.0) -> None:
    # Generous: on a busy 2-core host, gunicorn importing every view took over 30 s.
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            # Any answer: the server is up. /healthz answers 503 while no worker has
            # stamped its queue's heartbeat, which the benchmark's private queue never is.
            httpx.get(url, timeout=1.0)
            return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"server at {url} did not come up")


class Session:
    """One grader's keep-alive HTTP/1.1 connection. http.client rather than httpx: the
    client shares the cores with the server, and httpx costs more CPU per cycle
    (bench/RESULTS.md)."""

    def __init__(self, base: str, key: str) -> None:
        host, port = base.removeprefix("http://").split(":")
        self.connection = http.client.HTTPConnection(host, int(port), timeout=30)
        self.headers = {"Authorization": f"Token {key}", "Content-Type": "application/json"}

    def post(self, path: str, body: dict | None = None) -> tuple[int, dict | None, str]:
        payload = json.dumps(body).encode() if body is not None else b""
        self.connection.request("POST", path, body=payload, headers=self.headers)
        response = self.connection.getresponse()
        raw = response.read()
        text = raw.decode(errors="replace")
        data = json.loads(raw) if raw and response.getheader("Content-Type", "").startswith(
            "application/json") else None
        return response.status, data, text

    def close(self) -> None:
        self.connection.close()


def grade_loop(base: str, key: str, user: str, evaluation_id: int, stop: threading.Event,
               start: threading.Barrier, flow: str) -> GraderResult:
    """One simulated grader. "pair": `next/` then `snapshots/{id}/grade/` (two requests a
    grade); "combined": `next/` carrying the previous result's grade (one request a grade,
    what a grading client does)."""
    result = GraderResult(user=user)
    rng = random.Random(user)
    session = Session(base, key)
    next_path = f"/api/v1/evaluations/{evaluation_id}/next/"
    try:
        start.wait()
        status, slot, text = session.post(next_path) if flow == "combined" else (0, None, "")
        while not stop.is_set():
            t0 = time.perf_counter()
            if flow == "pair":
                status, slot, text = session.post(next_path)
                result.next_latencies.append(time.perf_counter() - t0)
            if status == 204:
                break
            if status != 200:
                result.errors.append(f"next {status} {text[:200]}")
                break
            result.assigned.append(slot["id"])
            grade = rng.randint(0, 3)
            t2 = time.perf_counter()
            if flow == "pair":
                status, graded, text = session.post(
                    f"/api/v1/snapshots/{slot['snapshot']}/grade/", {"grade": grade})
                ok = status == 200 and graded["id"] == slot["id"]
            else:
                status, next_slot, text = session.post(
                    next_path, {"snapshot": slot["snapshot"], "grade": grade})
                ok = status in (200, 204)
            t3 = time.perf_counter()
            result.grade_latencies.append(t3 - t2)
            if not ok:
                result.errors.append(f"grade {status} {text[:200]}")
                if flow == "combined":
                    break
                continue
            result.acknowledged[slot["id"]] = grade
            result.cycles.append(t3 - t0)
            if flow == "combined":
                slot = next_slot
    finally:
        session.close()
    return result


def verify(evaluation_id: int, results: list[GraderResult]) -> dict[str, int]:
    from judgments.models import FeedbackSlot

    stored = {
        pk: (username, grade) for pk, username, grade in FeedbackSlot.objects.filter(
            evaluation_id=evaluation_id).values_list("pk", "user__username", "grade")
    }
    assigned = [slot for r in results for slot in r.assigned]
    handed_twice = len(assigned) - len(set(assigned))
    lost = sum(
        1 for r in results for slot, grade in r.acknowledged.items()
        if stored.get(slot) != (r.user, grade)
    )
    acknowledged = {slot for r in results for slot in r.acknowledged}
    unexplained = sum(
        1 for slot, (_, grade) in stored.items() if grade is not None and slot not in acknowledged
    )
    return {"lost": lost, "handed_twice": handed_twice, "unexplained_grades": unexplained,
            "stored_grades": sum(1 for _, grade in stored.values() if grade is not None)}


CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def _proc_stat(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()
    except OSError:
        return None


def descendants(root: int) -> set[int]:
    parents = {}
    for name in os.listdir("/proc"):
        if name.isdigit() and (fields := _proc_stat(int(name))) is not None:
            parents[int(name)] = int(fields[1])
    found, frontier = {root}, [root]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent]
        found.update(children)
        frontier.extend(children)
    return found


def cpu_by_pid(pids: set[int]) -> dict[int, float]:
    found = {}
    for pid in pids:
        if (fields := _proc_stat(pid)) is not None:
            found[pid] = (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
    return found


def machine_busy_seconds() -> float:
    with open("/proc/stat") as handle:
        values = [int(v) for v in handle.readline().split()[1:]]
    return (sum(values[:8]) - values[3] - values[4]) / CLOCK_TICKS  # all but idle, iowait


class CpuMeter:
    """CPU seconds spent by each part during a round, read from /proc: what a grade costs,
    whatever else the machine is doing (that shows as "other")."""

    def __init__(self, groups) -> None:
        self.groups = groups  # name -> callable returning the pids of that part now

    def snapshot(self) -> dict:
        taken = {name: cpu_by_pid(pids_of()) for name, pids_of in self.groups.items()}
        return {"parts": taken, "machine": machine_busy_seconds()}

    def spent(self, before: dict) -> dict[str, float]:
        after = self.snapshot()
        spent = {}
        for name, now in after["parts"].items():
            then = before["parts"][name]
            # A process that started during the round counts whole; one that ended is lost.
            spent[name] = sum(seconds - then.get(pid, 0.0) for pid, seconds in now.items())
        spent["other"] = after["machine"] - before["machine"] - sum(spent.values())
        return spent


def run_round(base: str, keys: dict[str, str], graders: int, evaluation_id: int,
              seconds: float, flow: str, meter: CpuMeter | None = None,
              counters=None) -> dict:
    """One round; `counters` (a callable returning postgres_counters) adds what the round
    cost PostgreSQL per grade, the recompute that follows it included."""
    if counters is not None:
        time.sleep(PG_STATS_SETTLE_SECONDS)  # the seeding's counters, reported first
        counted_before = counters()
    users = sorted(keys)[:graders]
    start = threading.Barrier(graders + 1)
    results: list[GraderResult] = []
    lock = threading.Lock()

    def work(user: str) -> None:
        outcome = grade_loop(base, keys[user], user, evaluation_id, stop, start, flow)
        with lock:
            results.append(outcome)

    stop = threading.Event()
    threads = [threading.Thread(target=work, args=(u,)) for u in users]
    for thread in threads:
        thread.start()
    start.wait()
    began = time.perf_counter()
    cpu_before = meter.snapshot() if meter else None
    stop.wait(seconds)
    stop.set()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - began
    cpu = meter.spent(cpu_before) if meter else {}
    grades = sum(len(r.acknowledged) for r in results)
    grade_lat = [x for r in results for x in r.grade_latencies]
    cycle_lat = [x for r in results for x in r.cycles]
    checks = verify(evaluation_id, results)
    postgres = {}
    if counters is not None:
        time.sleep(PG_STATS_SETTLE_SECONDS)
        postgres = {name: round((value - counted_before[name]) / max(grades, 1), 2)
                    for name, value in counters().items()}
    return {
        "flow": flow, "graders": graders, "seconds": round(wall, 2), "grades": grades,
        "grades_per_s": round(grades / wall, 1),
        "grade_p50_ms": round(1000 * percentile(grade_lat, 0.50), 1),
        "grade_p95_ms": round(1000 * percentile(grade_lat, 0.95), 1),
        "cycle_p95_ms": round(1000 * percentile(cycle_lat, 0.95), 1),
        "errors": sum(len(r.errors) for r in results),
        "first_error": next((r.errors[0] for r in results if r.errors), ""),
        "cpu_ms_per_grade": {name: round(1000 * used / max(grades, 1), 2)
                             for name, used in cpu.items()},
        **checks,
        "postgres_per_grade": postgres,
    }


def bench_cleanup(processes: list[subprocess.Popen], *, server_url: str, database: str,
                  redis_url: str | None, queue: str, drop_database: bool = True) -> None:
    """Stop the bench's processes, remove its Redis queue (if it used one) and drop its
    database (unless kept)."""
    stop_processes(processes)
    from django.db import connections

    connections.close_all()
    if redis_url:
        try:
            import redis

            redis.Redis.from_url(redis_url).delete(queue)
        except Exception as error:  # cleanup is best effort
            print(f"# could not remove the Redis queue {queue}: {error}", file=sys.stderr)
    if drop_database:
        admin_sql(server_url, f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


def stop_processes(processes: list[subprocess.Popen], timeout: float = 60.0) -> None:
    """Stop the servers and workers this benchmark started: SIGTERM to each one's main
    process only (gunicorn's graceful stop, Celery's warm shutdown: it lets the tasks under
    way finish, then ends its own children), waiting for it; its whole process group is
    killed only when it is still there after `timeout`. Signalling the group at once killed
    Celery's pool children mid-task, which the main process then reported as a screen of
    WorkerLostError tracebacks."""
    for process in processes:
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGTERM)
    for process in processes:
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            print(f"# {process.args[0]} (pid {process.pid}) did not stop in {timeout:.0f} s; "
                  "killing its process group", file=sys.stderr)
        # Children it left behind (none after a clean stop) go with their group.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--graders", type=int, nargs="+", default=[1, 4, 8])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--flow", nargs="+", choices=["combined", "pair"],
                        default=["combined", "pair"],
                        help="combined: one request a grade (next/ carrying the grade); "
                        "pair: next/ then snapshots/{id}/grade/")
    parser.add_argument("--server-url", default="postgres://postgres@127.0.0.1:5432/postgres",
                        help="PostgreSQL to create the benchmark database in")
    parser.add_argument("--database", default=bench_database("grading"))
    parser.add_argument("--redis", default=bench_redis("redis://127.0.0.1:6379/14"))
    parser.add_argument("--recompute", choices=["worker", "queue", "eager"], default="worker")
    # Unset, the server is the production one: gunicorn.conf.py, as the Dockerfile and
    # docker-compose.yml start it. These override it to compare shapes.
    parser.add_argument("--web-workers", type=int)
    parser.add_argument("--web-threads", type=int)
    parser.add_argument("--web-worker-class")
    parser.add_argument("--keep-db", action="store_true")
    parser.add_argument("--json", action="store_true", help="print one JSON line per round")
    parser.add_argument("--pg-stats", action="store_true",
                        help="also count PostgreSQL transactions and rows per grade (waits "
                        f"{PG_STATS_SETTLE_SECONDS:.0f} s before and after each round)")
    args = parser.parse_args()

    queue = f"bench-grading-{os.getpid()}"
    env = fresh_database_env(server_url=args.server_url, database=args.database, queue=queue,
                             redis=None if args.recompute == "eager" else args.redis)
    processes: list[subprocess.Popen] = []
    full_env = {**os.environ, **env}
    if args.recompute == "eager":
        full_env.pop("CELERY_BROKER_URL", None)
    try:
        subprocess.run([PYTHON, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT,
                       env=full_env, check=True)
        setup_django(env if args.recompute != "eager" else
                     {k: v for k, v in env.items() if k != "CELERY_BROKER_URL"})
        team_id, keys = seed(max(args.graders))
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        overrides = [("--workers", args.web_workers), ("--worker-class", args.web_worker_class),
                     ("--threads", args.web_threads)]
        web_command = [str(Path(PYTHON).parent / "gunicorn"), "searchtweak.wsgi:application",
                       "--config", "gunicorn.conf.py", "--bind", f"127.0.0.1:{port}",
                       "--log-level", "warning"]
        web_command += [part for flag, value in overrides if value is not None
                        for part in (flag, str(value))]
        # The access log stays on, as in production, and goes nowhere.
        processes.append(subprocess.Popen(web_command, cwd=ROOT, env=full_env,
                                          stdout=subprocess.DEVNULL, start_new_session=True))
        if args.recompute == "worker":
            processes.append(subprocess.Popen(
                [str(Path(PYTHON).parent / "celery"), "-A", "searchtweak", "worker",
                 "--queues", queue, "--concurrency", "1", "--loglevel", "WARNING",
                 "--hostname", f"{queue}@%h"],
                cwd=ROOT, env=full_env, start_new_session=True))
        wait_for(f"{base}/healthz")
        web, worker = processes[0].pid, processes[1].pid if len(processes) > 1 else None
        meter = CpuMeter({
            "web": lambda: descendants(web),
            "worker": lambda: descendants(worker) if worker else set(),
            "postgres": lambda: postgres_backends(args.server_url, args.database),
            "client": lambda: {os.getpid()},
        })
        production = runpy.run_path(str(ROOT / "gunicorn.conf.py"))
        shape = (f"{args.web_workers or production['workers']} "
                 f"{args.web_worker_class or production['worker_class']} workers"
                 + (f" x {args.web_threads} threads" if args.web_threads else ""))
        print(f"# grading benchmark: gunicorn {shape} on "
              f"{base}, PostgreSQL {args.database}, recompute={args.recompute}, "
              f"{os.cpu_count()} CPUs", flush=True)
        rows = []
        for flow, graders in [(f, g) for f in args.flow for g in args.graders]:
            # Enough results that nobody runs dry before the time is up: 2,000 a second,
            # over three times what 8 graders reach on 2 cores. At 600 a second (the old
            # seed) the queue ran dry and every tree measured the same 600.
            evaluation_id = seed_evaluation(
                team_id, keywords=max(200, int(args.seconds * 200)), positions=10, strategy=1)
            rows.append(run_round(
                base, keys, graders, evaluation_id, args.seconds, flow, meter,
                counters=(lambda: postgres_counters(args.server_url, args.database))
                if args.pg_stats else None))
            row = rows[-1]
            if args.json:
                print(json.dumps(row), flush=True)
            else:
                print(f"{row['flow']:>8}  graders={row['graders']:>2}  "
                      f"grades/s={row['grades_per_s']:>7}  "
                      f"grade p50={row['grade_p50_ms']:>6} ms  p95={row['grade_p95_ms']:>6} ms  "
                      f"cycle p95={row['cycle_p95_ms']:>6} ms  grades={row['grades']:>5}  "
                      f"lost={row['lost']}  duplicated={row['handed_twice']}"
                      f"+{row['unexplained_grades']}  errors={row['errors']} "
                      f"{row['first_error']}", flush=True)
                print("           CPU ms per grade: " + "  ".join(
                    f"{name}={ms}" for name, ms in row["cpu_ms_per_grade"].items()), flush=True)
                if row["postgres_per_grade"]:
                    print("           PostgreSQL per grade: " + "  ".join(
                        f"{name}={count}" for name, count in row["postgres_per_grade"].items()),
                        flush=True)
        bad = [r for r in rows if r["lost"] or r["handed_twice"] or r["unexplained_grades"]
               or r["errors"]]
        return 1 if bad else 0
    finally:
        bench_cleanup(processes, server_url=args.server_url, database=args.database,
                      redis_url=None if args.recompute == "eager" else args.redis, queue=queue,
                      drop_database=not args.keep_db)


if __name__ == "__main__":
    sys.exit(main())
