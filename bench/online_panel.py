"""Benchmark of the "What users did" panel (behaviour.panels / behaviour.summary) on
PostgreSQL: an evaluation of N keywords, every one with behaviour on DAYS days at 10
positions (N x DAYS x 10 count rows and N x DAYS searches rows; 100,000 keywords and 10
days make 10M count rows), in a source beside another team's as large, its window ending
today, its rollup made as an import makes it (behaviour.rollup, the last 7 and 30 days'
rows included; timed). Measures the panel's figures over the whole log, the last 7 days
(the preset's rows, new; the same days' day rows, old) and the last 3 days (day rows),
and over the whole log and the last 3 days from the sums (the four statements the panel
ran before the rollup, behaviour.summary.summary_from_sums), alternated request by
request; and the evaluation dashboard page with the panel (the whole log, the "Last 7
days" preset, the last 3 days), with their query counts. Targets: the dashboard's p95
<= 300 ms at 100,000 keywords (bench/dashboard.py), the same query count at every size.

    .venv/bin/python bench/online_panel.py [--keywords 10000 100000] [--days 10]
        [--requests 10] [--keep] [--reuse]
"""

import argparse
import statistics
import time

from _support import (
    bench_database,
    database_url,
    drop_database,
    migrate_database,
    percentile,
    recreate_database,
    setup_django,
)

DB_NAME = bench_database("online_panel")
ENV = {"DATABASE_URL": database_url(DB_NAME), "DEBUG": "false", "SECRET_KEY": "bench-only",
       "ALLOWED_HOSTS": "testserver,127.0.0.1", "SECURE_SSL_REDIRECT": "false",
       "SECURE_HSTS_SECONDS": "0"}


def seed(keyword_count: int, days: int, *, team, name: str):
    from _support import active_evaluation
    from django.db import connection

    from behaviour.models import BehaviourSource
    from evaluations.models import Keyword

    evaluation = active_evaluation(team=team, name=name, strategy=1)
    Keyword.objects.bulk_create(
        (Keyword(evaluation=evaluation, position=n, text=f"kw {n}", normalized_text=f"kw {n}")
         for n in range(1, keyword_count + 1)), batch_size=5000)
    from datetime import UTC, datetime, timedelta

    from django.utils import timezone
    today = timezone.now().astimezone(UTC).date()
    noon = datetime(today.year, today.month, today.day, 12, tzinfo=UTC)
    source = BehaviourSource.objects.create(team=team, name=f"{name} log", kind="ubi",
                                            window_start_at=noon - timedelta(days=days - 1),
                                            window_end_at=noon)
    with connection.cursor() as cursor:
        cursor.execute("SET session_replication_role = replica")
        cursor.execute(
            "INSERT INTO behaviour_behaviourcount (source_id, keyword, doc_id, position, day,"
            " impressions, clicks, dwell_seconds_sum, dwell_count)"
            " SELECT %s, 'kw ' || g, 'd' || p, p, current_date - d, 20, 20 / (p + 1),"
            " 30.0 * (20 / (p + 1)), 20 / (p + 1)"
            " FROM generate_series(1, %s) g, generate_series(1, 10) p,"
            " generate_series(0, %s) d",
            [source.pk, keyword_count, days - 1])
        cursor.execute(
            "INSERT INTO behaviour_behavioursearches (source_id, keyword, day, search_count,"
            " first_clicks) SELECT %s, 'kw ' || g, current_date - d, 20,"
            " '[8, 3, 2, 1, 1]'::jsonb FROM generate_series(1, %s) g,"
            " generate_series(0, %s) d", [source.pk, keyword_count, days - 1])
        cursor.execute("SET session_replication_role = DEFAULT")
    from behaviour.rollup import keyword_days_rebuild

    started = time.perf_counter()
    keyword_days_rebuild(source_id=source.pk)
    print(f"  rollup of {keyword_count} keywords x {days} days (last days included) made in "
          f"{time.perf_counter() - started:.0f} s")
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    return evaluation, source


