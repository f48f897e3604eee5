"""An offline model's run file becoming an evaluation: a TREC run of N keywords x 100
results uploaded through the service, then an evaluation of those keywords created and
started until every snapshot is stored, on PostgreSQL.

    .venv/bin/python bench/offline_runs.py                  # 1,000 and 10,000 keywords
    .venv/bin/python bench/offline_runs.py --keywords 1000 10000 100000 --interleaved

Each size runs in a fresh process (peak RSS is per process), on its own database
(BENCH_DATABASE_PREFIX_offline, dropped at the end); the file is written to disk by this
process first and read from disk by the child, as an upload larger than Django's memory
limit is. Printed per size: the file's lines and MB, the upload's seconds, the
evaluation's seconds (create + start with Celery eager, until it is active with every
keyword fetched) and snapshots stored, and the child's peak RSS after the upload and at the
end, with growth over the RSS before the upload. The reference in the same run is the
whole-file reading (parsing.parse_trec_run, the upload's way before the streamed store),
timed and measured the same way on the same file: its memory grows with the file, the
store's should not. Ratios are printed, nothing is asserted.

--interleaved writes the lines rank by rank across topics (every topic's first result,
then every second one, …) instead of topic by topic: the worst order for anything that
keeps topics open, and the database sorts them back.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

RESULTS = 100
DEPTH = 10  # the evaluation's deepest k: what a fetch stores of each ranking


def write_run(path: Path, keywords: int, *, interleaved: bool) -> tuple[int, int]:
    """A TREC run of `keywords` topics ("query N") x RESULTS; lines and bytes written.
    Topic ids number the keywords (a qid<TAB>keyword mapping beside it)."""
    lines = 0
    with path.open("w") as run, path.with_suffix(".topics").open("w") as topics:
        for topic in range(1, keywords + 1):
            topics.write(f"{topic}\tquery {topic}\n")
        order = ((t, r) for r in range(1, RESULTS + 1) for t in range(1, keywords + 1)) \
            if interleaved else \
            ((t, r) for t in range(1, keywords + 1) for r in range(1, RESULTS + 1))
        for topic, rank in order:
            run.write(f"{topic} Q0 doc-{topic}-{rank * 7919 % 100003} {rank} "
                      f"{1000 - rank}.5 bench\n")
            lines += 1
    return lines, path.stat().st_size


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(path: Path, keywords: int, kind: str) -> None:
    """One measurement in this fresh process: prints a JSON line."""
    from _support import setup_django

    setup_django({})
    import logging

    logging.getLogger("celery").setLevel(logging.WARNING)
    from evaluations.models import Evaluation, Keyword, Snapshot
    from evaluations.offline_runs.parsing import parse_topic_map, parse_trec_run
    from evaluations.offline_runs.services import (
        offline_run_upload,
        search_model_create_offline,
    )
    from evaluations.services.configuration import evaluation_create
    from evaluations.services.lifecycle import evaluation_start
    from searchtweak.models import Membership, Role, Team, User

    topics_path = path.with_suffix(".topics")
    before = _rss_mb()
    if kind == "reference":
        started = time.perf_counter()
        with path.open("rb") as run, topics_path.open("rb") as topics:
            rankings = parse_trec_run(run, topics=parse_topic_map(topics))
        print(json.dumps({"upload": time.perf_counter() - started, "before": before,
                          "peak_upload": _peak_mb(), "keywords": len(rankings)}))
        return
    team = Team.objects.create(name=f"Offline bench {keywords}")
    user = User.objects.create_user(f"lead{keywords}")
    Membership.objects.create(team=team, user=user, role=Role.OWNER)
    model = search_model_create_offline(team=team, created_by=user, name="bench run")
    started = time.perf_counter()
    with path.open("rb") as run, topics_path.open("rb") as topics:
        stored = offline_run_upload(model=model, uploaded_by=user, run_format="trec",
                                    lines=run, filename=path.name, topic_lines=topics)
    upload = time.perf_counter() - started
    peak_upload = _peak_mb()
    started = time.perf_counter()
    evaluation = evaluation_create(
        team=team, created_by=user, model=model, name="bench", scale="graded", strategy=1,
        keywords=[f"query {n}" for n in range(1, keywords + 1)],
        metrics=[{"code": "ndcg", "k": DEPTH}, {"code": "precision", "k": DEPTH}])
    evaluation_start(evaluation=evaluation, user=user)
    evaluation.refresh_from_db()
    seconds = time.perf_counter() - started
    fetched = Keyword.objects.filter(evaluation=evaluation, fetch_status="fetched").count()
    print(json.dumps({
        "upload": upload, "evaluation": seconds, "before": before, "peak_upload": peak_upload,
        "peak_end": _peak_mb(), "keywords": stored.keyword_count,
        "results": stored.result_count, "status": evaluation.status,
        "active": evaluation.status == Evaluation.Status.ACTIVE, "fetched": fetched,
        "snapshots": Snapshot.objects.filter(keyword__evaluation=evaluation).count()}))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--keywords", type=int, nargs="+", default=[1_000, 10_000])
    parser.add_argument("--interleaved", action="store_true")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(Path(args.child[0]), int(args.child[1]), args.child[2])
        return
    from _support import bench_database, database_url, drop_database, recreate_database

    name = bench_database("offline")
    env = {**os.environ, "DATABASE_URL": database_url(name)}
    # Celery eager, in the child: the fetch runs in its process, within the start call
    # (not on the embedded default's background thread), so the start's end is the fetch's.
    env.pop("CELERY_BROKER_URL", None)
    env.pop("CELERY_RESULT_BACKEND", None)
    env["EMBEDDED_TASKS_IN_BACKGROUND"] = "false"
    recreate_database(name, env)
    rows = []
    try:
        with tempfile.TemporaryDirectory() as folder:
            for keywords in args.keywords:
                path = Path(folder) / f"run-{keywords}.trec"
                lines, size = write_run(path, keywords, interleaved=args.interleaved)
                figures = {"keywords": keywords, "lines": lines, "mb": size / 1e6}
                for kind in ("reference", "store"):
                    output = subprocess.run(
                        [sys.executable, __file__, "--child", str(path), str(keywords), kind],
                        env=env, check=True, stdout=subprocess.PIPE, text=True).stdout
                    figures[kind] = json.loads(output.strip().splitlines()[-1])
                rows.append(figures)
                path.unlink()
    finally:
        drop_database(name)
    order = "interleaved (rank by rank across topics)" if args.interleaved else "topic by topic"
    print(f"TREC run, {RESULTS} results a keyword, lines {order}; PostgreSQL, Celery eager, "
          f"snapshots cut at {DEPTH}; each figure from a fresh process")
    print(f"{'keywords':>9} {'lines':>11} {'MB':>6} | {'whole-file read':>15} {'peak':>8} | "
          f"{'upload':>7} {'peak':>8} | {'evaluation':>10} {'snapshots':>10} {'peak':>8} | "
          f"{'total':>7}")
    for row in rows:
        ref, store = row["reference"], row["store"]
        print(f"{row['keywords']:>9,} {row['lines']:>11,} {row['mb']:>6.1f} | "
              f"{ref['upload']:>13.2f} s {ref['peak_upload']:>5.0f} MB | "
              f"{store['upload']:>5.2f} s {store['peak_upload']:>5.0f} MB | "
              f"{store['evaluation']:>8.2f} s {store['snapshots']:>10,} "
              f"{store['peak_end']:>5.0f} MB | {store['upload'] + store['evaluation']:>5.2f} s"
              + ("" if store["active"] and store["fetched"] == row["keywords"]
                 else f"  (status {store['status']}, fetched {store['fetched']})"))
    if len(rows) >= 2:
        small, large = rows[0], rows[-1]

        def growth(row: dict, kind: str) -> float:
            return row[kind]["peak_upload"] - row[kind]["before"]

        print(f"peak RSS growth during the read, {large['keywords']:,} against "
              f"{small['keywords']:,} keywords ({large['lines'] / small['lines']:.0f}x the "
              f"lines): whole-file read {growth(small, 'reference'):.0f} -> "
              f"{growth(large, 'reference'):.0f} MB, streamed upload "
              f"{growth(small, 'store'):.0f} -> {growth(large, 'store'):.0f} MB")


if __name__ == "__main__":
    main()
