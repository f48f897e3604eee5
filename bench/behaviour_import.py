"""Time and peak memory of reading a UBI log into behaviour sums (behaviour.importing).

    .venv/bin/python bench/behaviour_import.py [--events 1000000] [--keywords 2000] [--seed 3]

Writes a UBI log to a temporary folder: searches of `--keywords` keywords (10 results
each, hit ids in the query), an `impression` event per result shown and the clicks
behaviour.core.simulate draws (PBM, 1/k bias), until about `--events` event lines. Then, in
a fresh process, reads it as the import does (UbiLog: queries, events, the sums per
keyword, document, position and day, iterated to the end without storing them) and prints
the lines read, seconds and the reading process's peak RSS. Bounded memory shows as a
peak RSS that stays put when --events grows tenfold. No database: the sums are counted,
not written (writing them is one bulk insert per 5,000 rows).
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

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def write_log(folder: Path, *, events: int, keywords: int, seed: int) -> tuple[int, int]:
    from behaviour.core.simulate import simulate_query

    rng = np.random.default_rng(seed)
    relevance = rng.uniform(0.05, 0.95, (keywords, 10))
    written = searches = 0
    block = 200
    with (folder / "queries.ndjson").open("w") as queries, \
            (folder / "events.ndjson").open("w") as out:
        while written < events:
            keyword = int(rng.integers(keywords))
            found = simulate_query(rng, relevance[keyword], sessions=block)
            for row in range(block):
                query_id = f"q{searches}"
                searches += 1
                stamp = f"2026-11-{1 + searches % 28:02d}T10:00:00Z"
                hits = [f"k{keyword}-d{d}" for d in found.rankings[row]]
                queries.write(json.dumps({"query_id": query_id, "user_query": f"kw {keyword}",
                                          "client_id": "c", "timestamp": stamp,
                                          "query_response_hit_ids": hits}) + "\n")
                for position, hit in enumerate(hits, start=1):
                    attributes = {"object": {"object_id": hit}, "position": {"ordinal": position}}
                    out.write(json.dumps({"action_name": "impression", "query_id": query_id,
                                          "timestamp": stamp,
                                          "event_attributes": attributes}) + "\n")
                    written += 1
                    if found.clicks[row, position - 1]:
                        attributes["dwell_time"] = float(found.dwell_seconds[row, position - 1])
                        out.write(json.dumps({"action_name": "click", "query_id": query_id,
                                              "timestamp": stamp,
                                              "event_attributes": attributes}) + "\n")
                        written += 1
    return searches, written


def read_log(folder: Path) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "searchtweak.settings")
    import django

    django.setup()
    from behaviour.importing import UbiLog

    started = time.perf_counter()
    with UbiLog() as log, (folder / "queries.ndjson").open("rb") as queries, \
            (folder / "events.ndjson").open("rb") as events:
        query_errors = log.read_queries(queries)
        event_errors = log.read_events(events)
        read = time.perf_counter() - started
        count_rows = sum(1 for _ in log.count_rows())
        search_rows = sum(1 for _ in log.searches_rows())
    total = time.perf_counter() - started
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"searches {log.summary.search_count:,}, event lines {log.summary.event_count:,}, "
          f"bad lines {query_errors.count + event_errors.count}")
    print(f"sums: {count_rows:,} count rows, {search_rows:,} searches rows")
    print(f"read {read:.1f} s, summed {total - read:.1f} s, total {total:.1f} s; "
          f"peak RSS {peak_mib:.0f} MiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--keywords", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--read", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.read:
        read_log(args.read)
        return
    with tempfile.TemporaryDirectory(prefix="ubi-bench-") as name:
        folder = Path(name)
        started = time.perf_counter()
        searches, written = write_log(folder, events=args.events, keywords=args.keywords,
                                      seed=args.seed)
        size = sum(path.stat().st_size for path in folder.iterdir()) / 2**20
        print(f"wrote {searches:,} searches and {written:,} events ({size:,.0f} MiB) in "
              f"{time.perf_counter() - started:.1f} s")
        subprocess.run([sys.executable, __file__, "--read", str(folder)], check=True,
                       cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})


if __name__ == "__main__":
    main()
