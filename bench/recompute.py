"""Benchmark of the recompute pipeline on PostgreSQL + Redis with a real Celery worker.

Measures, for an evaluation of 10 keywords and one of 5,000 keywords (10 results, 3 slots,
6 metrics), the time from a grade POST (HTTP, the documented API) until the evaluation's
stored mean reflects it; and the seconds `recompute_metrics` takes for a fully graded
evaluation of 10,000 keywords x 10 results x 3 slots with 6 metrics.

    .venv/bin/python bench/recompute.py [--grades 200] [--quick]
    .venv/bin/python bench/recompute.py --large [--grades 100]

--large measures at scale instead: evaluations of 10,000 and 100,000 keywords (10 results x
3 slots, 6 metrics; graded but slot 0 of the first 100 keywords, seeded in SQL: 3M slots),
the seconds `recompute_metrics` takes for each, then grade -> stored mean at both
(grader 0 grading slot 0, so every grade moves a keyword's values), the two sizes' grades
interleaved; then, every slot graded, the same snapshots graded again (a complete
evaluation's corrections); goal 100k/10k p50 ratio <= 1.5 and `recompute_metrics` at 100k
<= 30 s. BENCH_ROOT runs another checkout's code with this script (bench/_support.REPO);
BENCH_HOLD_LOCKS names lock files to hold while the latencies are measured (held_locks).

It creates (and drops) the database `searchtweak_bench_recompute` on the local PostgreSQL
and uses Redis database 12. Figures print as a table; nothing is asserted.
"""

import argparse
import contextlib
import fcntl
import os
import statistics
import subprocess
import sys
import time

import httpx
from _support import (
    REPO,
    SIX_METRICS,
    bench_database,
    bench_redis,
    database_url,
    drop_database,
    free_port,
    percentile,
    recreate_database,
    report,
    seed_evaluation,
    setup_django,
    sql_seed_evaluation,
)

DB_NAME = bench_database("recompute")
BROKER_URL = bench_redis("redis://127.0.0.1:6379/12")
ENV = {"DATABASE_URL": database_url(DB_NAME), "CELERY_BROKER_URL": BROKER_URL,
       "DEBUG": "false", "SECRET_KEY": "bench-only", "ALLOWED_HOSTS": "127.0.0.1",
       "RECOMPUTE_SWEEP_AFTER_SECONDS": "60",
       # Plain HTTP to the server it starts.
       "SECURE_SSL_REDIRECT": "false", "SECURE_HSTS_SECONDS": "0"}


