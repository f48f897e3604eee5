"""Benchmark of bounds under missing grades inside `recompute_metrics`.

For an evaluation of 10,000 keywords x 10 results x 3 slots with 6 metrics (P, AP, RR,
nDCG, ERR, CG @10), fully graded and with 30 % of its slots ungraded at random, it times
`recompute_metrics` with the bounds and without them (the same command with
metrics_engine.bounds_batch replaced by a stand-in that returns the values as their own
bounds: the reference, in the same process), alternating the two, and prints the medians
and their ratio (target: with / without <= 1.5). It also prints how many stored keyword
bounds are exact.

Then the path of one grade: on an evaluation of --grade-keywords keywords (70 % graded),
a random keyword is marked dirty as a grade marks it and `keyword_metrics_recompute` runs
(its values and bounds, their upsert, the evaluation's means), --grade-rounds times with
the bounds and as many without, in alternating blocks; it prints p50 and p95 of each and
their ratios (target: p95 with / without <= 1.10). What a grade costs beyond this (HTTP,
the broker, the worker) is the same with or without bounds.

    .venv/bin/python bench/bounds.py [--keywords 10000] [--rounds 3]
        [--grade-keywords 500] [--grade-rounds 400]

It creates (and drops) the database `searchtweak_bench_bounds` on the local PostgreSQL.
Figures print as a table; nothing is asserted.
"""

import argparse
import statistics
import time

from _support import (
    bench_database,
    database_url,
    drop_database,
    recreate_database,
    seed_evaluation,
    setup_django,
)

