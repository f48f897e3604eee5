"""What the benchmarks share: a throw-away PostgreSQL database, Django set up on it, and a
graded evaluation seeded with bulk inserts (10 results x 3 slots per keyword)."""

import os
import socket
import subprocess
import sys
from pathlib import Path

import psycopg

# The checkout whose code runs: this one, or BENCH_ROOT's (its server and worker too), so
# one bench script measures an old and a new tree alike.
REPO = Path(os.environ.get("BENCH_ROOT") or Path(__file__).resolve().parents[1]).resolve()
PG_ADMIN = "postgres://postgres@127.0.0.1:5432/postgres"
SIX_METRICS = [("precision", 10, {}), ("ap", 10, {}), ("rr", 10, {}), ("ndcg", 10, {}),
               ("err", 10, {}), ("cg", 10, {})]


def bench_database(suffix: str) -> str:
    """A benchmark's database name: BENCH_DATABASE_PREFIX (default searchtweak_bench) and
    the bench's suffix, so two people benchmarking on one PostgreSQL do not drop each
    other's database."""
    return f"{os.environ.get('BENCH_DATABASE_PREFIX', 'searchtweak_bench')}_{suffix}"


def bench_redis(default: str) -> str:
    """A benchmark's Redis database: BENCH_REDIS_URL when set (for the same reason)."""
    return os.environ.get("BENCH_REDIS_URL") or default


def database_url(name: str) -> str:
    return f"postgres://postgres@127.0.0.1:5432/{name}"


def recreate_database(name: str, env: dict[str, str]) -> None:
    drop_database(name)
    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    migrate_database(env)


def migrate_database(env: dict[str, str]) -> None:
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=REPO,
                   env={**os.environ, **env}, check=True)


def drop_database(name: str) -> None:
    from django.apps import apps

    if apps.ready:  # this process's own connections would block the drop
        from django.db import connections

        connections.close_all()
    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def setup_django(env: dict[str, str]) -> None:
    os.environ.update(env)
    os.environ["DJANGO_SETTINGS_MODULE"] = "searchtweak.settings"
    sys.path.insert(0, str(REPO))
    import logging

    import django

    django.setup()
    logging.getLogger("httpx").setLevel(logging.WARNING)


def active_evaluation(*, team, name: str, strategy: int, **fields):
    """An active graded-scale evaluation on its own model of an endpoint nothing fetches
    from (port 9); its metrics, keywords and slots are the caller's."""
    from django.utils import timezone

    from evaluations.models import Endpoint, Evaluation, SearchModel

    endpoint = Endpoint.objects.create(team=team, name=f"{name} endpoint",
                                       url="http://127.0.0.1:9/", mapper={})
    model = SearchModel.objects.create(team=team, endpoint=endpoint, name=f"{name} model")
    return Evaluation.objects.create(
        team=team, model=model, name=name, scale="graded", strategy=strategy,
        status=Evaluation.Status.ACTIVE, started_at=timezone.now(), auto_finish=False,
        **fields)


def seed_evaluation(keyword_count: int, *, team, graders, name: str, graded_fraction: float,
                    metrics=SIX_METRICS, seed: int = 7):
    """An active graded-scale evaluation, strategy 3, with `graded_fraction` of its slots
    graded at random (seeded). Stored values are not computed here."""
    import numpy as np
    from django.utils import timezone

    from evaluations.models import (
        EvaluationMetric,
        Keyword,
        Snapshot,
    )
    from judgments.models import FeedbackSlot

    evaluation = active_evaluation(team=team, name=name, strategy=3)
    EvaluationMetric.objects.bulk_create(
        EvaluationMetric(evaluation=evaluation, code=code, k=k, params=params, position=i)
        for i, (code, k, params) in enumerate(metrics)
    )
    keywords = Keyword.objects.bulk_create(
        Keyword(evaluation=evaluation, position=i + 1, text=f"{name} query {i}",
                normalized_text=f"{name} query {i}", fetch_status="fetched")
        for i in range(keyword_count)
    )
    snapshots = Snapshot.objects.bulk_create(
        (Snapshot(keyword=keyword, position=p, doc_id=f"d{keyword.pk}-{p}", name=f"Doc {p}")
         for keyword in keywords for p in range(1, 11)), batch_size=5000,
    )
    rng = np.random.default_rng(seed)
    now = timezone.now()
    slots = []
    for snapshot in snapshots:
        for index in range(3):
            graded = rng.random() < graded_fraction
            slots.append(FeedbackSlot(
                snapshot=snapshot, keyword_id=snapshot.keyword_id, evaluation=evaluation,
                index=index, keyword_position=snapshot.keyword.position,
                position=snapshot.position,
                grade=int(rng.integers(0, 4)) if graded else None,
                user=graders[index] if graded else None, graded_at=now if graded else None,
            ))
    FeedbackSlot.objects.bulk_create(slots, batch_size=5000)
    return evaluation


