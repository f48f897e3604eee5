"""Benchmark of the evaluation dashboard on PostgreSQL.

For an evaluation of 10 keywords and one of 5,000 keywords (10 results, 3 slots, 6 metrics,
90 % of the slots graded, stored values from the real recompute), measures the server time
of the evaluation dashboard page (cards, agreement, distribution and the first table page),
of the page sorted by a metric and filtered to the worst keywords, and of the per-keyword
table partial, plus the queries each runs. Target: p95 <= 300 ms at 5,000 keywords and the
same query count at both sizes.

    .venv/bin/python bench/dashboard.py [--requests 40] [--keywords 5000]

It creates (and drops) the database `searchtweak_bench_dashboard` on the local PostgreSQL.
Requests go through Django's test client in-process: the time is the server's (middleware,
view, queries, template), without a network hop.
"""

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import psycopg

REPO = Path(__file__).resolve().parents[1]
PG_ADMIN = "postgres://postgres@127.0.0.1:5432/postgres"
DB_NAME = "searchtweak_bench_dashboard"
DATABASE_URL = f"postgres://postgres@127.0.0.1:5432/{DB_NAME}"
METRICS = [("precision", 10, {}), ("ap", 10, {}), ("rr", 10, {}), ("ndcg", 10, {}),
           ("err", 10, {}), ("cg", 10, {})]
ENV = {"DATABASE_URL": DATABASE_URL, "DEBUG": "false", "SECRET_KEY": "bench-only",
       "ALLOWED_HOSTS": "testserver,127.0.0.1"}


def recreate_database() -> None:
    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {DB_NAME}")
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=REPO,
                   env={**os.environ, **ENV}, check=True)


def drop_database() -> None:
    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")


def setup_django() -> None:
    os.environ.update(ENV)
    os.environ["DJANGO_SETTINGS_MODULE"] = "searchtweak.settings"
    sys.path.insert(0, str(REPO))
    import django

    django.setup()


def seed(keyword_count: int, *, team, graders, name: str):
    import numpy as np
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
    from metrics.services import evaluation_metrics_recompute

    endpoint = Endpoint.objects.create(team=team, name=f"{name} endpoint",
                                       url="http://127.0.0.1:9/", mapper={})
    model = SearchModel.objects.create(team=team, endpoint=endpoint, name=f"{name} model")
    evaluation = Evaluation.objects.create(
        team=team, model=model, name=name, scale="graded", strategy=3,
        status=Evaluation.Status.ACTIVE, started_at=timezone.now(), auto_finish=False,
    )
    EvaluationMetric.objects.bulk_create(
        EvaluationMetric(evaluation=evaluation, code=code, k=k, params=params, position=i)
        for i, (code, k, params) in enumerate(METRICS)
    )
    keywords = Keyword.objects.bulk_create(
        Keyword(evaluation=evaluation, position=i + 1, text=f"{name} query {i}",
                normalized_text=f"{name} query {i}", fetch_status="fetched")
        for i in range(keyword_count)
    )
    snapshots = Snapshot.objects.bulk_create(
        (Snapshot(keyword=keyword, position=p, doc_id=f"d{keyword.pk}-{p}", name=f"Doc {p}")
         for keyword in keywords for p in range(1, 11)), batch_size=5000,
    )
    rng = np.random.default_rng(7)
    now = timezone.now()
    slots = []
    for snapshot in snapshots:
        for index in range(3):
            graded = rng.random() < 0.9
            slots.append(FeedbackSlot(
                snapshot=snapshot, keyword_id=snapshot.keyword_id, evaluation=evaluation,
                index=index, position=snapshot.position,
                grade=int(rng.integers(0, 4)) if graded else None,
                user=graders[index] if graded else None, graded_at=now if graded else None,
            ))
    FeedbackSlot.objects.bulk_create(slots, batch_size=5000)
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


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=40)
    parser.add_argument("--keywords", type=int, default=5000)
    parser.add_argument("--keep", action="store_true", help="keep the database afterwards")
    args = parser.parse_args()
    recreate_database()
    setup_django()
    from django.test import Client
    from django.urls import reverse

    from searchtweak.models import Membership, Role, Team, User

    team = Team.objects.create(name="Bench")
    lead = User.objects.create_user("bench-lead", password="x", current_team=team)
    Membership.objects.create(team=team, user=lead, role=Role.LEAD)
    graders = []
    for i in range(3):
        grader = User.objects.create_user(f"bench-grader{i}", password="x", current_team=team)
        Membership.objects.create(team=team, user=grader, role=Role.GRADER)
        graders.append(grader)
    sizes = [10, args.keywords]
    print(f"seeding 10 and {args.keywords:,} keywords x 10 results x 3 slots, "
          f"{len(METRICS)} metrics ...", flush=True)
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
    big = args.keywords
    for label in dict.fromkeys(label for label, _ in results):
        small_queries, _ = results[(label, 10)]
        big_queries, p95 = results[(label, big)]
        verdict = "ok" if p95 <= 0.3 and small_queries == big_queries else "MISSED"
        print(f"{label}: p95 {p95 * 1000:.0f} ms at {big:,} keywords (target <= 300), "
              f"queries {small_queries} vs {big_queries} -> {verdict}")
    if not args.keep:
        from django.db import connections

        connections.close_all()
        drop_database()


if __name__ == "__main__":
    main()
