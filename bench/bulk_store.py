"""Storing fetched results: N keywords x 10 results x 3 slots, as the fetch stores them.

    BENCH_DATABASE_PREFIX=me .venv/bin/python bench/bulk_store.py --keywords 100000

Target: a million snapshots and their slots (100,000 keywords) are
written in bulk (COPY on PostgreSQL), a group of keywords a transaction, never one
transaction for all of them and never a statement a row.

It creates a throw-away PostgreSQL database, an evaluation in `fetching` (strategy 3, no
metric, so the timing is the store's, not the recompute's) and times claiming and storing
the keywords in groups of --group (a fetch task's results that completed together), with
ready-made results: no HTTP. The code's own store is used: `keywords_fetch_store` (one
transaction a group) where it exists, else `keyword_fetch_store` per keyword inside one
transaction a group, as keywords_fetch did before it. BENCH_ROOT runs another checkout's
code, for old-vs-new comparisons:
    cd /work/main && BENCH_ROOT=$PWD .venv/bin/python /path/to/new/bench/bulk_store.py
"""

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(os.environ.get("BENCH_ROOT") or Path(__file__).resolve().parents[1]).resolve()
sys.path.insert(0, str(ROOT))
sys.path.insert(1, str(Path(__file__).resolve().parent))
from _support import bench_database, database_url, drop_database  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keywords", type=int, default=100_000)
    parser.add_argument("--group", type=int, default=100)
    parser.add_argument("--strategy", type=int, default=3,
                        help="slots per result (bench/fetch.py's evaluation has 1)")
    args = parser.parse_args()

    import psycopg

    name = bench_database("bulk_store")
    drop_database(name)
    with psycopg.connect("postgres://postgres@127.0.0.1:5432/postgres", autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    for variable in ("CELERY_BROKER_URL", "CELERY_RESULT_BACKEND"):
        os.environ.pop(variable, None)
    os.environ.update(DATABASE_URL=database_url(name),
                      DJANGO_SETTINGS_MODULE="searchtweak.settings",
                      LOG_LEVEL="WARNING")
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import transaction
    from django.utils import timezone

    from evaluations.endpoints.mapper import Document
    from evaluations.fetching import services as fetch_services
    from evaluations.fetching.search_requests import FetchResult
    from evaluations.models import Endpoint, Evaluation, Keyword, SearchModel, Snapshot
    from judgments.models import FeedbackSlot
    from searchtweak.models import Team

    call_command("migrate", verbosity=0)
    # Without a broker the metrics receiver's task (marking the fetched keywords dirty,
    # which queues their recompute) would run inline after each commit; in production
    # and in bench/fetch.py a worker runs it after the fetch tasks. Timed: the store.
    from evaluations.signals import snapshots_created
    snapshots_created.disconnect(dispatch_uid="metrics.snapshots_created")
    team = Team.objects.create(name="Bench")
    endpoint = Endpoint.objects.create(team=team, name="e", url="http://127.0.0.1:9/",
                                       mapper={})
    model = SearchModel.objects.create(team=team, endpoint=endpoint, name="m")
    evaluation = Evaluation.objects.create(
        team=team, model=model, name="bulk", scale="graded",
        strategy=args.strategy, status=Evaluation.Status.FETCHING,
        started_at=timezone.now(), auto_finish=False)
    Keyword.objects.bulk_create(
        (Keyword(evaluation=evaluation, position=n + 1, text=f"query {n}",
                 normalized_text=f"query {n}") for n in range(args.keywords)), batch_size=5000)
    ids = list(Keyword.objects.filter(evaluation=evaluation).order_by("position")
               .values_list("pk", flat=True))

    def result(keyword_id: int) -> FetchResult:
        return FetchResult(status_code=200, duration_ms=20, documents=[
            Document(doc_id=f"d{keyword_id}-{n}", name=f"Doc {n}", image="",
                     fields={"price": n, "brand": "acme"}) for n in range(1, 11)])

    # As the worker does at start (searchtweak.celery): full collections then skip what
    # set-up made, which is not what a store costs.
    import gc
    gc.freeze()
    group_store = getattr(fetch_services, "keywords_fetch_store", None)
    print(f"storing {args.keywords} keywords x 10 results x {args.strategy} slots "
          f"in groups of {args.group} "
          f"({'keywords_fetch_store' if group_store else 'keyword_fetch_store per keyword'}),"
          f" code of {ROOT}")
    began, began_cpu = time.monotonic(), time.process_time()
    for start in range(0, len(ids), args.group):
        batch = ids[start:start + args.group]
        claimed_at = timezone.now()
        # A fetch claims its batch (old code: one UPDATE a keyword), then stores.
        claim_many = getattr(fetch_services, "keywords_fetch_claim", None)
        if claim_many:
            claim_many(keyword_ids=batch, lease_seconds=600, now=claimed_at)
        else:
            for keyword_id in batch:
                fetch_services.keyword_fetch_claim(keyword_id=keyword_id, lease_seconds=600,
                                                   now=claimed_at)
        results = [(keyword_id, result(keyword_id)) for keyword_id in batch]
        if group_store:
            group_store(claimed_at=claimed_at, results=results)
        else:
            with transaction.atomic():
                for keyword_id, fetched in results:
                    fetch_services.keyword_fetch_store(keyword_id=keyword_id, claimed_at=claimed_at,
                                                       result=fetched)
    total, cpu = time.monotonic() - began, time.process_time() - began_cpu
    snapshots = Snapshot.objects.filter(keyword__evaluation=evaluation).count()
    slots = FeedbackSlot.objects.filter(evaluation=evaluation).count()
    ok = snapshots == args.keywords * 10 and slots == args.keywords * 10 * args.strategy
    print(f"total: {total:.1f} s for {snapshots} snapshots and {slots} slots "
          f"({snapshots / total:.0f} snapshots/s), this process's CPU {cpu:.2f} s "
          f"({cpu / args.keywords * 1000:.3f} ms a keyword: in a fetch worker, time the "
          f"request threads wait for) -> {'OK' if ok else 'WRONG COUNTS'}")
    drop_database(name)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
