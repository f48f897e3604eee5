"""Benchmark of the evaluation dashboard on PostgreSQL.

For an evaluation of 10 keywords and one of 5,000 keywords (10 results, 3 slots, 6 metrics,
90 % of the slots graded, stored values from the real recompute), measures the server time
of the evaluation dashboard page (cards, agreement, distribution and the first table page),
of the page sorted by a metric and filtered to the worst keywords, and of the per-keyword
table partial, plus the queries each runs. Target: p95 <= 300 ms at 5,000 keywords and the
same query count at both sizes.

    .venv/bin/python bench/dashboard.py [--requests 40] [--keywords 5000 [100000 ...]]
        [--keep] [--reuse]

It creates (and drops) the database `searchtweak_bench_dashboard` on the local PostgreSQL.
`--keep` leaves it in place; `--reuse` then skips the seeding (3M slots at 100,000 keywords
take minutes) and migrates the kept database instead. With several sizes the summary prints
each request's p95 side by side with the ratio of the largest size to the one before.
Requests go through Django's test client in-process: the time is the server's (middleware,
view, queries, template), without a network hop.
"""

import argparse
import statistics
import time

from _support import (
    SIX_METRICS as METRICS,
)
from _support import (
    bench_database,
    database_url,
    drop_database,
    migrate_database,
    percentile,
    recreate_database,
    seed_evaluation,
    setup_django,
)

DB_NAME = bench_database("dashboard")
ENV = {"DATABASE_URL": database_url(DB_NAME), "DEBUG": "false", "SECRET_KEY": "bench-only",
       "ALLOWED_HOSTS": "testserver,127.0.0.1",
       # The test client asks over plain HTTP.
       "SECURE_SSL_REDIRECT": "false", "SECURE_HSTS_SECONDS": "0"}


def seed(keyword_count: int, *, team, graders, name: str):
    from metrics.services import evaluation_metrics_recompute

    evaluation = seed_evaluation(keyword_count, team=team, graders=graders, name=name,
                                 graded_fraction=0.9)
    evaluation_metrics_recompute(evaluation_id=evaluation.pk)
    return evaluation


def measure(client, url: str, params: dict, requests: int,
            cold: bool = False) -> tuple[list[float], int]:
    """Server times of `requests` GETs after one warm-up; `cold` empties the cache before
    each, so the agreement statistics are recomputed from every slot every time."""
    from django.core.cache import cache
    from django.db import connection

    executed = []

    def count(execute, sql, params, many, context):
        executed.append(sql)
        return execute(sql, params, many, context)

    # An execute wrapper, not CaptureQueriesContext: each request resets the query log.
    # The warm-up runs uncached, so the count is the full one.
    cache.clear()
    with connection.execute_wrapper(count):
        response = client.get(url, params)  # warm-up, and the query count
    assert response.status_code == 200, (url, response.status_code)
    timings = []
    for _ in range(requests):
        if cold:
            cache.clear()
        started = time.perf_counter()
        response = client.get(url, params)
        timings.append(time.perf_counter() - started)
        assert response.status_code == 200
    return timings, len(executed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=40)
    parser.add_argument("--keywords", type=int, nargs="+", default=[5000])
    parser.add_argument("--keep", action="store_true", help="keep the database afterwards")
    parser.add_argument("--reuse", action="store_true",
                        help="use the database a --keep run left (migrated, not reseeded)")
    args = parser.parse_args()
    if args.reuse:
        migrate_database(ENV)
    else:
        recreate_database(DB_NAME, ENV)
    setup_django(ENV)
    from django.test import Client
    from django.urls import reverse

    from evaluations.models import Evaluation
    from searchtweak.models import Membership, Role, Team, User

    sizes = [10, *args.keywords]
    if args.reuse:
        lead = User.objects.get(username="bench-lead")
        evaluations = {size: Evaluation.objects.get(name=f"bench{size}") for size in sizes}
        try:  # the dashboard's counts, on a database seeded before they existed
            from metrics.recompute.aggregates import dashboard_aggregates_rebuild
        except ImportError:  # a checkout from before them: the page counts from scratch
            pass
        else:
            for evaluation in evaluations.values():
                dashboard_aggregates_rebuild(evaluation_id=evaluation.pk)
    else:
        team = Team.objects.create(name="Bench")
        lead = User.objects.create_user("bench-lead", password="x", current_team=team)
        Membership.objects.create(team=team, user=lead, role=Role.LEAD)
        graders = []
        for i in range(3):
            grader = User.objects.create_user(f"bench-grader{i}", password="x",
                                              current_team=team)
            Membership.objects.create(team=team, user=grader, role=Role.GRADER)
            graders.append(grader)
        print(f"seeding {', '.join(f'{size:,}' for size in sizes)} keywords x 10 results x "
              f"3 slots, {len(METRICS)} metrics ...", flush=True)
        evaluations = {size: seed(size, team=team, graders=graders, name=f"bench{size}")
                       for size in sizes}
    client = Client()
    client.force_login(lead)
    print()
    print(f"{'request':<34} {'keywords':>9} {'queries':>8} {'p50 ms':>8} {'p95 ms':>8} "
          f"{'max ms':>8}")
    results = {}
    for label, name, params in [
        ("dashboard page", "metrics:evaluation_dashboard", {}),
        ("dashboard page, nothing cached", "metrics:evaluation_dashboard", {"cold": True}),
        ("dashboard, worst by nDCG", "metrics:evaluation_dashboard", {"show": "worst"}),
        ("per-keyword table, sorted, page 20", "metrics:evaluation_dashboard_table",
         {"page": "20"}),
    ]:
        for size in sizes:
            evaluation = evaluations[size]
            query = dict(params)
            cold = bool(query.pop("cold", False))
            if name.endswith("table") or params.get("show"):
                ndcg = evaluation.metric_configs.get(code="ndcg")
                query.update(sort=f"m{ndcg.pk}", dir="desc")
            timings, query_count = measure(
                client, reverse(name, args=[evaluation.pk]), query, args.requests, cold=cold)
            results[(label, size)] = (query_count, percentile(timings, 0.95))
            print(f"{label:<34} {size:>9,} {query_count:>8} "
                  f"{statistics.median(timings) * 1000:>8.1f} "
                  f"{percentile(timings, 0.95) * 1000:>8.1f} {max(timings) * 1000:>8.1f}",
                  flush=True)
    print()
    big = sizes[-1]
    print(f"{'p95 ms':<34} " + " ".join(f"{size:>9,}" for size in sizes)
          + (f" {'ratio':>7}" if len(sizes) > 2 else ""))
    for label in dict.fromkeys(label for label, _ in results):
        row = [results[(label, size)][1] * 1000 for size in sizes]
        ratio = f" {row[-1] / row[-2]:>7.2f}" if len(sizes) > 2 else ""
        print(f"{label:<34} " + " ".join(f"{ms:>9.1f}" for ms in row) + ratio)
    print()
    for label in dict.fromkeys(label for label, _ in results):
        small_queries, _ = results[(label, 10)]
        big_queries, p95 = results[(label, big)]
        verdict = "ok" if p95 <= 0.3 and small_queries == big_queries else "MISSED"
        print(f"{label}: p95 {p95 * 1000:.0f} ms at {big:,} keywords (target <= 300), "
              f"queries {small_queries} vs {big_queries} -> {verdict}")
    if not args.keep:
        from django.db import connections

        connections.close_all()
        drop_database(DB_NAME)


if __name__ == "__main__":
    main()