def sql_seed_evaluation(keyword_count: int, *, team, graders, name: str,
                        graded_share: float | None = None):
    """seed_evaluation's shape written by three INSERT ... SELECT statements (millions of
    rows in a minute): an active graded evaluation, strategy 3, six metrics, 10 results per
    keyword, grades at random (PostgreSQL's, setseed for repeatable ones). Graded: every
    slot but slot 0 of the first 100 keywords (where bench/recompute.py's grades land), or
    with `graded_share` that share of the slots at random. Columns the statements do not
    name get their field's default, so new fields need nothing here."""
    from django.db import connection

    from evaluations.models import EvaluationMetric, Keyword, Snapshot
    from judgments.models import FeedbackSlot

    evaluation = active_evaluation(team=team, name=name, strategy=3)
    EvaluationMetric.objects.bulk_create(
        EvaluationMetric(evaluation=evaluation, code=code, k=k, params=params, position=i)
        for i, (code, k, params) in enumerate(SIX_METRICS))
    grader_ids = ", ".join(str(user.pk) for user in graders)

    def insert(model, given: dict[str, str], source: str, params: list) -> None:
        columns, values, defaults = [], [], []
        for field in model._meta.concrete_fields:
            if field.primary_key:
                continue
            columns.append(connection.ops.quote_name(field.column))
            if field.column in given:
                values.append(given[field.column])
            elif field.null and not field.has_default():
                values.append("NULL")
            else:
                values.append("%s")
                defaults.append(field.get_db_prep_save(field.get_default(), connection))
        with connection.cursor() as cursor:
            cursor.execute(f"INSERT INTO {model._meta.db_table} ({', '.join(columns)})"
                           f" SELECT {', '.join(values)} {source}", [*defaults, *params])

    with connection.cursor() as cursor:
        # The rows are consistent by construction: no per-row foreign key triggers (the
        # bench's database user is PostgreSQL's superuser).
        cursor.execute("SET session_replication_role = replica")
    text = f"'{name} query ' || g"
    # Ids are ints, written in: the defaults' parameters come first.
    insert(Keyword, {"evaluation_id": str(evaluation.pk), "position": "g", "text": text,
                     "normalized_text": text, "fetch_status": "'fetched'"},
           "FROM generate_series(1, %s) g", [keyword_count])
    insert(Snapshot, {"keyword_id": "k.id", "position": "p",
                      "doc_id": "'d' || k.id || '-' || p", "name": "'Doc ' || p"},
           f"FROM {Keyword._meta.db_table} k CROSS JOIN generate_series(1, 10) p"
           " WHERE k.evaluation_id = %s", [evaluation.pk])
    # Graded but for slot 0 of the first keywords (where the grades land): the
    # recompute_metrics figure is of a graded evaluation, as the plain run's.
    graded = ("(x.i > 0 OR x.kpos > 100)" if graded_share is None
              else f"(x.g < {float(graded_share)!r})")
    insert(FeedbackSlot, {
        "snapshot_id": "x.sid", "keyword_id": "x.kid", "evaluation_id": str(evaluation.pk),
        "index": "x.i", "keyword_position": "x.kpos", "position": "x.spos",
        "grade": f"CASE WHEN {graded} THEN floor(x.r * 4)::int END",
        "user_id": f"CASE WHEN {graded} THEN (ARRAY[{grader_ids}])[x.i + 1] END",
        "graded_at": f"CASE WHEN {graded} THEN now() END"},
        f"FROM (SELECT s.id AS sid, k.id AS kid, k.position AS kpos, s.position AS spos,"
        f" i, random() AS r, random() AS g FROM {Snapshot._meta.db_table} s"
        f" JOIN {Keyword._meta.db_table} k ON k.id = s.keyword_id"
        " CROSS JOIN generate_series(0, 2) i WHERE k.evaluation_id = %s) x",
        [evaluation.pk])
    with connection.cursor() as cursor:
        cursor.execute("SET session_replication_role = DEFAULT")
        cursor.execute("ANALYZE")
    return evaluation


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def seed_graded_results(*, evaluation, keyword_count: int, results: int, grader,
                        batch: int = 2000) -> None:
    """`keyword_count` fetched keywords of `results` results each, every result with one
    slot graded by `grader` (grade = position % 4), written `batch` keywords at a time so a
    million slots never sit in memory at once. For strategy-1 evaluations."""
    from django.utils import timezone

    from evaluations.models import Keyword, Snapshot
    from judgments.models import FeedbackSlot

    now = timezone.now()
    for start in range(0, keyword_count, batch):
        keywords = Keyword.objects.bulk_create(
            Keyword(evaluation=evaluation, position=i + 1, text=f"query {i}",
                    normalized_text=f"query {i}", fetch_status="fetched")
            for i in range(start, min(start + batch, keyword_count)))
        snapshots = Snapshot.objects.bulk_create(
            (Snapshot(keyword=keyword, position=p, doc_id=f"d{keyword.position}-{p}",
                      name=f"Doc {p}")
             for keyword in keywords for p in range(1, results + 1)), batch_size=5000)
        positions = {keyword.pk: keyword.position for keyword in keywords}
        FeedbackSlot.objects.bulk_create(
            (FeedbackSlot(snapshot=snapshot, keyword_id=snapshot.keyword_id,
                          evaluation=evaluation, index=0,
                          keyword_position=positions[snapshot.keyword_id],
                          position=snapshot.position, grade=snapshot.position % 4,
                          user=grader, graded_at=now)
             for snapshot in snapshots), batch_size=5000)


REPORT_ENV = "BENCH_REPORT"
"""When set, the path of a JSON Lines file each bench appends its headline figures to
(report); bench/scale.py sets it and prints them as one table."""


def report(what: str, unit: str, by_size: dict[str, float], *, target: str = "",
           note: str = "") -> None:
    """One headline figure at one or more sizes ("10k", "100k" keywords ...), appended to
    $BENCH_REPORT when it is set; nothing otherwise (the bench prints its own table)."""
    path = os.environ.get(REPORT_ENV)
    if not path:
        return
    import json

    with open(path, "a", encoding="utf-8") as file:
        file.write(json.dumps({"what": what, "unit": unit, "by_size": by_size,
                               "target": target, "note": note}) + "\n")
