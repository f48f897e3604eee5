"""The scale figures in one table: every scale benchmark at 10,000 and 100,000 keywords,
side by side, with the ratio 100k/10k (per-request paths: goal <= 1.5) and the limits.

    .venv/bin/python bench/scale.py                     # everything, about an hour
    .venv/bin/python bench/scale.py --only recompute dashboard
    .venv/bin/python bench/scale.py --quick             # small sizes: a smoke run

Each benchmark runs as its own process, in order, on its own PostgreSQL database and Redis
database (their defaults; BENCH_DATABASE_PREFIX and BENCH_REDIS_URL move them), and appends
its headline figures to a JSON Lines file through bench/_support.report; this script prints
them as one table at the end (and the file's path, to keep). A benchmark that fails is
named with its exit status and the others still run. Nothing is asserted: the targets are printed
beside the figures. The machine is shared: quote medians of alternating runs for a change.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _support import REPORT_ENV

BENCH = Path(__file__).resolve().parent

# name: (full-size arguments, --quick arguments). The sizes are the scale targets'.
BENCHES: dict[str, tuple[list[str], list[str]]] = {
    "recompute": (["recompute.py", "--large", "--grades", "60"],
                  ["recompute.py", "--quick", "--grades", "20"]),
    "dashboard": (["dashboard.py", "--keywords", "10000", "100000"],
                  ["dashboard.py", "--keywords", "1000", "5000", "--requests", "10"]),
    "exports": (["exports.py", "--small", "10000", "--large", "100000"],
                ["exports.py", "--small", "1000", "--large", "10000", "--runs", "1"]),
    "uploads": (["uploads.py", "--pages"], ["uploads.py", "--pages"]),
    "judges": (["judges.py", "--pairs", "10000", "--json"],
               ["judges.py", "--pairs", "1000", "--json"]),
    "judges-100k": (["judges.py", "--pairs", "100000", "--timeout", "1800", "--json"],
                    ["judges.py", "--pairs", "2000", "--json"]),
    "fetch": (["fetch.py", "--keywords", "1000", "--latency-ms", "50"],
              ["fetch.py", "--keywords", "200", "--latency-ms", "50"]),
    # Four worker processes sharing the 16 requests in flight, as docker-compose.yml's
    # worker-fetch pool does: one process is GIL-bound near 500 keywords/s, and for the
    # same 16 in flight four processes of 4 beat two of 8 (bench/fetch.py).
    "fetch-100k": (["fetch.py", "--keywords", "100000", "--latency-ms", "20",
                    "--processes", "4"],
                   ["fetch.py", "--keywords", "1000", "--latency-ms", "20"]),
}


def run(name: str, arguments: list[str], report_path: str) -> tuple[int, float]:
    started = time.perf_counter()
    print(f"\n=== {name}: {' '.join(arguments)}", flush=True)
    completed = subprocess.run([sys.executable, str(BENCH / arguments[0]), *arguments[1:]],
                               env={**os.environ, REPORT_ENV: report_path}, check=False)
    return completed.returncode, time.perf_counter() - started


def table(report_path: str, outcomes: dict[str, tuple[int, float]]) -> str:
    rows = [json.loads(line) for line in Path(report_path).read_text().splitlines() if line]
    sizes: list[str] = []
    for row in rows:
        sizes += [size for size in row["by_size"] if size not in sizes]
    sizes.sort(key=_size_order)
    width = max([len(row["what"]) + len(row["unit"]) + 3 for row in rows] + [20])
    lines = [f"{'figure':<{width}}" + "".join(f"{size:>10}" for size in sizes)
             + f"{'ratio':>8}  target"]
    for row in rows:
        values = row["by_size"]
        cells = "".join(f"{_cell(values.get(size)):>10}" for size in sizes)
        known = [values[size] for size in sizes if size in values]
        ratio = f"{known[-1] / known[0]:.2f}" if len(known) >= 2 and known[0] else ""
        lines.append(f"{row['what'] + ' (' + row['unit'] + ')':<{width}}{cells}{ratio:>8}"
                     f"  {row['target']}{'; ' + row['note'] if row['note'] else ''}")
    lines.append("")
    for name, (status, seconds) in outcomes.items():
        # bench/fetch.py and bench/judges.py exit 1 on a missed target as on an error.
        lines.append(f"{name}: {'done' if status == 0 else f'exit status {status}, see its output'}"
                     f" in {seconds:.0f} s")
    return "\n".join(lines)


def _size_order(size: str) -> float:
    digits = size.rstrip("kKM")
    scale = {"k": 1e3, "K": 1e3, "M": 1e6}.get(size[-1:], 1)
    try:
        return float(digits) * scale
    except ValueError:
        return float("inf")


def _cell(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.0f}" if abs(value) >= 100 else f"{value:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", choices=list(BENCHES), default=list(BENCHES))
    parser.add_argument("--quick", action="store_true", help="small sizes: a smoke run")
    parser.add_argument("--report", default="",
                        help="JSON Lines file for the figures (default: a new temporary file)")
    args = parser.parse_args()
    report_path = args.report or tempfile.mkstemp(prefix="scale-", suffix=".jsonl")[1]
    outcomes = {}
    for name in args.only:
        full, quick = BENCHES[name]
        outcomes[name] = run(name, quick if args.quick else full, report_path)
    print("\n" + table(report_path, outcomes))
    print(f"\nfigures: {report_path}")


if __name__ == "__main__":
    main()
