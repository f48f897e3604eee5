"""Benchmark of the evaluation dashboard's segments on PostgreSQL.

One evaluation of 100,000 keywords (by default; 10 results, 3 slots, 6 metrics, 90 % of the
slots graded, stored values and segment sums from the real recompute), each keyword with a
weight (a long-tailed traffic) and 5 tags: its traffic segment (head / torso / tail by
metrics_engine.weighted.traffic_segments), a language (3), an intent (3), a device (2) and
a category (10): 21 tags, 22 segments with every keyword. Measures, with the cache emptied
before every request, the server time of the plain dashboard page (the reference, in the
same run) and of the page switched to a segment: plain, weighted, with the table sorted by
nDCG, a rare tag, and the polled partials. Target: p95 <= 300 ms for every page at 100,000
keywords.

    .venv/bin/python bench/segments.py [--requests 30] [--keywords 100000] [--keep] [--reuse]

It creates (and drops) the database `searchtweak_bench_segments` on the local PostgreSQL;
`--keep` leaves it, `--reuse` then measures the kept one again (migrated, not reseeded).
Requests go through Django's test client in-process: the time is the server's (middleware,
view, queries, template), without a network hop.
"""

import argparse
import json
import statistics

import numpy as np
from _support import (
    bench_database,
    database_url,
    drop_database,
    migrate_database,
    percentile,
    recreate_database,
    report,
    setup_django,
    sql_seed_evaluation,
)
from dashboard import measure

DB_NAME = bench_database("segments")
ENV = {"DATABASE_URL": database_url(DB_NAME), "DEBUG": "false", "SECRET_KEY": "bench-only",
       "ALLOWED_HOSTS": "testserver,127.0.0.1",
       "SECURE_SSL_REDIRECT": "false", "SECURE_HSTS_SECONDS": "0"}
LANGUAGES, INTENTS, DEVICES = ("de", "en", "fr"), ("informational", "navigational",
                                                   "transactional"), ("desktop", "mobile")
TARGET_MS = 300


def tag_keywords(evaluation_id: int, seed: int = 7) -> None:
    """Give every keyword of the evaluation a weight and its 5 tags in one UPDATE (the
    service's bulk path writes them as these columns; its checks are not what is measured)."""
    from django.db import connection

    from evaluations.models import Keyword
    from metrics_engine.weighted import traffic_segments

    ids = list(Keyword.objects.filter(evaluation_id=evaluation_id).order_by("position")
               .values_list("pk", flat=True))
    rng = np.random.default_rng(seed)
    # A long tail: the k-th most asked keyword asked about 1/k as often; one in 50 never.
    ranks = rng.permutation(len(ids)) + 1
    weights = [0 if rng.random() < 0.02 else max(1, int(200_000 / rank)) for rank in ranks]
    segments = traffic_segments(weights)
    tags = [json.dumps(sorted([
        segment, f"lang:{LANGUAGES[i % 3]}", f"intent:{INTENTS[(i // 3) % 3]}",
        f"device:{DEVICES[(i // 9) % 2]}", f"cat:{(i * 7) % 10}"]))
        for i, segment in enumerate(segments)]
    table = connection.ops.quote_name(Keyword._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {table} k SET weight = u.w, tags = u.t::jsonb"
            " FROM unnest(%s::bigint[], %s::int[], %s::text[]) AS u(id, w, t)"
            " WHERE k.id = u.id", [ids, weights, tags])