DB_NAME = bench_database("bounds")
ENV = {"DATABASE_URL": database_url(DB_NAME), "DEBUG": "false", "SECRET_KEY": "bench-only"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keywords", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--grade-keywords", type=int, default=500)
    parser.add_argument("--grade-rounds", type=int, default=400)
    args = parser.parse_args()

    recreate_database(DB_NAME, ENV)
    setup_django(ENV)
    import numpy as np
    from django.core.management import call_command
    from django.db import connection

    import metrics_engine as core
    from metrics.models import KeywordMetricValue
    from searchtweak.models import Membership, Role, Team, User

    real_bounds = core.bounds_batch, core.bounds_batch_many

    def values_as_bounds(metric, grades, ungraded, *, values=None, **kwargs):
        if values is None:
            values = core.evaluate_batch(metric, grades, **kwargs)
        return core.BatchBounds(values, values, np.ones(len(values), dtype=bool))

    def many_values_as_bounds(metrics, grades, ungraded, *, values, **kwargs):
        return [core.BatchBounds(v, v, np.ones(len(v), dtype=bool)) for v in values]

    def use_bounds(with_bounds: bool) -> None:
        core.bounds_batch, core.bounds_batch_many = real_bounds if with_bounds else (
            values_as_bounds, many_values_as_bounds)

    team = Team.objects.create(name="Bench")
    graders = [User.objects.create(username=f"bench{i}") for i in range(3)]
    for user in graders:
        Membership.objects.create(team=team, user=user, role=Role.GRADER)
    cases = []
    for label, fraction in (("fully graded", 1.0), ("70 % graded", 0.7)):
        print(f"seeding {args.keywords} keywords x 10 results x 3 slots, {label} ...",
              flush=True)
        cases.append((label, seed_evaluation(args.keywords, team=team, graders=graders,
                                             name=label.replace(" ", "-"),
                                             graded_fraction=fraction)))

    def recompute(evaluation, with_bounds: bool) -> float:
        # Each run rewrites 60,000 value rows: without a vacuum the table's dead rows grow
        # run after run and every later run (whichever kind) is slower than the one before.
        with connection.cursor() as cursor:
            cursor.execute(f"VACUUM ANALYZE {KeywordMetricValue._meta.db_table}")
        use_bounds(with_bounds)
        try:
            started = time.perf_counter()
            call_command("recompute_metrics", "--evaluation", str(evaluation.pk), "--quiet")
            return time.perf_counter() - started
        finally:
            use_bounds(True)

    print(f"seeding {args.grade_keywords} keywords x 10 results x 3 slots, 70 % graded, for "
          "one grade's recompute ...", flush=True)
    one_grade = seed_evaluation(args.grade_keywords, team=team, graders=graders,
                                name="one-grade", graded_fraction=0.7)

    def grade_path(with_bounds: bool, keyword_ids: list[int]) -> list[float]:
        from metrics.recompute.marks import keywords_version_bump
        from metrics.recompute.run import keyword_metrics_recompute
        use_bounds(with_bounds)
        took = []
        try:
            for keyword_id in keyword_ids:
                # The mark a grade's transaction writes, without the recompute it queues
                # (eager here, with no broker): the timed call below is that recompute.
                keywords_version_bump(keyword_ids=[keyword_id])
                started = time.perf_counter()
                outcome = keyword_metrics_recompute(keyword_id=keyword_id).outcome
                took.append(time.perf_counter() - started)
                assert outcome == "ok", outcome
        finally:
            use_bounds(True)
        return took

    rows = []
    grade_rows = []
    try:
        import random
        chooser = random.Random(28)
        keyword_pool = list(one_grade.keywords.values_list("pk", flat=True))
        call_command("recompute_metrics", "--evaluation", str(one_grade.pk), "--quiet")
        grade_path(True, chooser.sample(keyword_pool, 20))  # warm-up
        grade_timings = {True: [], False: []}
        block = 20
        for round_number in range(max(args.grade_rounds // block, 1)):
            for with_bounds in ((True, False) if round_number % 2 else (False, True)):
                grade_timings[with_bounds] += grade_path(
                    with_bounds, chooser.sample(keyword_pool, block))
        for with_bounds in (False, True):
            ordered = sorted(grade_timings[with_bounds])
            grade_rows.append((with_bounds, statistics.median(ordered),
                               ordered[int(0.95 * (len(ordered) - 1))], len(ordered)))
        for label, evaluation in cases:
            recompute(evaluation, True)  # warm-up: first writes, caches
            timings = {True: [], False: []}
            for round_number in range(args.rounds):
                for with_bounds in ((True, False) if round_number % 2 else (False, True)):
                    timings[with_bounds].append(recompute(evaluation, with_bounds))
            recompute(evaluation, True)  # leave the real bounds stored
            stored = KeywordMetricValue.objects.filter(keyword__evaluation=evaluation)
            exact_share = stored.filter(bounds_exact=True).count() / max(stored.count(), 1)
            open_share = (stored.exclude(lower=None).exclude(upper=None)
                          .extra(where=["lower <> upper"]).count() / max(stored.count(), 1))
            rows.append((label, statistics.median(timings[False]),
                         statistics.median(timings[True]), exact_share, open_share))
    finally:
        drop_database(DB_NAME)

    print()
    print(f"one grade's recompute (keyword_metrics_recompute of one dirty keyword), "
          f"{args.grade_keywords} keywords x 10 x 3 slots x 6 metrics, 70 % graded")
    print(f"{'bounds':<8} {'runs':>5} {'p50 ms':>8} {'p95 ms':>8}")
    for with_bounds, p50, p95, count in grade_rows:
        print(f"{'with' if with_bounds else 'without':<8} {count:>5} {p50 * 1000:>8.2f} "
              f"{p95 * 1000:>8.2f}")
    (_, p50_without, p95_without, _), (_, p50_with, p95_with, _) = grade_rows
    print(f"ratio with / without: p50 {p50_with / p50_without:.2f}, "
          f"p95 {p95_with / p95_without:.2f} (target p95 <= 1.10)")
    print()
    print(f"recompute_metrics, {args.keywords} keywords x 10 x 3 slots x 6 metrics "
          f"(medians of {args.rounds}, alternated)")
    print(f"{'evaluation':<14} {'without s':>10} {'with s':>8} {'ratio':>6} "
          f"{'exact %':>8} {'open %':>7}")
    for label, without, with_bounds, exact_share, open_share in rows:
        print(f"{label:<14} {without:>10.2f} {with_bounds:>8.2f} {with_bounds / without:>6.2f} "
              f"{100 * exact_share:>8.1f} {100 * open_share:>7.1f}")


if __name__ == "__main__":
    main()
