"""Benchmark of written-out statements against the ORM they replace, on PostgreSQL.

For an evaluation of 5,000 keywords x 10 results x 3 slots (90 % graded) with 6 metrics and
its stored values: the agreement's grouped count of slot patterns (metrics.queries,
written out) against the same count through the ORM and Python; and the means refresh's
read of keyword values for core.mean_over_keywords against the SQL AVG it replaced (which
is not exact: it sums in row order).

    .venv/bin/python bench/queries.py [--keywords 5000] [--repeat 15]

It creates (and drops) the database `searchtweak_bench_queries` on the local PostgreSQL.
Medians print in milliseconds; nothing is asserted.
"""

import argparse
import statistics
import time
from collections import Counter

from _support import (
    bench_database,
    database_url,
    drop_database,
    recreate_database,
    seed_evaluation,
    setup_django,
)

DB_NAME = bench_database("queries")
ENV = {"DATABASE_URL": database_url(DB_NAME), "DEBUG": "false", "SECRET_KEY": "bench-only",
       "ALLOWED_HOSTS": "127.0.0.1"}


def median_ms(function, repeat: int) -> float:
    function()
    timings = []
    for _ in range(repeat):
        started = time.perf_counter()
        function()
        timings.append(time.perf_counter() - started)
    return statistics.median(timings) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keywords", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    recreate_database(DB_NAME, ENV)
    setup_django(ENV)
    from django.db import connection
    from django.db.models import Count, Max, Min, Sum

    import metrics_engine as core
    from evaluations.models import EvaluationMetric
    from judgments.models import FeedbackSlot
    from metrics import queries
    from metrics.models import KeywordMetricValue
    from metrics.recompute.run import evaluation_metrics_recompute
    from searchtweak.models import Membership, Role, Team, User

    team = Team.objects.create(name="Bench")
    graders = []
    for i in range(3):
        grader = User.objects.create_user(f"bench-grader{i}", password="x", current_team=team)
        Membership.objects.create(team=team, user=grader, role=Role.GRADER)
        graders.append(grader)
    print(f"seeding {args.keywords:,} keywords x 10 results x 3 slots ...", flush=True)
    evaluation = seed_evaluation(args.keywords, team=team, graders=graders, name="bench",
                                 graded_fraction=0.9)
    evaluation_metrics_recompute(evaluation_id=evaluation.pk)

    def patterns_orm() -> Counter:
        return Counter(FeedbackSlot.objects.filter(evaluation_id=evaluation.pk)
                       .values("snapshot_id").annotate(
                           total=Count("pk"), graded=Count("grade"), lo=Min("grade"),
                           hi=Max("grade"), grade_sum=Sum("grade"))
                       .values_list("total", "graded", "lo", "hi", "grade_sum"))

    def patterns_raw() -> dict:
        return {row[:5]: row[5]
                for row in queries.snapshot_grade_patterns(evaluation_id=evaluation.pk)}

    assert patterns_orm() == patterns_raw()
    configs = connection.ops.quote_name(EvaluationMetric._meta.db_table)
    values = connection.ops.quote_name(KeywordMetricValue._meta.db_table)

    def means_sql_avg() -> None:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT m.id, AVG(v.value), COUNT(v.value) FROM"
                f" {configs} m LEFT JOIN {values} v ON v.metric_id = m.id"
                " WHERE m.evaluation_id = %s GROUP BY m.id", [evaluation.pk])
            cursor.fetchall()

    def means_exact() -> None:
        for config in queries.metric_config_values(evaluation_id=evaluation.pk):
            core.mean_over_keywords(config.present)

    print()
    for label, function in [
        ("agreement patterns, written out", patterns_raw),
        ("agreement patterns, ORM + Python", patterns_orm),
        ("means, SQL AVG (old, order-dependent)", means_sql_avg),
        ("means, values + fsum (exact)", means_exact),
    ]:
        print(f"{label:<40} {median_ms(function, args.repeat):>8.1f} ms", flush=True)
    drop_database(DB_NAME)


if __name__ == "__main__":
    main()