def timed(calls: dict, requests: int) -> dict[str, tuple[float, float, int]]:
    """Each call `requests` times after one untimed round, the calls alternated request
    by request:
    {name: (median s, p95 s, queries of one call)}."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    seconds: dict[str, list[float]] = {name: [] for name in calls}
    queries: dict[str, int] = {}
    for call in calls.values():
        call()  # not timed: the process's first page loads its templates and code
    for _ in range(requests):
        for name, call in calls.items():
            with CaptureQueriesContext(connection) as captured:
                started = time.perf_counter()
                call()
                seconds[name].append(time.perf_counter() - started)
            queries[name] = len(captured)
    return {name: (statistics.median(found), percentile(found, 0.95), queries[name])
            for name, found in seconds.items()}


def measure(size: int, evaluation, source, client, requests: int) -> None:
    import os
    from datetime import timedelta

    from behaviour.rollup import window_sums
    from behaviour.summary import online_summary, summary_from_sums

    texts = evaluation.keywords.values("normalized_text")
    last = source.window_end_at.date()
    window = {"start_on": last - timedelta(days=2), "end_on": last}
    week = {"start_on": last - timedelta(days=6), "end_on": last}
    url = f"/dashboard/evaluations/{evaluation.pk}/?online_source={source.pk}"
    three = f"{url}&online_window=days&online_from={last - timedelta(days=2)}&online_to={last}"
    calls = {
        "whole, new": lambda: online_summary(source=source, keyword_texts=texts),
        "whole, old": lambda: summary_from_sums(source=source, keyword_texts=texts),
        "7 days, new": lambda: online_summary(source=source, keyword_texts=texts, **week),
        # What the preset read before its rows: the same days' day rows, one statement.
        "7 days, days": lambda: window_sums(source_id=source.pk, keyword_texts=texts, k=10,
                                            **week),
        "3 days, new": lambda: online_summary(source=source, keyword_texts=texts, **window),
        "3 days, old": lambda: summary_from_sums(source=source, keyword_texts=texts,
                                                 **window),
        "dashboard, new": lambda: client.get(url),
        "dashboard 7 days": lambda: client.get(f"{url}&online_window=7"),
        "dashboard 3 days": lambda: client.get(three)}
    assert online_summary(source=source, keyword_texts=texts).impressions == \
        summary_from_sums(source=source, keyword_texts=texts).impressions
    by_days = window_sums(source_id=source.pk, keyword_texts=texts, k=10, **week)
    assert online_summary(source=source, keyword_texts=texts, **week).impressions == sum(
        by_days[f"impressions_{p}"] for p in range(1, 11))
    found = timed(calls, requests)
    rows = source.counts.count()
    load = os.getloadavg()[0]
    for name, (median, p95, queries) in found.items():
        print(f"{size:>9} {rows:>11} {name:<16} {median * 1000:>8.0f} {p95 * 1000:>8.0f} "
              f"{queries:>7} {load:>5.2f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--keywords", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--days", type=int, default=10)
    parser.add_argument("--requests", type=int, default=10)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--reuse", action="store_true")
    args = parser.parse_args()
    if args.reuse:
        migrate_database(ENV)
    else:
        recreate_database(DB_NAME, ENV)
    setup_django(ENV)
    from django.test import Client
    from django.test.utils import setup_test_environment

    from evaluations.models import Evaluation
    from searchtweak.models import Membership, Role, Team, User

    setup_test_environment()
    team, _ = Team.objects.get_or_create(name="Bench online")
    user, _ = User.objects.get_or_create(username="bench-online-lead")
    Membership.objects.get_or_create(team=team, user=user, defaults={"role": Role.LEAD})
    other, _ = Team.objects.get_or_create(name="Bench online other")
    client = Client()
    client.force_login(user)
    print(f"{'keywords':>9} {'count rows':>11} {'read':<16} {'med ms':>8} {'p95 ms':>8} "
          f"{'queries':>7} {'load':>5}")
    for size in args.keywords:
        name = f"Online {size}"
        evaluation = Evaluation.objects.filter(team=team, name=name).first()
        if evaluation is None:
            started = time.perf_counter()
            evaluation, source = seed(size, args.days, team=team, name=name)
            seed(size, args.days, team=other, name=f"{name} other")
            print(f"  seeded {size} keywords in {time.perf_counter() - started:.0f} s")
        source = team.behaviour_sources.get(name=f"{name} log")
        measure(size, evaluation, source, client, args.requests)
    if not args.keep:
        drop_database(DB_NAME)


if __name__ == "__main__":
    main()