def seed(keyword_count: int, *, team, graders, name: str):
    from django.db import connection

    from metrics.services import evaluation_metrics_recompute

    with connection.cursor() as cursor:
        cursor.execute("SELECT setseed(0.7)")
    evaluation = sql_seed_evaluation(keyword_count, team=team, graders=graders, name=name,
                                     graded_share=0.9)
    tag_keywords(evaluation.pk)
    evaluation_metrics_recompute(evaluation_id=evaluation.pk)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    return evaluation


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=30)
    parser.add_argument("--keywords", type=int, default=100_000)
    parser.add_argument("--keep", action="store_true", help="keep the database afterwards")
    parser.add_argument("--reuse", action="store_true",
                        help="use the database a --keep run left (migrated, not reseeded)")
    args = parser.parse_args()
    if args.reuse:
        migrate_database(ENV)
    else:
        recreate_database(DB_NAME, ENV)
    setup_django(ENV)
    import gc

    from django.test import Client
    from django.urls import reverse

    from evaluations.models import Evaluation
    from searchtweak.models import Membership, Role, Team, User

    name = f"segments{args.keywords}"
    if args.reuse:
        lead = User.objects.get(username="bench-lead")
        evaluation = Evaluation.objects.get(name=name)
    else:
        team = Team.objects.create(name="Bench")
        lead = User.objects.create_user("bench-lead", password="x", current_team=team)
        Membership.objects.create(team=team, user=lead, role=Role.LEAD)
        graders = []
        for i in range(3):
            grader = User.objects.create_user(f"bench-grader{i}", password="x",
                                              current_team=team)
            Membership.objects.create(team=team, user=grader, role=Role.GRADER)
            graders.append(grader)
        print(f"seeding {args.keywords:,} keywords x 10 results x 3 slots, 5 tags each ...",
              flush=True)
        evaluation = seed(args.keywords, team=team, graders=graders, name=name)
    page = reverse("metrics:evaluation_dashboard", args=[evaluation.pk])
    gc.freeze()  # as gunicorn.conf.py's post_worker_init does
    client = Client()
    client.force_login(lead)
    ndcg = f"m{evaluation.metric_configs.get(code='ndcg').pk}"
    live = reverse("metrics:evaluation_dashboard_live", args=[evaluation.pk])
    table = reverse("metrics:evaluation_dashboard_table", args=[evaluation.pk])
    print(f"\n{'request':<44} {'queries':>8} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8}")
    results = {}
    for label, url, params in [
        ("dashboard, every keyword (reference)", page, {}),
        ("dashboard, segment tail", page, {"segment": "tail"}),
        ("dashboard, tail weighted", page, {"segment": "tail", "weighted": "1"}),
        ("dashboard, every keyword weighted", page, {"weighted": "1"}),
        ("dashboard, lang:de weighted, nDCG desc", page,
         {"segment": "lang:de", "weighted": "1", "sort": ndcg, "dir": "desc"}),
        ("dashboard, head (few keywords), nDCG asc", page, {"segment": "head", "sort": ndcg}),
        ("live partial, cat:3 weighted", live, {"segment": "cat:3", "weighted": "1"}),
        ("table partial, tail, nDCG desc", table,
         {"segment": "tail", "sort": ndcg, "dir": "desc"}),
        ("table partial, tail, by text", table, {"segment": "tail", "sort": "text"}),
    ]:
        timings, query_count = measure(client, url, params, args.requests, cold=True)
        results[label] = (query_count, timings)
        print(f"{label:<44} {query_count:>8} {statistics.median(timings) * 1000:>8.1f} "
              f"{percentile(timings, 0.95) * 1000:>8.1f} {max(timings) * 1000:>8.1f}",
              flush=True)
    print()
    reference = percentile(results["dashboard, every keyword (reference)"][1], 0.95)
    for label, (query_count, timings) in results.items():
        p95 = percentile(timings, 0.95)
        verdict = "ok" if p95 * 1000 <= TARGET_MS else "MISSED"
        print(f"{label}: p95 {p95 * 1000:.0f} ms ({p95 / reference:.2f} x the plain page) "
              f"at {args.keywords:,} keywords, {query_count} queries -> {verdict}")
        report(f"segments: {label}, p95", "ms", {f"{args.keywords // 1000}k": p95 * 1000},
               target=f"<= {TARGET_MS} ms", note=f"{query_count} queries")
    if not args.keep:
        from django.db import connections

        connections.close_all()
        drop_database(DB_NAME)


if __name__ == "__main__":
    main()
