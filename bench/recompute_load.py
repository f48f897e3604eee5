"""What the recompute costs per grade under sustained grading load.

    .venv/bin/python bench/recompute_load.py [--rate 200] [--seconds 10] [--compare-head]
        [--preclaim] [--worker-keeps-connection]

One real Celery worker (prefork, concurrency 1, as bench/grading.py starts it) consumes the
recompute tasks from Redis and writes to a PostgreSQL database of its own, while this
process grades at a fixed rate from `--graders` threads through the services the API
calls (slot_claim_next, then feedback_submit), so the after-commit receiver runs here as
it does in the web process. The evaluation has `--keywords` keywords x 10 results x 1 slot
and measures ndcg@10, precision@10 and err@10 (bench/grading.py's shape); graders work
through it in queue order.

It prints, per grade: the worker's CPU (parent and pool child, from /proc); the CPU of
the PostgreSQL backends the worker kept (with --worker-keeps-connection; by default
Celery's Django fixup opens one connection per task, and the CPU of backends that exit
is only known server-wide); the grading process's CPU, the part the receiver
(metrics.receivers.on_grades_changed) took and the CPU of its PostgreSQL backends; the
tasks the receiver enqueued; then the recompute tasks the worker ran by outcome, the lag
from the last grade until every keyword is clean and the stored values and means equal a
from-scratch computation (and that check), and until the worker's queue is drained.

--preclaim leases the slots before the timed run, so that only feedback_submit (and what
it sets off) is timed: on two shared cores the in-process claims alone may keep the rate
below --rate. --worker-keeps-connection starts the worker with CELERY_DB_REUSE_MAX set (not
the production setting) to attribute its PostgreSQL CPU. --compare-head first runs the
same benchmark against the committed code (HEAD, extracted with `git archive` into a
temporary directory; nothing in this checkout changes) and prints both rows and their
ratios; --tree PATH runs it from another source tree. The database
`searchtweak_bench_recompute_load` and Redis database 11 are used and cleaned up; nothing
is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parent))
from _support import bench_database, bench_redis  # noqa: E402

DB_NAME = bench_database("recompute_load")
BROKER_URL = bench_redis("redis://127.0.0.1:6379/11")
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
METRICS = [("ndcg", 10), ("precision", 10), ("err", 10)]


def cpu_seconds(pid: int) -> float:
    """utime + stime of one process (all its threads), 0 if it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def reaped_children_seconds(pid: int) -> float:
    """cutime + cstime: the CPU of the process's children that exited and were reaped."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return 0.0
    return (int(fields[13]) + int(fields[14])) / CLOCK_TICKS


def parent_pid(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("PPid:"):
            return int(line.split()[1])
    raise RuntimeError(f"no parent for {pid}")


def process_tree(pid: int) -> list[int]:
    pids, todo = [], [pid]
    while todo:
        current = todo.pop()
        pids.append(current)
        for task in Path(f"/proc/{current}/task").glob("*"):
            try:
                todo += [int(child) for child in (task / "children").read_text().split()]
            except FileNotFoundError:
                continue
    return pids


def wait_for_log(path: Path, text: str, process: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"worker exited:\n{path.read_text()}")
        if text in path.read_text():
            return
        time.sleep(0.1)
    raise RuntimeError(f"worker not ready:\n{path.read_text()}")


def drain(log_path: Path, queue: str, timeout: float = 120) -> float:
    """Wait until the worker has run every task sent to it (the queue is empty and each
    task it received has finished): tasks that find nothing left to do still cost CPU."""
    import redis

    client = redis.Redis.from_url(BROKER_URL)
    deadline = time.perf_counter() + timeout
    quiet_since = None
    while time.perf_counter() < deadline:
        log = log_path.read_text()
        finished = len(re.findall(r"\] (?:succeeded|raised|failed)", log))
        idle = client.llen(queue) == 0 and log.count("] received") == finished
        if idle:
            quiet_since = quiet_since or time.perf_counter()
            if time.perf_counter() - quiet_since > 0.3:
                return quiet_since
        else:
            quiet_since = None
        time.sleep(0.02)
    raise RuntimeError("the worker did not drain its queue")


def seed(graders: int, keywords: int):
    from django.utils import timezone

    from evaluations.models import (
        Endpoint,
        Evaluation,
        EvaluationMetric,
        Keyword,
        SearchModel,
        Snapshot,
    )
    from judgments.models import FeedbackSlot
    from searchtweak.models import Membership, Role, Team, User

    team = Team.objects.create(name="Bench")
    users = []
    for n in range(graders):
        user = User.objects.create(username=f"load{n}", current_team=team)
        Membership.objects.create(team=team, user=user, role=Role.GRADER)
        users.append(user)
    endpoint = Endpoint.objects.create(team=team, name="load", url="http://127.0.0.1:9/",
                                       mapper={})
    model = SearchModel.objects.create(team=team, endpoint=endpoint, name="load")
    evaluation = Evaluation.objects.create(
        team=team, model=model, name="load", scale="graded", strategy=1,
        status=Evaluation.Status.ACTIVE, started_at=timezone.now(), auto_finish=False)
    EvaluationMetric.objects.bulk_create(
        EvaluationMetric(evaluation=evaluation, code=code, k=k, position=i)
        for i, (code, k) in enumerate(METRICS))
    rows = Keyword.objects.bulk_create(
        Keyword(evaluation=evaluation, position=i + 1, text=f"load query {i}",
                normalized_text=f"load query {i}", fetch_status="fetched")
        for i in range(keywords))
    snapshots = Snapshot.objects.bulk_create(
        Snapshot(keyword=keyword, position=p, doc_id=f"d{keyword.pk}-{p}", name=f"Doc {p}")
        for keyword in rows for p in range(1, 11))
    FeedbackSlot.objects.bulk_create(
        FeedbackSlot(snapshot=s, keyword_id=s.keyword_id, evaluation=evaluation, index=0,
                     keyword_position=s.keyword.position, position=s.position)
        for s in snapshots)
    return team, users, evaluation


def preclaim(evaluation, users, count: int) -> list[tuple[int, object]]:
    """Lease the next `count` free slots in hand-out order to the graders in turn, as
    slot_claim_next would one by one, so that only the grades are timed."""
    from datetime import timedelta

    from django.utils import timezone

    from judgments.models import FeedbackSlot

    now = timezone.now()
    slot_ids = list(FeedbackSlot.objects.filter(evaluation=evaluation, user__isnull=True)
                    .order_by("keyword_position", "position", "index")
                    .values_list("pk", flat=True)[:count])
    claimed = [(slot_id, users[n % len(users)]) for n, slot_id in enumerate(slot_ids)]
    for grader in users:
        FeedbackSlot.objects.filter(pk__in=[s for s, u in claimed if u == grader]).update(
            user=grader, assigned_at=now, lease_expires_at=now + timedelta(minutes=30))
    return claimed


def from_scratch_matches(evaluation) -> bool:
    """Stored keyword values and means equal metrics_engine on the stored grades (read-only:
    computed here, nothing written)."""
    import numpy as np

    import metrics_engine as core
    from evaluations.models import EvaluationMetric, Keyword
    from metrics.models import KeywordMetricValue
    from metrics.selectors import evaluation_grade_array

    keyword_ids = list(Keyword.objects.filter(evaluation=evaluation).order_by("position")
                       .values_list("pk", flat=True))
    configs = list(EvaluationMetric.objects.filter(evaluation=evaluation).with_stored_mean())
    grades = evaluation_grade_array(evaluation=evaluation, keyword_ids=keyword_ids,
                                    positions=max(c.k for c in configs))
    expected = core.evaluate_batch_many([(c.code, c.k, c.params) for c in configs], grades,
                                        scale=evaluation.scale)
    stored = {(kw, m): v for kw, m, v in KeywordMetricValue.objects.filter(
        keyword__evaluation=evaluation).values_list("keyword_id", "metric_id", "value")}
    graded = set(np.flatnonzero(~np.isnan(grades).all(axis=(1, 2))))
    for config, values in zip(configs, expected, strict=True):
        for row, keyword_id in enumerate(keyword_ids):
            want = None if np.isnan(values[row]) else float(values[row])
            got = stored.get((keyword_id, config.pk), "absent")
            if got == "absent" and row not in graded:
                continue  # never graded: no row yet, as from scratch gives null
            if got == "absent" or (got is None) != (want is None) or (
                    want is not None and abs(got - want) > 1e-9):
                return False
        mean, count = core.mean_over_keywords(values)
        if config.keyword_count != count or (config.value is None) != (mean is None) or (
                mean is not None and abs(config.value - mean) > 1e-9):
            return False
    return True


def run(args) -> dict:
    sys.path.insert(0, str(HERE.parent))
    from _support import REPO, database_url, drop_database, recreate_database, setup_django

    queue = f"bench-load-{os.getpid()}"
    env = {"DATABASE_URL": database_url(DB_NAME), "CELERY_BROKER_URL": BROKER_URL,
           "CELERY_TASK_DEFAULT_QUEUE": queue, "DEBUG": "false", "SECRET_KEY": "bench-only",
           "RECOMPUTE_SWEEP_AFTER_SECONDS": "60"}
    recreate_database(DB_NAME, env)
    setup_django(env)
    from django.db import connection, connections

    from judgments.grading import feedback_submit
    from judgments.queue import slot_claim_next
    from metrics import receivers
    from metrics.tasks import recompute_keyword

    total = int(args.rate * args.seconds)
    team, users, evaluation = seed(args.graders, args.keywords)

    # The receiver's own CPU in this (the grading) process, and the tasks it enqueues.
    receiver_cpu = [0.0]
    enqueued = [0]
    lock = threading.Lock()
    real_receiver, real_apply_async = receivers.on_grades_changed, recompute_keyword.apply_async

    def timed_receiver(*a, **kw):
        started = time.thread_time()
        try:
            return real_receiver(*a, **kw)
        finally:
            with lock:
                receiver_cpu[0] += time.thread_time() - started

    def counting_apply_async(*a, **kw):
        with lock:
            enqueued[0] += 1
        return real_apply_async(*a, **kw)

    # on_grades_written calls it after each grade's commit, by its module-level name.
    receivers.on_grades_changed = timed_receiver
    recompute_keyword.apply_async = counting_apply_async

    log_path = Path(tempfile.mkstemp(prefix="recompute-load-", suffix=".log")[1])
    subprocess.run(["redis-cli", "-n", BROKER_URL.rsplit("/", 1)[1], "del", queue],
                   check=True, capture_output=True)
    with open(log_path, "w") as log:
        options = ["--queues", queue, "--concurrency", "1", "--loglevel", "INFO",
                   "--hostname", f"{queue}@%h"]
        command = [sys.executable, "-m", "celery", "-A", "searchtweak", "worker", *options]
        if args.worker_keeps_connection:
            # Celery's Django fixup closes the connection around every task unless
            # CELERY_DB_REUSE_MAX is set; set here only, to measure what it would save.
            command = [sys.executable, "-c", "import sys; from searchtweak.celery import app;"
                       " app.conf.update(CELERY_DB_REUSE_MAX=1_000_000);"
                       " app.worker_main(['worker', *sys.argv[1:]])", *options]
        worker = subprocess.Popen(command, cwd=REPO, env={**os.environ, **env}, stdout=log,
                                  stderr=subprocess.STDOUT)
    try:
        wait_for_log(log_path, "ready.", worker)
        own_backends = set()
        ticket = iter(range(total))
        started_at = [0.0]
        last_grade_at = [0.0]
        errors: list[str] = []
        barrier = threading.Barrier(args.graders + 1)

        preclaimed: list[tuple[int, object]] = []  # ticket -> (slot id, its grader)
        grading_pg_cpu = [0.0]  # the grading threads' backends, from their start

        def grade_loop(user) -> None:
            rng = random.Random(user.pk)
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_backend_pid()")
                backend = cursor.fetchone()[0]
                with lock:
                    own_backends.add(backend)
            barrier.wait()
            while True:
                with lock:
                    n = next(ticket, None)
                if n is None:
                    break
                delay = started_at[0] + n / args.rate - time.perf_counter()
                if delay > 0:
                    time.sleep(delay)
                if preclaimed:
                    slot_id, grader = preclaimed[n]
                else:
                    slot = slot_claim_next(user=user, team=team, evaluation=evaluation)
                    if slot is None:
                        errors.append("the queue ran dry")
                        break
                    slot_id, grader = slot.pk, user
                feedback_submit(user=grader, slot_id=slot_id, grade=rng.randint(0, 3))
                with lock:
                    last_grade_at[0] = max(last_grade_at[0], time.perf_counter())
            with lock:
                grading_pg_cpu[0] += cpu_seconds(backend)
            connections.close_all()

        def settle(timeout: float = 120) -> tuple[float, bool]:
            from metrics.models import KeywordRecomputeMark

            deadline = time.perf_counter() + timeout
            while time.perf_counter() < deadline:
                clean = not KeywordRecomputeMark.objects.filter(
                    evaluation=evaluation, dirty_since__isnull=False).exists()
                if clean and from_scratch_matches(evaluation):
                    return time.perf_counter(), True
                time.sleep(0.005)
            return time.perf_counter(), False

        # Warm-up: the worker imports, connects and compiles its first plans.
        warm = args.graders * 3
        ticket = iter(range(warm))
        threads = [threading.Thread(target=grade_loop, args=(u,)) for u in users]
        started_at[0] = time.perf_counter() + 0.05
        for thread in threads:
            thread.start()
        barrier.wait()
        for thread in threads:
            thread.join()
        settle()
        drain(log_path, queue)

        worker_pids = process_tree(worker.pid)
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            own_backends.add(cursor.fetchone()[0])
            cursor.execute("SELECT pid FROM pg_stat_activity WHERE datname = %s", [DB_NAME])
            backends = {pid for (pid,) in cursor.fetchall()}
        worker_backends = backends - own_backends
        # The worker's Django fixup closes its connection around every task, so most of its
        # backends exit during the run: their CPU lands in the postmaster's reaped children.
        postmaster = parent_pid(next(iter(own_backends & backends)))
        log_before = log_path.read_text()
        cpu_before = {pid: cpu_seconds(pid) for pid in worker_pids}
        pg_before = {pid: cpu_seconds(pid) for pid in worker_backends}
        reaped_before = reaped_children_seconds(postmaster)
        own_before = time.process_time()
        grading_pg_cpu[0] = 0.0
        receiver_cpu[0], enqueued[0] = 0.0, 0

        if args.preclaim:
            preclaimed[:] = preclaim(evaluation, users, total)
        ticket = iter(range(total))
        barrier = threading.Barrier(args.graders + 1)
        threads = [threading.Thread(target=grade_loop, args=(u,)) for u in users]
        for thread in threads:
            thread.start()
        started_at[0] = time.perf_counter() + 0.05
        barrier.wait()
        for thread in threads:
            thread.join()
        own_cpu = time.process_time() - own_before
        settled_at, matches = settle()
        lag = settled_at - last_grade_at[0]
        wall = last_grade_at[0] - started_at[0]
        drained_at = drain(log_path, queue)
        cpu_after = {pid: cpu_seconds(pid) for pid in process_tree(worker.pid)}
        pg_after = {pid: cpu_seconds(pid) for pid in worker_backends}
        reaped = reaped_children_seconds(postmaster) - reaped_before
        log = log_path.read_text()[len(log_before):]
    finally:
        worker.terminate()
        worker.wait()
        recompute_keyword.apply_async = real_apply_async
        drop_database(DB_NAME)
        subprocess.run(["redis-cli", "-n", BROKER_URL.rsplit("/", 1)[1], "del", queue],
                       check=False, capture_output=True)

    outcomes: dict[str, int] = {}
    task_seconds = 0.0
    for seconds, outcome in re.findall(
            r"metrics\.recompute_keyword\[[^\]]+\] succeeded in ([0-9.]+)s: '?(\w+)'?", log):
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
        task_seconds += float(seconds)
    worker_cpu = sum(cpu_after.get(pid, 0.0) - cpu_before.get(pid, 0.0) for pid in cpu_after)
    kept = sum(pg_after[pid] - pg_before[pid] for pid in worker_backends if pg_after[pid])
    (print(log_path) if os.environ.get("KEEP_LOG") else log_path.unlink())
    return {
        "tree": str(REPO), "worker_keeps_connection": args.worker_keeps_connection,
        "preclaim": args.preclaim,
        "grades": total, "rate": round(total / wall, 1),
        "worker_cpu_ms_per_grade": round(1000 * worker_cpu / total, 3),
        "worker_pg_cpu_ms_per_grade": round(1000 * kept / total, 3),
        "reaped_pg_cpu_ms_per_grade": round(1000 * reaped / total, 3),
        "receiver_cpu_ms_per_grade": round(1000 * receiver_cpu[0] / total, 3),
        "grading_cpu_ms_per_grade": round(1000 * own_cpu / total, 3),
        "grading_pg_cpu_ms_per_grade": round(1000 * grading_pg_cpu[0] / total, 3),
        "enqueued_per_grade": round(enqueued[0] / total, 3),
        "tasks": sum(outcomes.values()), "outcomes": outcomes,
        "task_wall_ms_per_grade": round(1000 * task_seconds / total, 3),
        "lag_ms": round(1000 * lag, 1), "from_scratch_equal": matches,
        "drain_ms": round(1000 * (drained_at - last_grade_at[0]), 1),
        "errors": errors[:1],
    }


def print_rows(rows: list[dict]) -> None:
    names = [("rate", "grades/s"), ("worker_cpu_ms_per_grade", "worker CPU ms/grade"),
             ("worker_pg_cpu_ms_per_grade", "PostgreSQL CPU ms/grade, worker's kept backends"),
             ("reaped_pg_cpu_ms_per_grade", "PostgreSQL CPU ms/grade, backends that exited (*)"),
             ("grading_cpu_ms_per_grade", "grading process CPU ms/grade"),
             ("receiver_cpu_ms_per_grade", "  of which the receiver"),
             ("grading_pg_cpu_ms_per_grade", "its PostgreSQL backends' CPU ms/grade"),
             ("enqueued_per_grade", "tasks the receiver enqueued/grade"),
             ("tasks", "recompute tasks run"), ("outcomes", "outcomes"),
             ("task_wall_ms_per_grade", "task wall ms/grade"),
             ("lag_ms", "lag last grade -> clean and equal, ms"),
             ("drain_ms", "last grade -> worker queue drained, ms"),
             ("from_scratch_equal", "stored == from scratch")]
    labels = ["HEAD", "this tree"] if len(rows) == 2 else ["this tree"]
    print(f"{'':42}" + "".join(f"{label:>16}" for label in labels)
          + ("      ratio" if len(rows) == 2 else ""))
    for key, name in names:
        cells = "".join(f"{json.dumps(row[key]) if isinstance(row[key], dict) else row[key]!s:>16}"
                        for row in rows)
        ratio = ""
        if len(rows) == 2 and isinstance(rows[0][key], int | float) and not isinstance(
                rows[0][key], bool) and rows[0][key]:
            ratio = f"{rows[1][key] / rows[0][key]:>11.3f}"
        print(f"{name:42}{cells}{ratio}")
    print("(*) the worker opens one connection per task unless CELERY_DB_REUSE_MAX is set "
          "(--worker-keeps-connection):\n    those backends exit during the run; so does any "
          "other backend of the server meanwhile (other databases too)")
    for row in rows:
        if row["errors"]:
            print(f"# {row['tree']}: errors {row['errors']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=200, help="grades per second")
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--graders", type=int, default=8)
    parser.add_argument("--keywords", type=int, default=400)
    parser.add_argument("--tree", help="run the benchmark from this source tree")
    parser.add_argument("--compare-head", action="store_true")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--preclaim", action="store_true",
                        help="lease the slots before the timed run (slot_claim_next is not timed)")
    parser.add_argument("--worker-keeps-connection", action="store_true",
                        help="start the worker with CELERY_DB_REUSE_MAX set (not the default)")
    args = parser.parse_args()
    passed = [f"--rate={args.rate}", f"--seconds={args.seconds}", f"--graders={args.graders}",
              f"--keywords={args.keywords}", "--json",
              *(["--worker-keeps-connection"] if args.worker_keeps_connection else []),
              *(["--preclaim"] if args.preclaim else [])]
    if args.tree:
        tree = Path(args.tree).resolve()
        shutil.copy(HERE, tree / "bench" / HERE.name)
        output = subprocess.run([sys.executable, str(tree / "bench" / HERE.name), *passed],
                                cwd=tree, check=True, capture_output=True, text=True).stdout
        row = json.loads(output.strip().splitlines()[-1])
        print(json.dumps(row) if args.json else "", end="\n" if args.json else "")
        if not args.json:
            print_rows([row])
        return
    rows = []
    if args.compare_head:
        with tempfile.TemporaryDirectory(prefix="searchtweak-head-") as tree:
            archive = subprocess.run(["git", "archive", "HEAD"], cwd=HERE.parents[1],
                                     check=True, capture_output=True).stdout
            subprocess.run(["tar", "-x", "-C", tree], input=archive, check=True)
            shutil.copy(HERE, Path(tree) / "bench" / HERE.name)
            output = subprocess.run([sys.executable, str(Path(tree) / "bench" / HERE.name),
                                     *passed], cwd=tree, check=True, capture_output=True,
                                    text=True).stdout
            rows.append(json.loads(output.strip().splitlines()[-1]))
    rows.append(run(args))
    if args.json:
        for row in rows:
            print(json.dumps(row))
    else:
        print(f"# {args.graders} grading threads at {args.rate:g} grades/s for {args.seconds:g} s"
              f", 1 Celery worker (prefork, concurrency 1), PostgreSQL, Redis; "
              f"{os.cpu_count()} CPUs")
        print_rows(rows)


if __name__ == "__main__":
    main()
