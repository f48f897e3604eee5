"""Benchmark of the N-way compare: 10 evaluations x 5,000 keywords.

Seeds one team with 10 evaluations of the same 5,000 keywords (10 results each, 3 metrics,
stored per-keyword values, about 3 % of the keywords without a value), then measures the
server time of the compare page (reference mode and Tukey mode, first page of keywords)
and of the API (first 50 keywords), each request warm (the seeded statistics cached, as
they are after the first view of a set of evaluations) and the very first one cold. It
also checks that the query count is the same with 2 and with 10 evaluations.
Target: page and API p95 <= 500 ms.

    .venv/bin/python bench/compare_many.py [--requests 30] [--keywords 5000]

Without DATABASE_URL it runs on a throw-away SQLite file; with DATABASE_URL (PostgreSQL)
it migrates that database, which must be a throw-away one, and deletes what it seeded at
the end. Requests go through Django's test client in-process: the time is the server's
(middleware, view, queries, template), without a network hop.
"""

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
METRICS = [("precision", 10, {}), ("ndcg", 10, {}), ("rr", 10, {})]
EVALUATIONS = 10


def setup(database_url: str) -> None:
    os.environ.update({"DATABASE_URL": database_url, "DEBUG": "false",
                       "SECRET_KEY": "bench-only", "ALLOWED_HOSTS": "testserver",
                       "SECURE_SSL_REDIRECT": "false", "SECURE_HSTS_SECONDS": "0"})
    os.environ["DJANGO_SETTINGS_MODULE"] = "searchtweak.settings"
    sys.path.insert(0, str(REPO))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def seed(keyword_count: int):
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
    from metrics.models import KeywordMetricValue, MetricMean
    from searchtweak.models import Membership, Role, Team, User

    team = Team.objects.create(name="Bench compare many")
    lead = User.objects.create_user("bench-many-lead", password="x", current_team=team)
    Membership.objects.create(team=team, user=lead, role=Role.LEAD)
    endpoint = Endpoint.objects.create(team=team, name="bench endpoint",
                                       url="http://127.0.0.1:9/", mapper={})
    model = SearchModel.objects.create(team=team, endpoint=endpoint, name="bench model")
    rng = np.random.default_rng(11)
    now = timezone.now()
    evaluations = []
    for n in range(EVALUATIONS):
        evaluation = Evaluation.objects.create(
            team=team, model=model, name=f"run {n + 1}", scale="graded", strategy=1,
            status=Evaluation.Status.FINISHED, started_at=now, finished_at=now)
        configs = EvaluationMetric.objects.bulk_create(
            EvaluationMetric(evaluation=evaluation, code=code, k=k, params=params, position=i)
            for i, (code, k, params) in enumerate(METRICS))
        # The stored means' times key the compare's caches, as a recompute leaves them.
        MetricMean.objects.bulk_create(MetricMean(metric=config, updated_at=now)
                                       for config in configs)
        keywords = Keyword.objects.bulk_create(
            (Keyword(evaluation=evaluation, position=i + 1, text=f"query {i}",
                     normalized_text=f"query {i}", fetch_status="fetched")
             for i in range(keyword_count)), batch_size=5000)
        # Each run swaps a few documents of the first's lists, so churn is never empty.
        Snapshot.objects.bulk_create(
            (Snapshot(keyword=keyword, position=p, name=f"Doc {p}",
                      doc_id=f"d{i}-{p + (n if p > 7 else 0)}")
             for i, keyword in enumerate(keywords) for p in range(1, 11)), batch_size=10000)
        base = rng.random((keyword_count, len(METRICS)))
        values = np.clip(base + rng.normal(0, 0.05 * n, base.shape), 0, 1)
        missing = rng.random(base.shape) < 0.03
        KeywordMetricValue.objects.bulk_create(
            (KeywordMetricValue(keyword=keyword, metric=config,
                                value=None if missing[i, m] else float(values[i, m]))
             for i, keyword in enumerate(keywords) for m, config in enumerate(configs)),
            batch_size=10000)
        evaluations.append(evaluation)
        print(f"  seeded {evaluation.name}", flush=True)
    return team, lead, evaluations


