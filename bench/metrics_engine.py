"""Benchmark of metrics_engine against ranx and pytrec_eval (part of `make bench`).

    .venv/bin/python bench/metrics_engine.py            # full run (a few minutes, 2 cores)
    .venv/bin/python bench/metrics_engine.py --quick    # smoke sizes

For each size (keywords x positions x slots) every method runs in its own subprocess on
the same seeded judgments, computes P@10, AP@10, RR@10 and nDCG@10 five times after one
warm-up, and reports the median wall time. Memory per method, from /proc/self/status:
"input" = RSS its inputs add, "work" = peak RSS above that while evaluating (the
peak is reset before timing), "total" = the process's peak RSS.

Methods
- searchtweak x4: evaluate_batch once per metric (stages 0-1 redone per call).
- searchtweak many: evaluate_batch_many, stages 0-1 shared by the four metrics.
  Both evaluate blocks of keywords on os.cpu_count() threads
  (metrics_engine.block_threads.threads).
- searchtweak many 1t: the same on one thread, for a core-for-core comparison.
- ranx kernels: ranx.metrics.* (numba, parallel on every core) on pre-built typed lists.
- ranx evaluate: ranx.evaluate(Qrels, Run, metrics), including its conversion to typed lists.
- pytrec_eval: RelevanceEvaluator.evaluate(run) for P_10, map_cut_10, recip_rank,
  ndcg_cut_10 (the evaluator is built before timing; the run is cut to 10 results so
  recip_rank is RR@10).
The external tools have no slots: they get one integer judgment per document, the rounded
mean of its slots (unjudged documents are left out of the qrels), so their work does not
depend on the slot count. On 1M keywords ranx.evaluate and pytrec_eval run on a subset
(--subset keywords; building their dict inputs for 1M keywords takes minutes and GBs);
their time is scaled to the full size and marked "*" - a per-keyword-normalised estimate.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
os.environ.setdefault("NUMBA_CACHE_DIR", str(REPO / ".cache" / "numba"))
sys.path.insert(0, str(REPO))

METRICS = ("precision", "ap", "rr", "ndcg")
K = 10
REPEATS = 5
UNGRADED_SHARE = 0.15


def make_grades(keywords: int, positions: int, slots: int, seed: int = 42) -> np.ndarray:
    """Graded 0..3 judgments with 15% empty slots: (keywords, positions, slots) float64."""
    rng = np.random.default_rng(seed)
    grades = rng.integers(0, 4, size=(keywords, positions, slots)).astype(np.float64)
    grades[rng.random(grades.shape) < UNGRADED_SHARE] = np.nan
    return grades


def external_judgments(grades: np.ndarray) -> np.ndarray:
    """One integer judgment per document for tools without slots: the rounded slot mean."""
    with np.errstate(invalid="ignore"):
        mean = np.nanmean(grades, axis=2) if grades.shape[2] > 1 else grades[:, :, 0]
    return np.floor(mean + 0.5)


def memory_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def reset_peak() -> None:
    # On kernels without it, the peak then includes building the inputs.
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")


def child(method: str, keywords: int, positions: int, slots: int) -> dict[str, Any]:
    # Libraries load first, so "input" counts the data structures, not numba or numpy.
    if method.startswith("searchtweak"):
        import metrics_engine  # noqa: F401
    elif method.startswith("ranx"):
        import ranx  # noqa: F401
    else:
        import pytrec_eval  # noqa: F401
    start_rss = memory_kb("VmRSS")
    grades = make_grades(keywords, positions, slots)
    run_once = prepare(method, grades)
    del grades
    input_rss = memory_kb("VmRSS")
    run_once()  # warm-up: numba compilation or cache load, page faults
    reset_peak()
    before = memory_kb("VmRSS")
    times = []
    for _ in range(REPEATS):
        started = time.perf_counter()
        run_once()
        times.append(time.perf_counter() - started)
    return {
        "seconds": statistics.median(times),
        "input_mb": (input_rss - start_rss) / 1024,
        "work_mb": max(0, memory_kb("VmHWM") - before) / 1024,
        "total_mb": memory_kb("VmHWM") / 1024,
    }


def prepare(method: str, grades: np.ndarray):
    if method in ("searchtweak x4", "searchtweak many", "searchtweak many 1t"):
        from metrics_engine import block_threads, evaluate_batch, evaluate_batch_many

        kept = grades
        if method == "searchtweak many 1t":
            block_threads.threads = 1
        if method == "searchtweak x4":
            return lambda: [evaluate_batch(m, kept, k=K, scale="graded") for m in METRICS]
        requests = [(m, K) for m in METRICS]
        return lambda: evaluate_batch_many(requests, kept, scale="graded")

    judged = external_judgments(grades)
    keyword_count, position_count = judged.shape
    if method == "ranx kernels":
        from numba.typed import List as TypedList
        from ranx import metrics as ranx_metrics

        doc_ids = np.arange(position_count, dtype=np.float64)
        run_rows = np.column_stack([doc_ids, position_count - doc_ids])
        qrels, run = TypedList(), TypedList()
        for row in judged:
            present = ~np.isnan(row)
            pairs = np.column_stack([doc_ids[present], row[present]])
            qrels.append(np.ascontiguousarray(pairs[np.argsort(-pairs[:, 1], kind="stable")]))
            run.append(run_rows.copy())

        def kernels() -> list[np.ndarray]:
            return [
                ranx_metrics.precision(qrels, run, K),
                ranx_metrics.average_precision(qrels, run, K),
                ranx_metrics.reciprocal_rank(qrels, run, K),
                ranx_metrics.ndcg(qrels, run, K),
            ]

        return kernels
    qrels_dict = {
        f"q{q}": {f"d{i}": int(rel) for i, rel in enumerate(judged[q]) if rel == rel}
        for q in range(keyword_count)
    }
    if method == "ranx evaluate":
        import ranx

        run_dict = {
            f"q{q}": {f"d{i}": float(position_count - i) for i in range(position_count)}
            for q in range(keyword_count)
        }
        qrels_object, run_object = ranx.Qrels.from_dict(qrels_dict), ranx.Run.from_dict(run_dict)
        names = [f"precision@{K}", f"map@{K}", f"mrr@{K}", f"ndcg@{K}"]
        return lambda: ranx.evaluate(qrels_object, run_object, names, return_mean=False)
    if method == "pytrec_eval":
        import pytrec_eval

        run_dict = {
            f"q{q}": {f"d{i}": float(position_count - i) for i in range(min(K, position_count))}
            for q in range(keyword_count)
        }
        evaluator = pytrec_eval.RelevanceEvaluator(
            qrels_dict, {"P_10", "map_cut_10", "recip_rank", "ndcg_cut_10"}
        )
        return lambda: evaluator.evaluate(run_dict)
    raise SystemExit(f"unknown method {method!r}")


def run_child(method: str, keywords: int, positions: int, slots: int) -> dict[str, Any]:
    completed = subprocess.run(
        [sys.executable, __file__, "--child", method, str(keywords), str(positions), str(slots)],
        capture_output=True, text=True, check=False,
    )
    if completed.returncode != 0:
        return {"error": completed.stderr.strip().splitlines()[-1:]}
    return json.loads(completed.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small smoke sizes")
    parser.add_argument("--subset", type=int, default=100_000,
                        help="keywords for ranx.evaluate / pytrec_eval on the 1M size")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        method, *sizes = args.child
        print(json.dumps(child(method, *map(int, sizes))))
        return
    if args.quick:
        sizes = [(2_000, 100), (50_000, 10)]
        subset = 10_000
    else:
        sizes = [(10_000, 100), (1_000_000, 10)]
        subset = args.subset
    methods = ["searchtweak x4", "searchtweak many", "searchtweak many 1t", "ranx kernels",
               "ranx evaluate", "pytrec_eval"]
    print(f"metrics: P@{K} AP@{K} RR@{K} nDCG@{K}; median of {REPEATS}; numpy {np.__version__};"
          f" {os.cpu_count()} cores")
    header = (f"{'keywords x positions x slots':>28}  {'method':<20}{'seconds':>9}"
              f"{'x ours':>8}{'input MB':>10}{'work MB':>9}{'total MB':>10}")
    print(header)
    print("-" * len(header))
    for keywords, positions in sizes:
        for slots in (1, 3):
            label = f"{keywords:,} x {positions} x {slots}"
            ours = None
            for method in methods:
                run_keywords = keywords
                if method in ("ranx evaluate", "pytrec_eval") and keywords > subset:
                    run_keywords = subset
                result = run_child(method, run_keywords, positions, slots)
                if "error" in result:
                    print(f"{label:>28}  {method:<20} failed: {result['error']}")
                    continue
                scale = keywords / run_keywords
                seconds = result["seconds"] * scale
                if method == "searchtweak many":
                    ours = seconds
                ratio = f"{seconds / ours:7.1f}x" if ours and method not in (
                    "searchtweak many",) else "      -"
                star = "*" if scale != 1 else " "
                print(f"{label:>28}  {method:<20}{seconds:8.3f}{star}{ratio:>8}"
                      f"{result['input_mb'] * scale:9.0f}{star}{result['work_mb'] * scale:8.0f}"
                      f"{star}{result['total_mb']:10.0f}")
    print("x ours = method time / searchtweak many time (higher = slower than ours).")
    print(f"* measured on {subset:,} keywords and scaled to the full size "
          "(time and memory per keyword); total MB is the subset process's own peak.")


if __name__ == "__main__":
    main()
