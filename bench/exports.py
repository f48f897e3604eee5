"""Exports in constant memory: time and peak RSS of downloading an evaluation's
judgments as CSV, per-grader CSV, TREC qrels, TREC run, JSON Lines and JSON (and the metric
table) at 100,000 and 1,000,000 judgments (10,000 and 100,000 keywords x 10 results, one
graded slot each). Memory is flat when the 1M export's peak is about the 100k export's.

    BENCH_DATABASE_PREFIX=st_io .venv/bin/python bench/exports.py
    .venv/bin/python bench/exports.py --small 1000 --large 10000 --runs 1   # a quick look

It makes its own PostgreSQL database (BENCH_DATABASE_PREFIX_exports), seeds it with bulk
inserts (bench/_support.py) and drops it at the end (--keep to keep it). Each download runs
in a fresh process that reads the streamed response the way a WSGI server does, piece by
piece, so `ru_maxrss` is that download's peak; `growth` is the peak less the process's RSS
just before the request. Small and large alternate; figures are medians of --runs runs.
No thresholds are asserted.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _support import (
    bench_database,
    database_url,
    drop_database,
    recreate_database,
    report,
    seed_graded_results,
    setup_django,
)

FORMATS = {
    "csv": "judgments/?format=csv",
    "csv per grader": "judgments/?format=csv&per_grader=true",
    "trec qrels": "judgments/?format=trec",
    "trec run": "judgments/?format=trec_run",
    "jsonl": "judgments/?format=jsonl",
    "json": "judgments/?format=json",
    "metric table": "metric-table/",
}
RESULTS = 10


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def child(evaluation_id: int, user_id: int, path: str) -> None:
    """One download, measured: prints a JSON line."""
    from rest_framework.test import APIClient

    from searchtweak.models import User

    client = APIClient()
    client.force_authenticate(User.objects.get(pk=user_id))
    before = rss_mb()
    started = time.perf_counter()
    response = client.get(f"/api/v1/evaluations/{evaluation_id}/{path}")
    assert response.status_code == 200, response.status_code
    size = lines = 0
    for piece in response.streaming_content:
        size += len(piece)
        lines += piece.count(b"\n")
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": seconds, "peak": peak, "growth": peak - before,
                      "bytes": size, "lines": lines}))


def seed(small: int, large: int) -> dict:
    from _support import active_evaluation

    from evaluations.models import EvaluationMetric
    from searchtweak.models import Membership, Role, Team, User

    team = Team.objects.create(name="Exports bench")
    owner = User.objects.create_user("owner", password="x")
    Membership.objects.create(team=team, user=owner, role=Role.OWNER)
    ids = {"user": owner.pk}
    for label, keyword_count in (("small", small), ("large", large)):
        started = time.perf_counter()
        evaluation = active_evaluation(team=team, name=f"export {label}", strategy=1)
        EvaluationMetric.objects.create(evaluation=evaluation, code="ndcg", k=10, params={},
                                        position=0)
        seed_graded_results(evaluation=evaluation, keyword_count=keyword_count,
                            results=RESULTS, grader=owner)
        ids[label] = evaluation.pk
        print(f"seeded {keyword_count * RESULTS:,} judgments in "
              f"{time.perf_counter() - started:.0f} s", flush=True)
    return ids


def measure(env: dict, evaluation_id: int, user_id: int, path: str) -> dict:
    output = subprocess.run(
        [sys.executable, __file__, "--child", str(evaluation_id), str(user_id), path],
        env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(output.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--small", type=int, default=10_000, help="keywords (x10 judgments)")
    parser.add_argument("--large", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--reuse", action="store_true",
                        help="use the database a --keep run left, seeded as these sizes")
    parser.add_argument("--child", nargs=3)
    args = parser.parse_args()
    name = bench_database("exports")
    env = {"DATABASE_URL": database_url(name)}
    if args.child:
        setup_django(env)
        child(int(args.child[0]), int(args.child[1]), args.child[2])
        return
    import os

    if args.reuse:
        setup_django(env)
        from evaluations.models import Evaluation
        from searchtweak.models import User

        ids = {"user": User.objects.get(username="owner").pk,
               "small": Evaluation.objects.get(name="export small").pk,
               "large": Evaluation.objects.get(name="export large").pk}
    else:
        recreate_database(name, env)
        setup_django(env)
        ids = seed(args.small, args.large)
    from django.db import connections

    connections.close_all()
    child_env = {**os.environ, **env}
    figures: dict[tuple[str, str], list[dict]] = {}
    try:
        for _ in range(args.runs):
            for label, path in FORMATS.items():
                for size in ("small", "large"):
                    figure = measure(child_env, ids[size], ids["user"], path)
                    figures.setdefault((label, size), []).append(figure)
                    print(f"  {label} {size}: {figure}", flush=True)
    finally:
        if not args.keep:
            drop_database(name)
    print(f"\nmedian of {args.runs}; peak = ru_maxrss of the downloading process, growth = "
          "peak - RSS before the request")
    print(f"{'export':<15}{'judgments':>11}{'lines':>10}{'MB out':>8}{'seconds':>9}"
          f"{'peak MB':>9}{'growth MB':>11}")
    for label in FORMATS:
        row = {}
        for size, keyword_count in (("small", args.small), ("large", args.large)):
            runs = figures[(label, size)]
            row[size] = {key: statistics.median(run[key] for run in runs)
                         for key in ("seconds", "peak", "growth", "bytes", "lines")}
            r = row[size]
            print(f"{label:<15}{keyword_count * RESULTS:>11,}{int(r['lines']):>10,}"
                  f"{r['bytes'] / 1e6:>8.1f}{r['seconds']:>9.2f}{r['peak']:>9.1f}"
                  f"{r['growth']:>11.1f}")
        print(f"{'':<15}{'ratio large/small':>21}{'':>8}"
              f"{row['large']['seconds'] / row['small']['seconds']:>9.1f}"
              f"{row['large']['peak'] / row['small']['peak']:>9.2f}"
              f"{row['large']['growth'] / max(row['small']['growth'], 0.1):>11.2f}")
        sizes = {"small": f"{args.small // 1000}k", "large": f"{args.large // 1000}k"}
        report(f"export {label}: peak RSS", "MB",
               {sizes[size]: row[size]["peak"] for size in sizes}, target="flat (ratio ~1)",
               note=f"{RESULTS} judgments a keyword")
        report(f"export {label}: seconds", "s",
               {sizes[size]: row[size]["seconds"] for size in sizes})


if __name__ == "__main__":
    main()
