"""The recompute pipeline through real processes that fail: a worker killed mid-run, a
database connection dropped under a request. Values always converge to what
`recompute_metrics` writes (fault proofs)."""

import io
import json
import threading
from datetime import timedelta
from wsgiref.util import setup_testing_defaults

import psycopg
import pytest
from django.core.wsgi import get_wsgi_application
from django.db import connection, transaction
from django.utils import timezone

from evaluations.models import Evaluation, EvaluationMetric
from judgments.models import FeedbackSlot
from searchtweak.services import api_token_create
from tests.conftest import skip_or_fail
from tests.judgments.builders import evaluation_with_slots
from tests.metrics.builders import build_evaluation, set_grades, slot
from tests.metrics.oracles import assert_stored_values_equal_a_full_recompute
from tests.metrics.test_recompute_worker import (
    METRICS,
    assert_values_match_the_engine,
    wait_until_clean,
)
from tests.recompute_state import dirty_marks, mean_of
from tests.searchtweak.factories import UserFactory
from tests.workers import (
    celery_worker,
    celery_worker_process,
    database_url_for_workers,
    require_redis,
    tasks_sent_to,
    wait_until,
)

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def require_postgresql() -> None:
    if connection.vendor != "postgresql":
        skip_or_fail("this fault needs PostgreSQL's locks and sessions: set DATABASE_URL")


def backends_waiting_on_a_lock() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                       " AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()")
        return cursor.fetchone()[0]


class EvaluationRowHeld:
    """Holds the evaluation's row (as a long transaction elsewhere would) on a connection of
    its own, so a recompute run stops at its means, after writing its keyword values."""

    def __init__(self, evaluation_id: int) -> None:
        self.locked, self.release = threading.Event(), threading.Event()
        self.thread = threading.Thread(target=self._hold, args=(evaluation_id,))

    def _hold(self, evaluation_id: int) -> None:
        try:
            with transaction.atomic():
                Evaluation.objects.select_for_update(no_key=True).get(pk=evaluation_id)
                self.locked.set()
                self.release.wait(timeout=120)
        finally:
            connection.close()

    def __enter__(self) -> "EvaluationRowHeld":
        self.thread.start()
        assert self.locked.wait(timeout=30)
        return self

    def __exit__(self, *exc) -> None:
        self.release.set()
        self.thread.join(timeout=30)


def test_a_worker_killed_mid_recompute_converges_after_a_restart():
    require_postgresql()
    broker_url = require_redis()
    graders = [UserFactory(username=f"k{i}") for i in range(3)]
    evaluation = build_evaluation(strategy=3, keywords={"lamp": ["a", "b"], "desk": ["c", "d"]},
                                  metrics=METRICS)
    grades_by_keyword = {"lamp": [[3, 2, 2], [0, 1, 0]], "desk": [[1, 1, 1], [2, 3, 3]]}
    database_url = database_url_for_workers()
    with celery_worker_process(broker_url=broker_url, database_url=database_url) as first, \
            tasks_sent_to(broker_url=broker_url, queue=first.queue), \
            EvaluationRowHeld(evaluation.pk):
        set_grades(graders, [
            (slot(evaluation, text, position, index), grade)
            for text, positions in grades_by_keyword.items()
            for position, slot_grades in enumerate(positions, start=1)
            for index, grade in enumerate(slot_grades)
        ])
        wait_until(lambda: backends_waiting_on_a_lock() == 1, "mid-run")
        first.kill()
    # The run died after its keyword values, before its means and its clean marks.
    assert dirty_marks(evaluation=evaluation).count() == 2
    # Long ago, as far as the sweep can tell (instead of waiting out its threshold).
    dirty_marks(evaluation=evaluation).update(
        dirty_since=timezone.now() - timedelta(minutes=10))

    with celery_worker(broker_url=broker_url, database_url=database_url) as queue, \
            tasks_sent_to(broker_url=broker_url, queue=queue):
        from metrics.tasks import sweep_dirty_keywords

        assert sweep_dirty_keywords.delay().get(timeout=60) == 2
        wait_until_clean(evaluation)
    assert_values_match_the_engine(evaluation, grades_by_keyword)
    assert_stored_values_equal_a_full_recompute(evaluation.pk)


