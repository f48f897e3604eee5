"""What the benchmarks share: a throw-away PostgreSQL database, Django set up on it, and a
graded evaluation seeded with bulk inserts (10 results x 3 slots per keyword)."""

import os
import socket
import subprocess
import sys
from pathlib import Path

import psycopg

REPO = Path(__file__).resolve().parents[1]
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
