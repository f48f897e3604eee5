"""Many graders on one strategy-3 evaluation in the production shape (a load proof).

    .venv/bin/python bench/load.py                 # 20 graders, 20 s
    .venv/bin/python bench/load.py --graders 20 --seconds 30 --json

gunicorn with gunicorn.conf.py (DEBUG off), PostgreSQL (database searchtweak_bench_load),
Redis (database 13) and one real Celery worker, as bench/grading.py starts them; then
`--graders` simulated graders grade one evaluation whose every result wants three graders
(strategy 3), one request a grade (`next/` carrying the grade), for `--seconds`.

It prints grades/s and the p50/p95 latency of the request carrying a grade, and checks:
- 0 lost: every acknowledged grade is stored under the grader who sent it;
- 0 duplicated: no slot handed to two graders, no stored grade nobody sent, and no grader
  holds two slots of one result;
- once the worker has drained (no keyword left dirty), the stored keyword values and
  evaluation means equal, bit for bit (==, not a tolerance), what
  `manage.py recompute_metrics` then writes from scratch.
The exit status is 1 when a check fails. Figures, not assertions: the machine is shared.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import grading  # noqa: E402  (bench/grading.py: server start, seeding and grader loops)
from _support import bench_database, bench_redis  # noqa: E402


def stored_values(evaluation_id: int) -> tuple[dict, dict]:
    from evaluations.models import EvaluationMetric
    from metrics.models import KeywordMetricValue

    values = {(keyword, metric): value for keyword, metric, value in
              KeywordMetricValue.objects.filter(keyword__evaluation_id=evaluation_id)
              .values_list("keyword_id", "metric_id", "value")}
    means = {pk: (value, count) for pk, value, count in
             EvaluationMetric.objects.filter(evaluation_id=evaluation_id).with_stored_mean()
             .values_list("pk", "value", "keyword_count")}
    return values, means


def settle(evaluation_id: int, timeout: float) -> float | None:
    """Seconds until no keyword of the evaluation is left dirty, or None at the timeout."""
    from metrics.models import KeywordRecomputeMark

    began = time.perf_counter()
    while time.perf_counter() - began < timeout:
        if not KeywordRecomputeMark.objects.filter(evaluation_id=evaluation_id,
                                                   dirty_since__isnull=False).exists():
            return time.perf_counter() - began
        time.sleep(0.05)
    return None


def compare_with_recompute(evaluation_id: int, timeout: float) -> dict:
    """Once the worker has drained: do the stored keyword values and means equal, bit for
    bit, what `recompute_metrics` then writes from scratch?"""
    from django.core.management import call_command

    settled = settle(evaluation_id, timeout)
    before = stored_values(evaluation_id)
    with open(os.devnull, "w") as quiet:
        call_command("recompute_metrics", "--evaluation", str(evaluation_id), "--quiet",
                     stdout=quiet)
    after = stored_values(evaluation_id)
    # A keyword nobody graded may have no stored row yet: that is its null value.
    values = sum(1 for key in before[0].keys() | after[0].keys()
                 if before[0].get(key) != after[0].get(key))
    means = sum(1 for key in before[1].keys() | after[1].keys()
                if before[1].get(key) != after[1].get(key))
    return {"settle_s": None if settled is None else round(settled, 2),
            "values_differing": values, "means_differing": means,
            "equal_to_recompute": settled is not None and not values and not means}


def same_result_twice(evaluation_id: int) -> int:
    """Graders holding two slots of one result: strategy 3 asks for three different people."""
    from django.db.models import Count

    from judgments.models import FeedbackSlot

    return (FeedbackSlot.objects.filter(evaluation_id=evaluation_id, user__isnull=False)
            .values("snapshot_id", "user_id").annotate(n=Count("pk")).filter(n__gt=1).count())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--graders", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--server-url", default="postgres://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--database", default=bench_database("load"))
    parser.add_argument("--redis", default=bench_redis("redis://127.0.0.1:6379/13"))
    parser.add_argument("--settle-timeout", type=float, default=300.0)
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON line")
    args = parser.parse_args()

    queue = f"bench-load-{os.getpid()}"
    env = grading.fresh_database_env(server_url=args.server_url, database=args.database,
                                     queue=queue, redis=args.redis)
    full_env = {**os.environ, **env}
    processes: list[subprocess.Popen] = []
    bin_dir = Path(grading.PYTHON).parent
    try:
        subprocess.run([grading.PYTHON, "manage.py", "migrate", "--noinput", "-v", "0"],
                       cwd=grading.ROOT, env=full_env, check=True)
        grading.setup_django(env)
        team_id, keys = grading.seed(args.graders)
        # Enough results that nobody runs dry: about 10 grades/s per grader at most.
        keyword_count = max(100, int(args.graders * args.seconds * 10 / 30) + 1)
        evaluation_id = grading.seed_evaluation(team_id, keywords=keyword_count, positions=10,
                                                strategy=3)
        port = grading.free_port()
        base = f"http://127.0.0.1:{port}"
        processes.append(subprocess.Popen(
            [str(bin_dir / "gunicorn"), "searchtweak.wsgi:application", "--config",
             "gunicorn.conf.py", "--bind", f"127.0.0.1:{port}", "--log-level", "warning"],
            cwd=grading.ROOT, env=full_env, stdout=subprocess.DEVNULL, start_new_session=True))
        processes.append(subprocess.Popen(
            [str(bin_dir / "celery"), "-A", "searchtweak", "worker", "--queues", queue,
             "--concurrency", "1", "--loglevel", "WARNING", "--hostname", f"{queue}@%h"],
            cwd=grading.ROOT, env=full_env, start_new_session=True))
        grading.wait_for(f"{base}/healthz")
        row = grading.run_round(base, keys, args.graders, evaluation_id, args.seconds,
                                "combined")
        row["same_result_twice"] = same_result_twice(evaluation_id)
        row.update(compare_with_recompute(evaluation_id, args.settle_timeout))
        if args.json:
            print(json.dumps(row), flush=True)
        else:
            print(f"# load: {args.graders} graders, strategy 3, {keyword_count} keywords x 10, "
                  f"gunicorn + PostgreSQL + 1 worker, {os.cpu_count()} CPUs")
            print(f"grades/s={row['grades_per_s']}  grade p50={row['grade_p50_ms']} ms  "
                  f"p95={row['grade_p95_ms']} ms  grades={row['grades']}  "
                  f"lost={row['lost']}  duplicated={row['handed_twice']}"
                  f"+{row['unexplained_grades']}+{row['same_result_twice']}  "
                  f"errors={row['errors']} {row['first_error']}")
            print(f"settled after {row['settle_s']} s; stored == recompute_metrics: "
                  f"{row['equal_to_recompute']} ({row['values_differing']} keyword values, "
                  f"{row['means_differing']} means differ)")
        failed = (row["lost"] or row["handed_twice"] or row["unexplained_grades"]
                  or row["same_result_twice"] or row["errors"] or not row["equal_to_recompute"])
        return 1 if failed else 0
    finally:
        grading.bench_cleanup(processes, server_url=args.server_url, database=args.database,
                              redis_url=args.redis, queue=queue)


if __name__ == "__main__":
    sys.exit(main())