def cleanup(team) -> None:
    """What seed() made, in the order the protected foreign keys allow."""
    from evaluations.models import Endpoint, Evaluation, SearchModel

    Evaluation.objects.filter(team=team).delete()
    SearchModel.objects.filter(team=team).delete()
    Endpoint.objects.filter(team=team).delete()
    team.memberships.all().delete()
    team.delete()
    from searchtweak.models import User

    User.objects.filter(username="bench-many-lead").delete()


def measure(client, url: str, requests: int) -> tuple[float, list[float], int]:
    """The cold first request's time, then `requests` warm ones, and the query count."""
    from django.core.cache import cache
    from django.db import connection

    executed: list[str] = []

    def count(execute, sql, params, many, context):
        executed.append(sql)
        return execute(sql, params, many, context)

    cache.clear()
    with connection.execute_wrapper(count):
        started = time.perf_counter()
        response = client.get(url)
        cold = time.perf_counter() - started
    assert response.status_code == 200, (url, response.status_code)
    timings = []
    for _ in range(requests):
        started = time.perf_counter()
        response = client.get(url)
        timings.append(time.perf_counter() - started)
        assert response.status_code == 200
    return cold, timings, len(executed)


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=30)
    parser.add_argument("--keywords", type=int, default=5000)
    args = parser.parse_args()
    directory = None
    database_url = os.environ.get("DATABASE_URL", "")
    if not database_url:
        directory = tempfile.TemporaryDirectory(prefix="bench-compare-many-")
        database_url = f"sqlite:///{directory.name}/bench.sqlite3"
    setup(database_url)
    from django.db import connection
    from django.test import Client
    from django.urls import reverse

    print(f"{connection.vendor}: seeding {EVALUATIONS} evaluations x {args.keywords:,} "
          f"keywords x 10 results, {len(METRICS)} metrics ...", flush=True)
    team, lead, evaluations = seed(args.keywords)
    client = Client()
    client.force_login(lead)
    page = reverse("metrics:compare_many")

    def query(chosen, **extra) -> str:
        parts = [f"evaluation={e.pk}" for e in chosen] + [f"{k}={v}" for k, v in extra.items()]
        return "?" + "&".join(parts)

    cases = [
        ("page, 10 vs reference", page + query(evaluations)),
        ("page, 10, changed, by text", page + query(evaluations, show="changed", sort="text",
                                                   page=20)),
        ("page, 10, Tukey HSD", page + query(evaluations, mode="tukey")),
        ("API, 10 vs reference", "/api/v1/compare/" + query(evaluations)),
        ("page, 2 (query count)", page + query(evaluations[:2])),
        ("API, 2 (query count)", "/api/v1/compare/" + query(evaluations[:2])),
    ]
    print()
    print(f"{'request':<30} {'queries':>8} {'cold ms':>9} {'p50 ms':>8} {'p95 ms':>8} "
          f"{'max ms':>8}")
    results = {}
    try:
        for label, url in cases:
            cold, timings, query_count = measure(client, url, args.requests)
            results[label] = (query_count, percentile(timings, 0.95))
            print(f"{label:<30} {query_count:>8} {cold * 1000:>9.0f} "
                  f"{statistics.median(timings) * 1000:>8.1f} "
                  f"{percentile(timings, 0.95) * 1000:>8.1f} {max(timings) * 1000:>8.1f}",
                  flush=True)
    finally:
        if directory is None:
            cleanup(team)
    print()
    for label in ("page, 10 vs reference", "API, 10 vs reference"):
        p95 = results[label][1]
        print(f"{label}: p95 {p95 * 1000:.0f} ms (target <= 500) -> "
              f"{'ok' if p95 <= 0.5 else 'MISSED'}")
    flat = (results["page, 10 vs reference"][0] == results["page, 2 (query count)"][0]
            and results["API, 10 vs reference"][0] == results["API, 2 (query count)"][0])
    print(f"queries with 2 and 10 evaluations equal: {'ok' if flat else 'MISSED'}")
    if directory is not None:
        connection.close()
        directory.cleanup()


if __name__ == "__main__":
    main()
