"""An LLM judge grading 10,000 pairs through a local fake provider.

    .venv/bin/python bench/judges.py                   # 10,000 pairs, 200 ms, batch 5, 16
    .venv/bin/python bench/judges.py --pairs 2000 --json

PostgreSQL (database searchtweak_bench_judges), Redis (database 15) and one real Celery
worker (prefork, `--worker-concurrency` processes, default 16) run a judge over one active
evaluation of `--pairs` results (5 a keyword, strategy 1) in the mode "grade what is
ungraded". The provider is a real HTTP server on 127.0.0.1 speaking OpenAI's
chat-completions protocol (tests/judges/fake_providers.py) that answers every request
after `--latency` seconds with a valid grade for each document.

The limit is pairs / batch x latency / concurrency (10,000 / 5 x 0.2 s / 16 = 25 s); it
prints the wall time from the run's start to "done" against it (goal ≤ 1.3 x), and checks:
- 0 lost: every pair is done and its slot holds the judge's grade;
- 0 twice: the provider was asked about each document once, no slot was graded twice;
- once the worker has drained, the stored keyword values and evaluation means equal, bit
  for bit, what `manage.py recompute_metrics` then writes from scratch.
The exit status is 1 when a check fails. Figures, not assertions: the machine is shared.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import uuid
import zlib
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import grading  # noqa: E402  (bench/grading.py: processes, seeding, database helpers)
import load  # noqa: E402  (bench/load.py: settling and the recompute comparison)
from _support import bench_database, bench_redis, report  # noqa: E402


def grade_of(doc_id: str) -> int:
    """A fixed grade per document on the graded scale (0..3), so runs are comparable."""
    return zlib.crc32(doc_id.encode()) % 4


def create_judge(*, team_id: int, base_url: str, batch_size: int, concurrency: int):
    from judges.models import Judge
    from searchtweak.models import Membership, Role, User

    account = User.objects.create(username=f"judge.bench.{uuid.uuid4().hex[:6]}",
                                  is_judge=True, is_active=False)
    account.set_unusable_password()
    account.save(update_fields=["password"])
    Membership.objects.create(team_id=team_id, user=account, role=Role.GRADER)
    return Judge.objects.create(
        team_id=team_id, user=account, name="bench judge", provider=Judge.Provider.OPENAI,
        base_url=base_url, model="fake-model", batch_size=batch_size, counts=True,
        max_concurrent_requests=concurrency, timeout_seconds=10.0, max_retries=2)


def wait_done(run_id: int, timeout: float) -> float | None:
    from judges.models import JudgeRun

    began = time.perf_counter()
    while time.perf_counter() - began < timeout:
        status = JudgeRun.objects.filter(pk=run_id).values_list("status", flat=True).first()
        if status != JudgeRun.Status.RUNNING:
            return time.perf_counter() - began
        time.sleep(0.05)
    return None


def check(*, run_id: int, evaluation_id: int, judge_user_id: int, asked: Counter) -> dict:
    from django.db.models import Count

    from judges.models import JudgeCall, JudgeRun, JudgeRunItem
    from judgments.models import FeedbackSlot

    run = JudgeRun.objects.get(pk=run_id)
    latencies = sorted(JudgeCall.objects.filter(run_id=run_id).values_list("latency_ms", flat=True))
    cycles = sorted((answered - claimed).total_seconds() * 1000 for claimed, answered in
                    JudgeRunItem.objects.filter(run_id=run_id, answered_at__isnull=False)
                    .values_list("claimed_at", "answered_at"))
    statuses = Counter(JudgeRunItem.objects.filter(run_id=run_id)
                       .values_list("status", flat=True))
    graded = {doc_id: grade for doc_id, grade in FeedbackSlot.objects.filter(
        evaluation_id=evaluation_id, user_id=judge_user_id, grade__isnull=False)
        .values_list("snapshot__doc_id", "grade")}
    wrong = sum(1 for doc_id, grade in graded.items() if grade != grade_of(doc_id))
    two_slots = (FeedbackSlot.objects.filter(evaluation_id=evaluation_id, user_id=judge_user_id)
                 .values("snapshot_id").annotate(n=Count("pk")).filter(n__gt=1).count())
    return {
        "status": run.status, "pairs": run.pair_count, "done": run.done_count,
        "failed": run.failed_count, "skipped": run.skipped_count, "calls": run.call_count,
        "items": dict(statuses), "slots_graded": len(graded), "wrong_grades": wrong,
        "lost": run.pair_count - len(graded),
        "asked_twice": sum(1 for n in asked.values() if n > 1),
        "asked": sum(asked.values()), "two_slots_one_result": two_slots,
        "call_ms_p50": percentile(latencies, 50), "call_ms_p95": percentile(latencies, 95),
        "claim_to_stored_ms_p50": percentile(cycles, 50),
        "claim_to_stored_ms_p95": percentile(cycles, 95),
        "call_statuses": dict(Counter(JudgeCall.objects.filter(run_id=run_id)
                                      .values_list("status", flat=True))),
    }


def in_flight(run_id: int, wall: float | None) -> dict:
    """Calls out at once, from the call log (each from its start for its latency): the
    mean over the run's wall time (the calls' summed seconds over it) and the peak."""
    from judges.models import JudgeCall

    edges = []
    total = 0.0
    for started_at, latency_ms in JudgeCall.objects.filter(
            run_id=run_id, latency_ms__isnull=False).values_list("started_at", "latency_ms"):
        start = started_at.timestamp()
        edges += [(start, 1), (start + latency_ms / 1000, -1)]
        total += latency_ms / 1000
    peak = now = 0
    for _, step in sorted(edges):
        now += step
        peak = max(peak, now)
    return {"in_flight_mean": round(total / wall, 2) if wall else None, "in_flight_peak": peak}


def percentile(values: list, q: int):
    return round(values[min(len(values) - 1, len(values) * q // 100)]) if values else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=10_000)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--batch", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--worker-concurrency", type=int, default=16)
    parser.add_argument("--server-url", default="postgres://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--database", default=bench_database("judges"))
    parser.add_argument("--redis", default=bench_redis("redis://127.0.0.1:6379/15"))
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON line")
    args = parser.parse_args()

    queue = f"bench-judges-{os.getpid()}"
    env = grading.fresh_database_env(server_url=args.server_url, database=args.database,
                                     queue=queue, redis=args.redis)
    # DEBUG is off (production settings), so the outbound policy closes loopback, where the
    # fake provider listens: open it for this bench only (as bench/notifications.py does).
    env["OUTBOUND_DENY_NETWORKS"] = "169.254.0.0/16"
    full_env = {**os.environ, **env}
    processes: list[subprocess.Popen] = []
    bin_dir = Path(grading.PYTHON).parent
    sys.path.insert(0, str(grading.ROOT))
    from tests.judges.fake_providers import OPENAI, ModelAnswer, document_ids, fake_provider

    asked: Counter = Counter()

    def answer(prompt: str, request) -> ModelAnswer:
        ids = document_ids(prompt)
        asked.update(ids)
        return ModelAnswer({"grades": [{"id": doc_id, "grade": grade_of(doc_id),
                                        "reason": "bench"} for doc_id in ids]},
                           delay=args.latency)

    try:
        subprocess.run([grading.PYTHON, "manage.py", "migrate", "--noinput", "-v", "0"],
                       cwd=grading.ROOT, env=full_env, check=True)
        grading.setup_django(env)

        from judges import runs
        from searchtweak.models import User

        team_id, _ = grading.seed(1)
        lead = User.objects.get(username="bench0")
        per_keyword = 5
        evaluation_id = grading.seed_evaluation(
            team_id, keywords=-(-args.pairs // per_keyword), positions=per_keyword, strategy=1)
        with fake_provider(OPENAI, api_key=None) as provider:
            provider.default = answer
            judge = create_judge(team_id=team_id, base_url=provider.base_url,
                                 batch_size=args.batch, concurrency=args.concurrency)
            processes.append(subprocess.Popen(
                [str(bin_dir / "celery"), "-A", "searchtweak", "worker", "--queues", queue,
                 "--concurrency", str(args.worker_concurrency), "--loglevel", "WARNING",
                 "--hostname", f"{queue}@%h"],
                cwd=grading.ROOT, env=full_env, start_new_session=True))
            from searchtweak.celery import app

            deadline = time.monotonic() + 60
            while not app.control.inspect(timeout=1.0).ping() and time.monotonic() < deadline:
                time.sleep(0.5)
            from evaluations.models import Evaluation

            evaluation = Evaluation.objects.get(pk=evaluation_id)
            worker = processes[-1]
            meter = grading.CpuMeter({
                "worker": lambda: grading.descendants(worker.pid),
                "provider+bench": lambda: {os.getpid()},
                "postgres": lambda: grading.postgres_backends(args.server_url, args.database),
            })
            before = meter.snapshot()
            began = time.perf_counter()
            run = runs.run_start(judge=judge, evaluation=evaluation, mode="ungraded",
                                 started_by=lead)
            waited = wait_done(run.pk, args.timeout)
            wall = None if waited is None else time.perf_counter() - began
            cpu = {name: round(seconds, 1) for name, seconds in meter.spent(before).items()}
        row = check(run_id=run.pk, evaluation_id=evaluation_id, judge_user_id=judge.user_id,
                    asked=asked)
        limit = args.pairs / args.batch * args.latency / args.concurrency
        row.update(wall_s=None if wall is None else round(wall, 2), limit_s=round(limit, 2),
                   ratio=None if wall is None else round(wall / limit, 3))
        row.update(cpu_s=cpu)
        row.update(in_flight(run.pk, wall))
        row.update(in_flight_ratio=None if row["in_flight_mean"] is None
                   else round(row["in_flight_mean"] / args.concurrency, 3))
        row.update(load.compare_with_recompute(evaluation_id, args.timeout))
        if wall is not None:
            report(f"judges at {args.latency * 1000:.0f} ms, batch {args.batch}, concurrency "
                   f"{args.concurrency}: wall", "s", {f"{args.pairs / 1000:g}k": wall},
                   target=f"<= {1.3 * limit:.1f} s (1.3 x the limit {limit:.1f} s)",
                   note=f"pairs; lost {row['lost']}, asked twice {row['asked_twice']}, "
                        f"stored == recompute {row['equal_to_recompute']}")
        if args.json:
            print(json.dumps(row), flush=True)
        else:
            print(f"# judges: {args.pairs} pairs, {args.latency * 1000:.0f} ms a call, batch "
                  f"{args.batch}, concurrency {args.concurrency}, 1 worker x "
                  f"{args.worker_concurrency}, PostgreSQL + Redis, {os.cpu_count()} CPUs")
            print(f"wall={row['wall_s']} s  limit={row['limit_s']} s  ratio={row['ratio']} "
                  f"(goal <= 1.3)  status={row['status']}  calls={row['calls']}")
            print(f"done={row['done']}/{row['pairs']}  failed={row['failed']}  "
                  f"skipped={row['skipped']}  lost={row['lost']}  asked twice="
                  f"{row['asked_twice']}  asked={row['asked']}  wrong grades="
                  f"{row['wrong_grades']}  two slots one result={row['two_slots_one_result']}")
            print(f"call latency p50/p95 {row['call_ms_p50']}/{row['call_ms_p95']} ms, claim to "
                  f"stored p50/p95 {row['claim_to_stored_ms_p50']}/"
                  f"{row['claim_to_stored_ms_p95']} ms, calls by status {row['call_statuses']}")
            print(f"calls in flight: mean {row['in_flight_mean']} over the run, peak "
                  f"{row['in_flight_peak']}, limit {args.concurrency} (mean / limit "
                  f"{row['in_flight_ratio']})")
            print(f"CPU seconds during the run: {row['cpu_s']} (other: the rest of the "
                  "machine, other people's work included)")
            print(f"settled after {row['settle_s']} s; stored == recompute_metrics: "
                  f"{row['equal_to_recompute']} ({row['values_differing']} keyword values, "
                  f"{row['means_differing']} means differ)")
        failed = (row["lost"] or row["asked_twice"] or row["wrong_grades"] or row["failed"]
                  or row["two_slots_one_result"] or row["status"] != "done"
                  or not row["equal_to_recompute"])
        return 1 if failed else 0
    finally:
        grading.bench_cleanup(processes, server_url=args.server_url, database=args.database,
                              redis_url=args.redis, queue=queue)


if __name__ == "__main__":
    sys.exit(main())