def wait_for(url: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            httpx.get(url, timeout=1)
            return
        except httpx.HTTPError:
            time.sleep(0.2)
    raise RuntimeError(f"{url} did not come up")


def measure_grade_to_mean(
    client: httpx.Client, evaluation, grade_count: int, *, skip: int = 0
) -> list[float]:
    """Seconds from each grade POST until the evaluation's stored means changed; the
    snapshots graded are the first `grade_count` after the first `skip`."""
    return [grade_to_mean(client, evaluation, snapshot_id, grade)
            for snapshot_id, grade in grade_plan(evaluation, grade_count, skip=skip)]


def grade_plan(evaluation, grade_count: int, *, skip: int = 0, shift: int = 0
               ) -> list[tuple[int, int]]:
    """(snapshot, grade) for the first `grade_count` snapshots after the first `skip`, in
    keyword order: grades 0, 1, 2, 3, 0, ... moved up by `shift` (mod 4), so a second
    plan with another shift changes every grade the first one gave."""
    from evaluations.models import Snapshot

    snapshot_ids = list(Snapshot.objects.filter(keyword__evaluation=evaluation)
                        .order_by("keyword__position", "position")
                        .values_list("pk", flat=True)[skip:skip + grade_count])
    return [(snapshot_id, (number + shift) % 4) for number, snapshot_id in
            enumerate(snapshot_ids, start=skip)]


def grade_to_mean(client: httpx.Client, evaluation, snapshot_id: int, grade: int) -> float:
    """Seconds from one grade POST until the evaluation's stored means changed."""
    from evaluations.models import EvaluationMetric

    before = set(EvaluationMetric.objects.filter(evaluation=evaluation)
                 .with_stored_mean().values_list("updated_at", flat=True))
    started = time.perf_counter()
    response = client.post(f"/api/v1/snapshots/{snapshot_id}/grade/", json={"grade": grade})
    response.raise_for_status()
    while True:
        now = set(EvaluationMetric.objects.filter(evaluation=evaluation)
                  .with_stored_mean().values_list("updated_at", flat=True))
        if now != before and None not in now:
            return time.perf_counter() - started
        if time.perf_counter() - started > 10:
            raise RuntimeError("the mean did not update within 10 s")
        time.sleep(0.002)


def measure_interleaved(client: httpx.Client, plans: dict) -> dict[int, list[float]]:
    """grade_to_mean for each size's plan, {size: (evaluation, [(snapshot, grade)])}, one
    grade of each size a round, the size that goes first alternating: a change in the
    shared host's load falls on every size alike, which measuring one size after the
    other let fall on one."""
    sizes = list(plans)
    latencies: dict[int, list[float]] = {size: [] for size in sizes}
    for number in range(max(len(plan) for _, plan in plans.values())):
        for size in sizes if number % 2 == 0 else sizes[::-1]:
            evaluation, plan = plans[size]
            if number < len(plan):
                latencies[size].append(grade_to_mean(client, evaluation, *plan[number]))
    return latencies


def complete_evaluation(evaluation, graders) -> None:
    """Grade every empty slot as an import does (the grades and their announcement in one
    transaction: the keywords turn dirty and their run is queued after the commit), then
    wait until the worker has stored a progress of 100 %."""
    from django.db import transaction
    from django.utils import timezone

    from evaluations.models import Evaluation
    from judgments.models import FeedbackSlot
    from judgments.signals import grades_written

    empty = FeedbackSlot.objects.filter(evaluation=evaluation, grade__isnull=True)
    with transaction.atomic():
        keyword_ids = sorted(set(empty.values_list("keyword_id", flat=True)))
        for index, grader in enumerate(graders):
            empty.filter(index=index).update(grade=1, user=grader, graded_at=timezone.now())
        grades_written.send(sender=FeedbackSlot, keyword_ids=keyword_ids)
    deadline = time.monotonic() + 120
    while Evaluation.objects.with_recompute_state().values_list(
            "progress", flat=True).get(pk=evaluation.pk) != 100.0:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{evaluation.name} did not reach 100 % within 120 s")
        time.sleep(0.1)


def timed_recompute(evaluation) -> float:
    from django.core.management import call_command

    started = time.perf_counter()
    call_command("recompute_metrics", "--evaluation", str(evaluation.pk), "--quiet")
    return time.perf_counter() - started


def main_large(grade_count: int) -> None:
    from django.db import connection

    recreate_database(DB_NAME, ENV)
    setup_django(ENV)
    from searchtweak.models import Membership, Role, Team, User
    from searchtweak.services import api_token_create

    with connection.cursor() as cursor:
        cursor.execute("SELECT setseed(0.7)")
    team = Team.objects.create(name="Bench")
    graders = [User.objects.create(username=f"bench{i}") for i in range(3)]
    for user in graders:
        Membership.objects.create(team=team, user=user, role=Role.GRADER)
    sizes = (10_000, 100_000)
    evaluations, seconds, again = {}, {}, {}
    for size in sizes:
        started = time.perf_counter()
        evaluations[size] = sql_seed_evaluation(size, team=team, graders=graders,
                                                name=f"kw{size}")
        print(f"seeded {size:,} keywords in {time.perf_counter() - started:.1f} s", flush=True)
        seconds[size] = timed_recompute(evaluations[size])
        print(f"recompute_metrics {size:,}: {seconds[size]:.2f} s", flush=True)
        # Run again over the values it stored: the repair path on a live evaluation, whose
        # rows are updated in place rather than inserted (each insert checks two foreign
        # keys), after a VACUUM as autovacuum would have run.
        vacuum()
        again[size] = timed_recompute(evaluations[size])
        print(f"recompute_metrics {size:,} again: {again[size]:.2f} s", flush=True)
    port = free_port()
    redis_db = BROKER_URL.rsplit("/", 1)[-1]
    subprocess.run(["redis-cli", "-n", redis_db, "flushdb"], check=True, capture_output=True)
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "searchtweak.wsgi:application", "--bind",
         f"127.0.0.1:{port}", "--workers", "2", "--log-level", "warning"],
        cwd=REPO, env={**os.environ, **ENV})
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "searchtweak", "worker", "--concurrency=2",
         "--loglevel=WARNING", "--without-gossip", "--without-mingle"], cwd=REPO,
        env={**os.environ, **ENV})
    phases = {}
    try:
        wait_for(f"http://127.0.0.1:{port}/healthz")
        time.sleep(2)
        _, key = api_token_create(user=graders[0], name="bench")
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10,
                          headers={"Authorization": f"Token {key}"}) as client:
            def measure(shift: int) -> dict[int, list[float]]:
                measure_interleaved(client, {  # warm-up
                    size: (evaluations[size], grade_plan(evaluations[size], 5, shift=shift))
                    for size in sizes})
                return measure_interleaved(client, {
                    size: (evaluations[size],
                           grade_plan(evaluations[size], grade_count, skip=5, shift=shift))
                    for size in sizes})

            with held_locks():
                loads = [os.getloadavg()[0]]
                phases["grade"] = measure(0)
                # Every slot graded: the same snapshots graded again, each to another
                # grade (a lead's corrections of a complete evaluation whose finish is
                # theirs).
                for size in sizes:
                    complete_evaluation(evaluations[size], graders)
                phases["regrade, every slot graded"] = measure(1)
                loads.append(os.getloadavg()[0])
    finally:
        server.terminate()
        worker.terminate()
        server.wait()
        worker.wait()
    print()
    print("grade POST -> evaluation mean updated (real worker, PostgreSQL, Redis;"
          " the sizes' grades interleaved; host load average"
          f" {loads[0]:.2f} before, {loads[1]:.2f} after)")
    p50 = {}
    for phase, latencies in phases.items():
        print(f"{phase}:")
        print(f"{'keywords':>9} {'grades':>7} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8}")
        p50[phase] = {size: statistics.median(latencies[size]) for size in sizes}
        for size in sizes:
            print(f"{size:>9,} {len(latencies[size]):>7} {p50[phase][size] * 1000:>8.1f}"
                  f" {percentile(latencies[size], 0.95) * 1000:>8.1f}"
                  f" {max(latencies[size]) * 1000:>8.1f}")
        print(f"p50 ratio 100,000 / 10,000 keywords: "
              f"{p50[phase][100_000] / p50[phase][10_000]:.2f} (goal <= 1.5)")
    for size in sizes:
        print(f"recompute_metrics, {size:,} keywords x 10 x 3 slots (graded),"
              f" {len(SIX_METRICS)} metrics: {seconds[size]:.2f} s;"
              f" again, values stored: {again[size]:.2f} s")
    drop_database(DB_NAME)
    for phase, latencies in phases.items():
        label = "grade POST -> mean stored" + ("" if phase == "grade" else f" ({phase})")
        report(f"{label}, p50", "ms",
               {_size(size): p50[phase][size] * 1000 for size in sizes}, target="ratio <= 1.5")
        report(f"{label}, p95", "ms",
               {_size(size): percentile(latencies[size], 0.95) * 1000 for size in sizes},
               target="ratio <= 1.5")
    report("recompute_metrics (x 10 results x 3 slots, 6 metrics)", "s",
           {_size(size): seconds[size] for size in sizes}, target="100k <= 30 s")
    report("recompute_metrics again, values stored", "s",
           {_size(size): again[size] for size in sizes}, target="100k <= 30 s")


