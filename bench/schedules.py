"""Benchmark of the schedules' tick on PostgreSQL.

1. 1,000 schedules due at once (each over a query set of 20 keywords, 2 metrics): one tick,
   as one worker runs it, creates every run; the seconds it takes. Target <= 10 s.
2. Another 1,000 due at once, ticked by two threads racing (two beat processes): every
   due time must make exactly one run; the seconds until both ticks end.
3. The tick's own cost when nothing is due (2,000 schedules, none due): median and p95 of
   50 ticks. Target <= 50 ms.

    .venv/bin/python bench/schedules.py [--schedules 1000] [--keywords 20]

It creates (and drops) the database `searchtweak_bench_schedules` on the local PostgreSQL
and sends the runs' fetch tasks to Redis database 13, which nothing consumes and which is
flushed at the end (the fetch is not what is measured). Figures print; nothing is asserted
except that each due time made one run.
"""

import argparse
import statistics
import threading
import time
from datetime import timedelta

import redis
from _support import (
    bench_database,
    bench_redis,
    database_url,
    drop_database,
    percentile,
    recreate_database,
    setup_django,
)

DB_NAME = bench_database("schedules")
BROKER_URL = bench_redis("redis://127.0.0.1:6379/13")
ENV = {"DATABASE_URL": database_url(DB_NAME), "CELERY_BROKER_URL": BROKER_URL,
       "DEBUG": "false", "SECRET_KEY": "bench-only", "ALLOWED_HOSTS": "127.0.0.1"}
METRICS = [{"code": "ndcg", "k": 10, "params": {}}, {"code": "precision", "k": 10,
                                                     "params": {}}]


def seed(team_name: str, count: int, keywords: int, due_at) -> None:
    """`count` interval schedules of one team, all due at `due_at`."""
    from evaluations.models import Endpoint, SearchModel
    from evaluations.query_sets import services as query_set_services
    from schedules import services as schedule_services
    from schedules.models import Schedule
    from searchtweak.models import Team

    team = Team.objects.create(name=team_name)
    endpoint = Endpoint.objects.create(
        team=team, name="Nowhere", url="http://127.0.0.1:9/search",
        mapper={"documents": "docs", "id": "id", "name": "title", "image": None,
                "fields": {}})
    model = SearchModel.objects.create(team=team, endpoint=endpoint, name="Model",
                                       params={"q": "#query#"})
    query_set = query_set_services.query_set_create(
        team=team, created_by=None, name="Queries",
        keywords=[f"query {n}" for n in range(keywords)])
    first = schedule_services.schedule_create(
        team=team, created_by=None, name="Watch 0", model=model, query_set=query_set,
        scale="graded", strategy=1, metrics=METRICS, interval_minutes=60,
        baseline=Schedule.Baseline.PREVIOUS)
    fields = {f.attname: getattr(first, f.attname) for f in Schedule._meta.concrete_fields
              if f.attname not in ("id", "name")}
    Schedule.objects.bulk_create([Schedule(**fields, name=f"Watch {n}")
                                  for n in range(1, count)], batch_size=500)
    Schedule.objects.filter(team=team).update(next_due_at=due_at)


def runs_of(team_name: str) -> tuple[int, int]:
    """(runs, schedules with a run) of the team."""
    from django.db.models import Count

    from schedules.models import ScheduleRun

    runs = ScheduleRun.objects.filter(schedule__team__name=team_name)
    per_schedule = runs.values("schedule_id").annotate(n=Count("pk"))
    return runs.count(), per_schedule.count()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--schedules", type=int, default=1000)
    parser.add_argument("--keywords", type=int, default=20)
    parser.add_argument("--idle-ticks", type=int, default=50)
    args = parser.parse_args()

    recreate_database(DB_NAME, ENV)
    setup_django(ENV)
    from django.db import connection
    from django.utils import timezone

    from schedules import firing

    try:
        now = timezone.now()
        seed("One worker", args.schedules, args.keywords, now - timedelta(seconds=1))
        started = time.perf_counter()
        report = firing.schedules_tick()
        one_worker = time.perf_counter() - started
        runs, schedules = runs_of("One worker")
        print(f"1. {args.schedules} due, one tick: {report.fired} runs fired in "
              f"{one_worker:.2f} s ({one_worker / max(report.fired, 1) * 1000:.1f} ms a run); "
              f"{runs} runs for {schedules} schedules")

        seed("Two beats", args.schedules, args.keywords, timezone.now() - timedelta(seconds=1))
        reports, barrier = [], threading.Barrier(2)

        def racing_tick() -> None:
            try:
                barrier.wait()
                reports.append(firing.schedules_tick())
            finally:
                connection.close()

        threads = [threading.Thread(target=racing_tick) for _ in range(2)]
        started = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        racing = time.perf_counter() - started
        runs, schedules = runs_of("Two beats")
        fired = [r.fired for r in reports]
        skipped = [r.skipped for r in reports]
        print(f"2. {args.schedules} due, two ticks racing: fired {fired}, skipped {skipped}, "
              f"{racing:.2f} s; {runs} runs for {schedules} schedules "
              f"({'each due time once' if runs == schedules == args.schedules else 'WRONG'})")

        timings = []
        for _ in range(args.idle_ticks):
            started = time.perf_counter()
            idle = firing.schedules_tick()
            timings.append((time.perf_counter() - started) * 1000)
            assert idle.fired == 0
        print(f"3. nothing due ({2 * args.schedules} schedules): tick median "
              f"{statistics.median(timings):.2f} ms, p95 {percentile(timings, 0.95):.2f} ms "
              f"over {args.idle_ticks} ticks")
    finally:
        drop_database(DB_NAME)
        redis.Redis.from_url(BROKER_URL).flushdb()


if __name__ == "__main__":
    main()
