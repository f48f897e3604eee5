"""Benchmark of the evaluation dashboard on PostgreSQL.

For an evaluation of 10 keywords and ones of the sizes asked (10 results, 3 slots, 6
metrics, 90 % of the slots graded, stored values from the real recompute), measures, with
the cache emptied before every request, the server time of the evaluation dashboard page
(cards, agreement, distribution and the first table page), of the page showing the worst
keywords, and of the per-keyword table partial: page 1, deep pages (1,000 and the
last-but-one) sorted by nDCG both ways and by position, and a search. A deep page's
query carries its number and the cursor its Next link would carry, so a checkout before
keyset pages reads it with OFFSET and one after by the cursor. Targets: p95 <= 300 ms for
the dashboard and <= 200 ms for the table at 100,000 keywords, the same query count at
every size, and 100k/10k <= 1.5.

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
    report,
    setup_django,
    sql_seed_evaluation,
)

DB_NAME = bench_database("dashboard")
ENV = {"DATABASE_URL": database_url(DB_NAME), "DEBUG": "false", "SECRET_KEY": "bench-only",
       "ALLOWED_HOSTS": "testserver,127.0.0.1",
       # The test client asks over plain HTTP.
       "SECURE_SSL_REDIRECT": "false", "SECURE_HSTS_SECONDS": "0"}


def seed(keyword_count: int, *, team, graders, name: str):
    """Written in SQL (3M slots at 100,000 keywords in about a minute; made as objects they
    took longer than a session), then the values computed by the real recompute."""
    from django.db import connection

    from metrics.services import evaluation_metrics_recompute

    with connection.cursor() as cursor:
        cursor.execute("SELECT setseed(0.7)")
    evaluation = sql_seed_evaluation(keyword_count, team=team, graders=graders, name=name,
                                     graded_share=0.9)
    evaluation_metrics_recompute(evaluation_id=evaluation.pk)
    # The steady state autovacuum reaches a minute after a bulk write: measured on the
    # seed's own statistics (no values yet), the planner walked a metric's whole index for
    # each keyword of a search.
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
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


def deep_page(evaluation, query: dict, page: int, per_page: int) -> dict[str, str]:
    """The query of a deep page: its number (what a checkout before keyset pages reads,
    with OFFSET) and the cursor its Next link carries (the last keyword of the page
    before, in the table's order). `page` < 0 counts from the end (-2: the last-but-one
    page); a page past the end is the last-but-one."""
    from metrics.reports.keyword_table import keyword_queryset
    from metrics.selectors import metric_configs

    configs = metric_configs(evaluation.pk)
    ids = list(keyword_queryset(
        evaluation=evaluation, configs=configs, sort=query.get("sort", "position"),
        descending=query.get("dir") == "desc", search=query.get("q", ""),
    ).values_list("pk", flat=True))
    pages = max(1, -(-len(ids) // per_page))
    if page < 0 or page > pages:
        page = max(1, pages + (page if page < 0 else -2) + 1)
    cursor = {"after": str(ids[(page - 1) * per_page - 1])} if page > 1 else {}
    return {"page": str(page), **cursor}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=40)
    parser.add_argument("--keywords", type=int, nargs="+", default=[5000])
    parser.add_argument("--keep", action="store_true", help="keep the database afterwards")
    parser.add_argument("--reuse", action="store_true",
                        help="use the database a --keep run left (migrated, not reseeded)")
    parser.add_argument("--no-gc-freeze", action="store_true",
                        help="as a web server before gunicorn.conf.py froze its start-up "
                             "objects out of garbage collection")
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
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")  # as seed() leaves it
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
    if not args.no_gc_freeze:
        # As gunicorn.conf.py's post_worker_init does once the views are loaded.
        import gc

        reverse("metrics:evaluation_dashboard", args=[evaluations[10].pk])
        gc.freeze()
    client = Client()
    client.force_login(lead)
    print()
    print(f"{'request':<34} {'keywords':>9} {'queries':>8} {'p50 ms':>8} {'p95 ms':>8} "
          f"{'max ms':>8}")
    results = {}
    table = "metrics:evaluation_dashboard_table"
    per_page = 50
    for label, name, params in [
        ("dashboard page, nothing cached", "metrics:evaluation_dashboard", {}),
        ("dashboard, worst by nDCG", "metrics:evaluation_dashboard", {"show": "worst"}),
        ("table page 1, by position", table, {}),
        ("table page 1, nDCG desc", table, {"sort": "ndcg", "dir": "desc"}),
        ("table page 1000, nDCG asc", table, {"sort": "ndcg", "deep": 1000}),
        ("table page 1000, nDCG desc", table, {"sort": "ndcg", "dir": "desc", "deep": 1000}),
        ("table last-but-one, nDCG desc", table, {"sort": "ndcg", "dir": "desc", "deep": -2}),
        ("table page 1000, by position", table, {"deep": 1000}),
        ("table last-but-one, position", table, {"deep": -2}),
        ("table search '1', nDCG desc", table, {"sort": "ndcg", "dir": "desc", "q": "1"}),
        ("table search '1', page 5", table, {"q": "1", "deep": 5}),
    ]:
        for size in sizes:
            evaluation = evaluations[size]
            query = dict(params)
            if query.get("sort") == "ndcg":
                query["sort"] = f"m{evaluation.metric_configs.get(code='ndcg').pk}"
            if "deep" in query:
                query.update(deep_page(evaluation, query, query.pop("deep"), per_page))
            timings, query_count = measure(
                client, reverse(name, args=[evaluation.pk]), query, args.requests, cold=True)
            results[(label, size)] = (query_count, timings)
            print(f"{label:<34} {size:>9,} {query_count:>8} "
                  f"{statistics.median(timings) * 1000:>8.1f} "
                  f"{percentile(timings, 0.95) * 1000:>8.1f} {max(timings) * 1000:>8.1f}",
                  flush=True)
    print()
    big = sizes[-1]
    print(f"{'p50 / p95 ms':<34} " + " ".join(f"{size:>15,}" for size in sizes)
          + (f" {'ratio p50/p95':>14}" if len(sizes) > 2 else ""))
    for label in dict.fromkeys(label for label, _ in results):
        row = [(statistics.median(results[(label, size)][1]) * 1000,
                percentile(results[(label, size)][1], 0.95) * 1000) for size in sizes]
        ratio = (f" {row[-1][0] / row[-2][0]:>6.2f}/{row[-1][1] / row[-2][1]:<6.2f}"
                 if len(sizes) > 2 else "")
        print(f"{label:<34} " + " ".join(f"{p50:>7.1f}/{p95:<7.1f}" for p50, p95 in row)
              + ratio)
    print()
    for label in dict.fromkeys(label for label, _ in results):
        small_queries, _ = results[(label, sizes[-2])]
        big_queries, timings = results[(label, big)]
        p95 = percentile(timings, 0.95)
        target = 0.3 if label.startswith("dashboard") else 0.2
        verdict = "ok" if p95 <= target and small_queries == big_queries else "MISSED"
        print(f"{label}: p95 {p95 * 1000:.0f} ms at {big:,} keywords (target <= "
              f"{target * 1000:.0f}), queries {small_queries} vs {big_queries} -> {verdict}")
        report(f"{label}, p95", "ms",
               {_size(size): percentile(results[(label, size)][1], 0.95) * 1000
                for size in sizes[1:]},
               target=f"<= {target * 1000:.0f} ms, ratio <= 1.5",
               note=f"{big_queries} queries at every size" if small_queries == big_queries
               else f"queries {small_queries} vs {big_queries}")
    if not args.keep:
        from django.db import connections

        connections.close_all()
        drop_database(DB_NAME)


def _size(keywords: int) -> str:
    return f"{keywords // 1000}k" if keywords >= 1000 else str(keywords)


if __name__ == "__main__":
    main()