@contextlib.contextmanager
def held_locks():
    """flock each file named in BENCH_HOLD_LOCKS (comma-separated) while the latencies are
    measured: on a shared host, the locks its test runs take turns on keep them off the
    measurement for its minute or two, not for the whole bench."""
    with contextlib.ExitStack() as stack:
        for path in filter(None, os.environ.get("BENCH_HOLD_LOCKS", "").split(",")):
            file = stack.enter_context(open(path, "a"))
            fcntl.flock(file, fcntl.LOCK_EX)
        yield


def vacuum() -> None:
    from django.db import connection

    with connection.cursor() as cursor:  # autocommit: VACUUM refuses a transaction
        cursor.execute("VACUUM ANALYZE")


def _size(keywords: int) -> str:
    return f"{keywords // 1000}k"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grades", type=int, default=200)
    parser.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")
    parser.add_argument("--large", action="store_true",
                        help="10,000 and 100,000 keywords: recompute_metrics and grade latency")
    args = parser.parse_args()
    if args.large:
        main_large(args.grades)
        return
    big, scratch_size = (500, 1000) if args.quick else (5000, 10_000)

    recreate_database(DB_NAME, ENV)
    setup_django(ENV)
    from django.core.management import call_command

    from searchtweak.models import Membership, Role, Team, User
    from searchtweak.services import api_token_create

    team = Team.objects.create(name="Bench")
    graders = [User.objects.create(username=f"bench{i}") for i in range(3)]
    for user in graders:
        Membership.objects.create(team=team, user=user, role=Role.GRADER)
    print(f"seeding: 10, {big} and {scratch_size} keywords x 10 results x 3 slots ...",
          flush=True)
    small_evaluation = seed_evaluation(10, team=team, graders=graders, name="small",
                                       graded_fraction=0.0)
    big_evaluation = seed_evaluation(big, team=team, graders=graders, name="big",
                                     graded_fraction=0.0)
    scratch_evaluation = seed_evaluation(scratch_size, team=team, graders=graders,
                                         name="scratch", graded_fraction=1.0)

    started = time.perf_counter()
    call_command("recompute_metrics", "--evaluation", str(scratch_evaluation.pk), "--quiet")
    scratch_seconds = time.perf_counter() - started
    print(f"recompute_metrics done in {scratch_seconds:.2f} s", flush=True)

    port = free_port()
    subprocess.run(["redis-cli", "-n", BROKER_URL.rsplit("/", 1)[-1], "flushdb"], check=True,
                   capture_output=True)
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "searchtweak.wsgi:application", "--bind",
         f"127.0.0.1:{port}", "--workers", "2", "--log-level", "warning"],
        cwd=REPO, env={**os.environ, **ENV})
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "searchtweak", "worker", "--concurrency=2",
         "--loglevel=WARNING", "--without-gossip", "--without-mingle"], cwd=REPO,
        env={**os.environ, **ENV})
    try:
        wait_for(f"http://127.0.0.1:{port}/healthz")
        time.sleep(2)  # the worker's own start-up
        rows = []
        for evaluation, size in ((small_evaluation, 10), (big_evaluation, big)):
            _, key = api_token_create(user=graders[0], name="bench")
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10,
                              headers={"Authorization": f"Token {key}"}) as client:
                measure_grade_to_mean(client, evaluation, 5)  # warm-up
                latencies = measure_grade_to_mean(client, evaluation, args.grades, skip=5)
            rows.append((size, latencies))
    finally:
        server.terminate()
        worker.terminate()
        server.wait()
        worker.wait()

    print()
    print("grade POST -> evaluation mean updated (real worker, PostgreSQL, Redis)")
    print(f"{'keywords':>9} {'grades':>7} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8}")
    p95 = {}
    for size, latencies in rows:
        p95[size] = percentile(latencies, 0.95)
        print(f"{size:>9,} {len(latencies):>7} {statistics.median(latencies) * 1000:>8.1f}"
              f" {p95[size] * 1000:>8.1f} {max(latencies) * 1000:>8.1f}")
    print(f"p95 ratio {big:,} / 10 keywords: {p95[big] / p95[10]:.2f} (goal <= 1.5)")
    print(f"recompute_metrics, {scratch_size:,} keywords x 10 x 3 slots, {len(SIX_METRICS)} "
          f"metrics: {scratch_seconds:.2f} s (goal <= 10 s)")
    drop_database(DB_NAME)
    report("grade POST -> mean stored, p95", "ms",
           {str(size): p95[size] * 1000 for size, _ in rows}, target="ratio <= 1.5")
    report("recompute_metrics (x 10 results x 3 slots, 6 metrics)", "s",
           {str(scratch_size): scratch_seconds})

if __name__ == "__main__":
    main()
