"""Time and peak memory of importing a UBI log: read into behaviour sums
(behaviour.importing), or, with --store, imported whole into PostgreSQL as the app does it.

    .venv/bin/python bench/behaviour_import.py [--events 1000000] [--keywords 2000] [--seed 3]
        [--store] [--log DIR]

Writes a UBI log to a temporary folder: searches of `--keywords` keywords (10 results
each, hit ids in the query), an `impression` event per result shown and the clicks
behaviour.core.simulate draws (PBM, 1/k bias), until about `--events` event lines. Then, in
a fresh process, reads it as the import does (UbiLog: queries, events, the sums per
keyword, document, position and day, iterated to the end without storing them) and prints
the lines read, seconds and the reading process's peak RSS. Bounded memory shows as a
peak RSS that stays put when --events grows tenfold. No database: the sums are counted,
not written. No PostgreSQL needed.

With --store, the fresh process imports the log through the service every import goes
through (behaviour.services.behaviour_source_import_ubi, as `manage.py import_behaviour`
calls it) into a throw-away PostgreSQL database (bench/_support.py; its name from
BENCH_DATABASE_PREFIX, suffix "behaviour_import"), and prints each phase's seconds (read
queries, read events, sum, store the sums, rollup, commit; from the service's log lines),
the importing process's peak RSS and the stored totals (the same log must give the same
totals whatever the code).

--log DIR keeps the generated log in DIR and reuses it when it is there (same --events,
--keywords and --seed), so runs of the import alone compare like with like.
"""

from __future__ import annotations

import argparse
import json
import logging
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


class PhaseTimes(logging.Handler):
    """The moment of each of the import's log lines, from the handler's creation."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.started = time.perf_counter()
        self.marks: list[tuple[str, float]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.marks.append((record.getMessage().split(": ", 1)[-1],
                           time.perf_counter() - self.started))


def store_log(folder: Path) -> None:
    from _support import bench_database, database_url, setup_django

    setup_django({"DATABASE_URL": database_url(bench_database("behaviour_import")),
                  "DEBUG": "false", "SECRET_KEY": "bench-only", "LOG_LEVEL": "WARNING"})
    from django.db import connection

    from behaviour.models import BehaviourKeywordDay
    from behaviour.services import behaviour_source_import_ubi
    from searchtweak.models import Team

    team = Team.objects.create(name="Bench import")
    phases = PhaseTimes()
    logger = logging.getLogger("behaviour.services")
    logger.addHandler(phases)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    with (folder / "queries.ndjson").open("rb") as queries, \
            (folder / "events.ndjson").open("rb") as events:
        source = behaviour_source_import_ubi(team=team, user=None, name="bench",
                                             queries=queries, events=events)
    total = time.perf_counter() - phases.started
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    names = ("read queries", "read events", "sum", "store", "rollup", "commit")
    ends = [moment for _, moment in phases.marks] + [total]
    assert len(ends) == len(names), phases.marks
    spans = ", ".join(f"{name} {end - start:.1f} s" for name, start, end
                      in zip(names, [0.0, *ends], ends, strict=False))
    print(f"imported {source.search_count:,} searches, {source.event_count:,} event lines")
    print(f"{spans}; total {total:.1f} s; peak RSS {peak_mib:.0f} MiB; "
          f"load {os.getloadavg()[0]:.2f}")
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*), sum(impressions), sum(clicks), sum(dwell_count),"
                       " round(sum(dwell_seconds_sum)::numeric, 3)"
                       " FROM behaviour_behaviourcount WHERE source_id = %s", [source.pk])
        rows, impressions, clicks, dwells, dwell_sum = cursor.fetchone()
        cursor.execute("SELECT count(*), sum(search_count) FROM behaviour_behavioursearches"
                       " WHERE source_id = %s", [source.pk])
        search_rows, searches = cursor.fetchone()
    rollup = BehaviourKeywordDay.objects.filter(source=source).count()
    print(f"stored {rows:,} count rows (impressions {impressions:,}, clicks {clicks:,}, "
          f"dwell {dwells:,} clicks / {dwell_sum} s), {search_rows:,} searches rows "
          f"({searches:,} searches), {rollup:,} rollup rows")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--keywords", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--store", action="store_true",
                        help="import into PostgreSQL through the service, phase by phase")
    parser.add_argument("--log", type=Path, help="keep the log here; reuse it if there")
    parser.add_argument("--read", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--store-from", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.read:
        read_log(args.read)
        return
    if args.store_from:
        store_log(args.store_from)
        return
    with tempfile.TemporaryDirectory(prefix="ubi-bench-") as name:
        folder = args.log or Path(name)
        stamp = folder / f"made-{args.events}-{args.keywords}-{args.seed}"
        if not stamp.exists():
            folder.mkdir(parents=True, exist_ok=True)
            for made in folder.glob("made-*"):
                made.unlink()
            started = time.perf_counter()
            searches, written = write_log(folder, events=args.events, keywords=args.keywords,
                                          seed=args.seed)
            stamp.touch()
            print(f"wrote {searches:,} searches and {written:,} events in "
                  f"{time.perf_counter() - started:.1f} s")
        size = sum(path.stat().st_size for path in folder.glob("*.ndjson")) / 2**20
        print(f"log: {size:,.0f} MiB of NDJSON in {folder}")
        if args.store:
            from _support import (
                bench_database,
                database_url,
                drop_database,
                recreate_database,
            )

            database = bench_database("behaviour_import")
            recreate_database(database, {"DATABASE_URL": database_url(database)})
        mode = "--store-from" if args.store else "--read"
        try:
            subprocess.run([sys.executable, __file__, mode, str(folder)], check=True,
                           cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
        finally:
            if args.store:
                drop_database(database)


if __name__ == "__main__":
    main()
