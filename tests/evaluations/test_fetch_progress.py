"""The fetch progress the evaluation page polls every second while fetching
(selectors.fetch_progress): its counts, and a plan that does not depend on statistics
PostgreSQL gathered before the evaluation's keywords existed (autovacuum
refreshes them a minute later at best, the page polls meanwhile)."""

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from evaluations import selectors
from evaluations.models import Evaluation, Keyword
from tests.conftest import skip_or_fail
from tests.evaluations.factories import fetchable_evaluation

pytestmark = pytest.mark.django_db


def test_the_progress_counts_each_state_of_the_evaluations_keywords_alone():
    evaluation = fetchable_evaluation(url="http://127.0.0.1:9",
                                      keywords=["a", "b", "c", "d", "e"])
    other = fetchable_evaluation(url="http://127.0.0.1:9", keywords=["a", "z"])
    Keyword.objects.filter(evaluation=other).update(fetch_status=Keyword.FetchStatus.FETCHED)
    Keyword.objects.filter(evaluation=evaluation, text__in=["a", "c"]).update(
        fetch_status=Keyword.FetchStatus.FETCHED)
    Keyword.objects.filter(evaluation=evaluation, text="e").update(
        fetch_status=Keyword.FetchStatus.FAILED)
    Evaluation.objects.filter(pk=evaluation.pk).update(status=Evaluation.Status.FETCHING)

    progress = selectors.fetch_progress(evaluation=evaluation)

    assert progress.as_dict() == {"status": "fetching", "total": 5, "fetched": 2, "failed": 1,
                                  "pending": 2, "percent": 60}


def test_an_evaluation_without_keywords_counts_zero_of_everything():
    evaluation = fetchable_evaluation(url="http://127.0.0.1:9", keywords=["a"])
    Keyword.objects.filter(evaluation=evaluation).delete()
    progress = selectors.fetch_progress(evaluation=evaluation)
    assert (progress.total, progress.fetched, progress.failed, progress.percent) == (0, 0, 0, 100)


def _plan_nodes(plan: dict):
    yield plan
    for child in plan.get("Plans", []):
        yield from _plan_nodes(child)


def test_the_progress_of_a_large_new_evaluation_sorts_nothing_under_stale_statistics():
    # Statistics from when the table was empty: grouping by fetch_status, PostgreSQL
    # sorted the evaluation's rows (on disk at 100,000 keywords) on every poll.
    if connection.vendor != "postgresql":
        skip_or_fail("a PostgreSQL plan: set DATABASE_URL")
    evaluation = fetchable_evaluation(url="http://127.0.0.1:9", keywords=["seed"])
    table = Keyword._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {table}")
        cursor.execute(
            f"INSERT INTO {table} (position, text, normalized_text, fetch_status, fetch_error,"
            " evaluation_id) SELECT n, 'k' || n, 'k' || n, CASE WHEN n %% 4 = 0 THEN 'pending'"
            " ELSE 'fetched' END, '', %s FROM generate_series(2, 20001) n", [evaluation.pk])
    with CaptureQueriesContext(connection) as captured:
        progress = selectors.fetch_progress(evaluation=evaluation)
    assert (progress.total, progress.fetched, progress.failed) == (20001, 15000, 0)
    counting = [query["sql"] for query in captured.captured_queries if table in query["sql"]]
    assert len(counting) == 1, counting
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (FORMAT JSON) {counting[0]}")
        plan = cursor.fetchone()[0]
    plan = json.loads(plan) if isinstance(plan, str) else plan
    nodes = {node["Node Type"] for node in _plan_nodes(plan[0]["Plan"])}
    assert "Sort" not in nodes, nodes
