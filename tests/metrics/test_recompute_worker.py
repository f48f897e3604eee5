"""The recompute pipeline through a real Celery worker process on Redis."""

import time
from datetime import timedelta

import pytest
import redis
from django.db import connection
from django.test import override_settings
from django.utils import timezone

import metrics_engine as core
from evaluations.models import EvaluationMetric, Keyword
from metrics.models import KeywordMetricValue
from metrics.services import dirty_keywords_due
from tests.conftest import skip_or_fail
from tests.metrics.builders import build_evaluation, set_grades, slot
from tests.metrics.oracles import assert_stored_values_equal_a_full_recompute
from tests.recompute_state import dirty_marks, mean_of
from tests.searchtweak.factories import UserFactory
from tests.workers import (
    REPO,
    celery_worker,
    database_url_for_workers,
    require_redis,
    tasks_sent_to,
)

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

METRICS = [("precision", 3, {}), ("ap", 3, {}), ("ndcg", 3, {}), ("err", 3, {})]


def wait_until_clean(evaluation, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not dirty_marks(evaluation=evaluation).exists():
            return
        time.sleep(0.1)
    raise AssertionError("keywords still dirty after the worker had time to recompute")


def assert_values_match_the_engine(evaluation, grades_by_keyword) -> None:
    for config in EvaluationMetric.objects.filter(evaluation=evaluation):
        expected = {
            text: core.evaluate_keyword(config.code, grades, k=config.k, scale="graded")
            for text, grades in grades_by_keyword.items()
        }
        stored = dict(KeywordMetricValue.objects.filter(metric=config)
                      .values_list("keyword__text", "value"))
        assert stored == pytest.approx(expected, abs=1e-12), config.code
        mean, count = core.mean_over_keywords(expected.values())
        config.refresh_from_db()
        assert mean_of(config).keyword_count == count
        assert mean_of(config).value == pytest.approx(mean, abs=1e-12)


def test_a_real_worker_keeps_values_and_means_exact():
    broker_url = require_redis()
    graders = [UserFactory(username=f"w{i}") for i in range(3)]
    evaluation = build_evaluation(
        strategy=3, keywords={"red shoes": ["a", "b", "c"], "blue hat": ["d", "e", "f"]},
        metrics=METRICS,
    )
    grades_by_keyword = {"red shoes": [[3, 2, None], [0, 0, 1], [None, None, None]],
                         "blue hat": [[1, None, None], [2, 3, 3], [0, 1, 0]]}
    with celery_worker(broker_url=broker_url, database_url=database_url_for_workers()) as queue, \
            tasks_sent_to(broker_url=broker_url, queue=queue):
        for text, positions in grades_by_keyword.items():
            for position, slot_grades in enumerate(positions, start=1):
                set_grades(graders, [
                    (slot(evaluation, text, position, index), value)
                    for index, value in enumerate(slot_grades) if value is not None
                ])
        wait_until_clean(evaluation)
    assert_values_match_the_engine(evaluation, grades_by_keyword)


@override_settings(RECOMPUTE_SWEEP_AFTER_SECONDS=0)
def test_grades_made_while_no_worker_runs_converge_once_one_starts():
    broker_url = require_redis()
    graders = [UserFactory(username=f"s{i}") for i in range(3)]
    evaluation = build_evaluation(keywords={"lamp": ["a", "b"], "desk": ["c"]},
                                  metrics=METRICS)
    grades_by_keyword = {"lamp": [[2], [3]], "desk": [[0]]}
    queue = "test-no-worker-yet"
    with tasks_sent_to(broker_url=broker_url, queue=queue):
        for text, positions in grades_by_keyword.items():
            set_grades(graders, [(slot(evaluation, text, position), grades[0])
                                 for position, grades in enumerate(positions, start=1)])
    # The grades are stored; their values are not, and the messages are lost.
    redis.Redis.from_url(broker_url).delete(queue)
    assert set(dirty_keywords_due()) == set(
        Keyword.objects.filter(evaluation=evaluation).values_list("pk", flat=True))
    assert not KeywordMetricValue.objects.filter(keyword__evaluation=evaluation).exists()
    # The grades were made a while ago, past the worker's sweep threshold (its default).
    dirty_marks(evaluation=evaluation).update(
        dirty_since=timezone.now() - timedelta(minutes=10))
    with celery_worker(broker_url=broker_url,
                       database_url=database_url_for_workers()) as worker_queue, \
            tasks_sent_to(broker_url=broker_url, queue=worker_queue):
        from metrics.tasks import sweep_dirty_keywords

        # What beat does every few seconds, run once here through the worker.
        assert sweep_dirty_keywords.delay().get(timeout=30) == 2
        wait_until_clean(evaluation)
    assert_values_match_the_engine(evaluation, grades_by_keyword)
    assert_stored_values_equal_a_full_recompute(evaluation.pk)


@override_settings(RECOMPUTE_SWEEP_AFTER_SECONDS=0)
def test_a_grade_saves_when_the_broker_is_unreachable_and_the_sweep_repairs_it():
    graders = [UserFactory(username="b0")]
    evaluation = build_evaluation(keywords={"chair": ["a"]}, metrics=[("cg", 1, {})])
    # Port 9 (discard) on loopback: nothing listens, the publish fails for real.
    with tasks_sent_to(broker_url="redis://127.0.0.1:9/0", queue="unreachable"):
        set_grades(graders, [(slot(evaluation, "chair", 1), 2)])
    assert slot(evaluation, "chair", 1).grade == 2
    assert dirty_keywords_due() == [Keyword.objects.get(evaluation=evaluation).pk]
    from metrics.tasks import sweep_dirty_keywords

    assert sweep_dirty_keywords.delay().get() == 1  # eager again, as the embedded default
    assert KeywordMetricValue.objects.get(keyword__evaluation=evaluation).value == 2.0
    assert dirty_keywords_due() == []
    assert_stored_values_equal_a_full_recompute(evaluation.pk)


def test_a_real_worker_follows_a_stream_of_grades_to_exact_values():
    """Grades keep landing while the worker's runs read them (a run takes every dirty
    keyword of the evaluation; a busy evaluation's runs follow each other): once the grades
    stop, every keyword is clean and every value and mean is exact."""
    broker_url = require_redis()
    graders = [UserFactory(username=f"r{i}") for i in range(3)]
    texts = [f"query {n}" for n in range(6)]
    evaluation = build_evaluation(
        strategy=3, keywords={text: [f"{text} doc {p}" for p in range(3)] for text in texts},
        metrics=METRICS,
    )
    grades_by_keyword = {
        text: [[(n + p + i) % 4 if (n + p + i) % 5 else None for i in range(3)]
               for p in range(3)]
        for n, text in enumerate(texts)
    }
    with celery_worker(broker_url=broker_url, database_url=database_url_for_workers()) as queue, \
            tasks_sent_to(broker_url=broker_url, queue=queue):
        for text, positions in grades_by_keyword.items():
            for position, slot_grades in enumerate(positions, start=1):
                for index, value in enumerate(slot_grades):
                    if value is not None:
                        set_grades(graders, [(slot(evaluation, text, position, index), value)])
        wait_until_clean(evaluation)
    assert_values_match_the_engine(evaluation, grades_by_keyword)


def worker_backends() -> list[tuple[int, object]]:
    """(pid, backend_start) of every other session on this database: the worker's."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid, backend_start FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()")
        return sorted(cursor.fetchall())


def test_a_real_worker_keeps_its_database_connection_from_run_to_run():
    """Celery's Django fixup closed it around every task: a new PostgreSQL connection, and
    every statement planned afresh, for each recompute run."""
    if connection.vendor != "postgresql":
        skip_or_fail("counting database sessions needs PostgreSQL: set DATABASE_URL")
    broker_url = require_redis()
    graders = [UserFactory(username="c0")]
    texts = [f"query {n}" for n in range(6)]
    evaluation = build_evaluation(keywords={text: ["a"] for text in texts},
                                  metrics=[("cg", 1, {})])
    seen = []
    # Sessions earlier tests left open (threads, killed workers' backends still closing)
    # are not this worker's: only sessions that appear after it starts count.
    before_worker = {pid for pid, _ in worker_backends()}
    with celery_worker(broker_url=broker_url, database_url=database_url_for_workers()) as queue, \
            tasks_sent_to(broker_url=broker_url, queue=queue):
        for text in texts:  # one run each: the previous one has ended
            set_grades(graders, [(slot(evaluation, text, 1), 2)])
            wait_until_clean(evaluation)
            seen.append([session for session in worker_backends()
                         if session[0] not in before_worker])
    log = (REPO / "tests" / "artifacts" / f"worker-{queue}.log").read_text()
    assert log.count("metrics.recompute_keyword") >= 2 * len(texts)  # received, succeeded
    # Between runs the worker's one connection, opened for its first run, stays open: the
    # same backend each time (closed per task, each check would find none or a new one).
    assert len(seen[0]) == 1 and seen == [seen[0]] * len(texts)
    assert_values_match_the_engine(evaluation, {text: [[2]] for text in texts})