def wsgi_post(path: str, payload: dict, *, token: str) -> tuple[int, bytes]:
    """POST through Django's WSGI handler as a server process runs it, with the request
    signals that close a broken connection (the test client turns those off)."""
    body = json.dumps(payload).encode()
    environ = {"REQUEST_METHOD": "POST", "PATH_INFO": path, "CONTENT_TYPE": "application/json",
               "CONTENT_LENGTH": str(len(body)), "wsgi.input": io.BytesIO(body),
               "HTTP_AUTHORIZATION": f"Token {token}"}
    setup_testing_defaults(environ)
    answered: list[str] = []
    chunks = get_wsgi_application()(environ, lambda status, headers: answered.append(status))
    try:
        content = b"".join(chunks)
    finally:
        chunks.close()  # request_finished: what a server does after sending the answer
    return int(answered[0].split()[0]), content


def test_a_dropped_database_connection_fails_one_request_cleanly_and_the_retry_succeeds(
        personas):
    """The server's connection to PostgreSQL is cut between two requests (a database
    restart, a proxy's idle timeout): that request answers 503, to be retried, without
    writing anything, the broken connection is dropped, and the same request sent again is
    stored."""
    require_postgresql()
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=1, scale="binary")
    target = FeedbackSlot.objects.get(evaluation=evaluation)
    _, token = api_token_create(user=personas.grader, name="cut")
    path = f"/api/v1/snapshots/{target.snapshot_id}/grade/"
    # Handled in this thread, the request uses this connection: cut it from another session.
    connection.ensure_connection()
    pid = connection.connection.info.backend_pid
    with psycopg.connect(database_url_for_workers(), autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [pid])

    status, content = wsgi_post(path, {"grade": 1}, token=token)
    assert status == 503
    assert b"psycopg" not in content and b"Traceback" not in content
    status, content = wsgi_post(path, {"grade": 1}, token=token)
    assert status == 200, content
    target.refresh_from_db()
    assert (target.grade, target.user_id) == (1, personas.grader.pk)
    assert FeedbackSlot.objects.filter(evaluation=evaluation, grade__isnull=False).count() == 1


def test_a_worker_killed_mid_recompute_of_a_new_metric_converges_through_the_sweep():
    """A metric is added; the worker running recompute_evaluation dies after writing the
    keyword values, before the means. The keywords the change marked
    stay dirty, so the sweep (not the broker's redelivery, half an hour later) repairs it."""
    require_postgresql()
    broker_url = require_redis()
    graders = [UserFactory(username=f"m{i}") for i in range(3)]
    evaluation = build_evaluation(strategy=3, keywords={"lamp": ["a", "b"], "desk": ["c", "d"]},
                                  metrics=METRICS)
    grades_by_keyword = {"lamp": [[0, 1, 0], [3, 2, 2]], "desk": [[1, 1, 1], [2, 3, 3]]}
    set_grades(graders, [
        (slot(evaluation, text, position, index), grade)
        for text, positions in grades_by_keyword.items()
        for position, slot_grades in enumerate(positions, start=1)
        for index, grade in enumerate(slot_grades)
    ])
    assert not dirty_marks(evaluation=evaluation).exists()
    database_url = database_url_for_workers()
    with celery_worker_process(broker_url=broker_url, database_url=database_url) as first, \
            tasks_sent_to(broker_url=broker_url, queue=first.queue), \
            EvaluationRowHeld(evaluation.pk):
        # Added as the lifecycle service does (post_save); the held row stays readable.
        rr = EvaluationMetric.objects.create(evaluation=evaluation, code="rr", k=2,
                                             position=len(METRICS))
        wait_until(lambda: backends_waiting_on_a_lock() == 1, "mid-run")
        first.kill()
    # The run died after its keyword values, before its means and its clean marks.
    rr.refresh_from_db()
    assert (mean_of(rr).value, mean_of(rr).keyword_count) == (None, 0)
    assert dirty_marks(evaluation=evaluation).count() == 2
    # Long ago, as far as the sweep can tell (instead of waiting out its threshold).
    dirty_marks(evaluation=evaluation).update(
        dirty_since=timezone.now() - timedelta(minutes=10))

    with celery_worker(broker_url=broker_url, database_url=database_url) as queue, \
            tasks_sent_to(broker_url=broker_url, queue=queue):
        from metrics.tasks import sweep_dirty_keywords

        assert sweep_dirty_keywords.delay().get(timeout=60) == 2
        wait_until_clean(evaluation)
    assert_values_match_the_engine(evaluation, grades_by_keyword)  # rr@2 among them
    assert_stored_values_equal_a_full_recompute(evaluation.pk)
