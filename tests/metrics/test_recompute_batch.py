"""One recompute run takes every dirty keyword of its evaluation; a worker's runs of a busy
evaluation follow each other instead of one per grade (metrics.services, metrics.tasks)."""

import sqlite3
from datetime import timedelta

import pytest
from django.db import DatabaseError, OperationalError
from django.test import override_settings
from django.utils import timezone

from evaluations.models import EvaluationMetric, Keyword
from judgments.models import FeedbackSlot
from metrics import receivers, services, tasks
from metrics.models import KeywordMetricValue, MetricHistoryPoint, RecomputeDue
from metrics.recompute import run as recompute_run
from metrics.recompute import scheduling
from metrics.recompute.marks import keywords_version_bump
from tests.metrics.builders import build_evaluation, slot
from tests.recompute_state import dirty_marks, mark_of, mean_of
from tests.searchtweak.factories import UserFactory

pytestmark = pytest.mark.django_db

METRICS = [("cg", 2, {}), ("precision", 2, {})]


@pytest.fixture
def grader(db):
    return UserFactory(username="batch-grader")


@pytest.fixture
def evaluation():
    return build_evaluation(
        keywords={"a": ["a1", "a2"], "b": ["b1", "b2"], "c": ["c1", "c2"]}, metrics=METRICS)


@pytest.fixture(autouse=True)
def no_runs_due():
    scheduling._due.clear()
    yield
    scheduling._due.clear()


def write_grade(grader, feedback_slot: FeedbackSlot, value: int) -> None:
    """A committed grade whose after-commit announcement has not been handled (yet): the
    slot and its keyword's dirty mark, as judgments writes them, and no signal."""
    FeedbackSlot.objects.filter(pk=feedback_slot.pk).update(
        grade=value, user=grader, graded_at=timezone.now())
    keywords_version_bump(keyword_ids=[feedback_slot.keyword_id])


def keyword(evaluation, text: str) -> Keyword:
    return Keyword.objects.get(evaluation=evaluation, text=text)


def values(evaluation) -> dict[tuple[str, str], float | None]:
    return {(text, code): value for text, code, value in KeywordMetricValue.objects.filter(
        keyword__evaluation=evaluation).values_list("keyword__text", "metric__code", "value")}


def means(evaluation) -> dict[str, tuple[float | None, int]]:
    return {c.code: (c.value, c.keyword_count)
            for c in EvaluationMetric.objects.with_stored_mean().filter(evaluation=evaluation)}


def is_dirty(evaluation, text: str) -> bool:
    return mark_of(keyword(evaluation, text)).dirty_since is not None


def test_a_run_recomputes_every_dirty_keyword_of_the_evaluation_at_once(grader, evaluation):
    other = build_evaluation(keywords={"x": ["x1"]}, metrics=METRICS)
    write_grade(grader, slot(evaluation, "a", 1), 3)
    write_grade(grader, slot(evaluation, "a", 2), 0)
    write_grade(grader, slot(evaluation, "b", 1), 1)
    write_grade(grader, slot(evaluation, "b", 2), 2)
    write_grade(grader, slot(other, "x", 1), 2)

    run = services.keyword_metrics_recompute(keyword_id=keyword(evaluation, "a").pk)

    assert run.outcome == "ok"
    assert sorted(run.keyword_ids) == sorted(
        [keyword(evaluation, "a").pk, keyword(evaluation, "b").pk])
    assert run.left_dirty == () and run.more is False
    # graded -> binary by default: 0 -> 0, 1..3 -> 1. a: CG 3 + 0, P@2 1/2; b: CG 1 + 2, P 1.
    assert values(evaluation) == {("a", "cg"): 3.0, ("a", "precision"): 0.5,
                                  ("b", "cg"): 3.0, ("b", "precision"): 1.0}
    assert means(evaluation) == {"cg": (3.0, 2), "precision": (0.75, 2)}
    for text in ("a", "b"):
        row = keyword(evaluation, text)
        mark = mark_of(row)
        assert (mark.dirty_since, mark.computed_version, mark.version) == (None, 2, 2)
    assert is_dirty(other, "x")  # another evaluation's keywords wait for their own run
    # The task queued for b finds its keyword done.
    assert services.keyword_metrics_recompute(keyword_id=keyword(evaluation, "b").pk
                                              ).outcome == "fresh"


def test_a_grade_during_a_run_keeps_its_keyword_dirty_for_the_next(
    grader, evaluation, monkeypatch
):
    write_grade(grader, slot(evaluation, "a", 1), 2)
    write_grade(grader, slot(evaluation, "b", 1), 1)
    real_read = recompute_run.evaluation_grade_array

    def read_then_grade_b_again(**kwargs):
        grades = real_read(**kwargs)
        write_grade(grader, slot(evaluation, "b", 2), 3)
        return grades

    monkeypatch.setattr(recompute_run, "evaluation_grade_array", read_then_grade_b_again)
    run = services.keyword_metrics_recompute(keyword_id=keyword(evaluation, "a").pk)

    b = keyword(evaluation, "b")
    assert run.left_dirty == (b.pk,)
    assert not is_dirty(evaluation, "a")
    # b's values are those of the grades the run read; the newer grade keeps b dirty.
    assert values(evaluation)[("b", "cg")] == 1.0
    mark = mark_of(b)
    assert (mark.version, mark.computed_version) == (2, 1) and mark.dirty_since is not None

    monkeypatch.setattr(recompute_run, "evaluation_grade_array", real_read)
    assert services.keyword_metrics_recompute(keyword_id=b.pk).keyword_ids == (b.pk,)
    assert values(evaluation)[("b", "cg")] == 4.0  # 1 + 3
    assert means(evaluation)["cg"] == (3.0, 2)  # (2 + 4) / 2
    assert not is_dirty(evaluation, "b")


def test_a_run_takes_the_oldest_keywords_up_to_its_size_and_says_more_wait(
    grader, evaluation, monkeypatch
):
    monkeypatch.setattr(recompute_run, "RUN_KEYWORDS", 2)
    for text in ("c", "a", "b"):  # c waits longest
        write_grade(grader, slot(evaluation, text, 1), 1)
    run = services.keyword_metrics_recompute(keyword_id=keyword(evaluation, "b").pk)
    assert run.more is True
    assert set(run.keyword_ids) == {keyword(evaluation, "c").pk, keyword(evaluation, "a").pk}
    assert is_dirty(evaluation, "b")
    assert services.keyword_metrics_recompute(keyword_id=keyword(evaluation, "a").pk
                                              ).keyword_ids == (keyword(evaluation, "b").pk,)
    assert means(evaluation)["cg"] == (1.0, 3)


def test_a_refresh_that_changes_no_mean_marks_the_time_but_adds_no_history(
    grader, evaluation
):
    write_grade(grader, slot(evaluation, "a", 1), 2)
    services.keyword_metrics_recompute(keyword_id=keyword(evaluation, "a").pk)
    before = mean_of(EvaluationMetric.objects.get(evaluation=evaluation, code="cg")).updated_at
    points = MetricHistoryPoint.objects.filter(metric__evaluation=evaluation).count()
    services.evaluation_means_refresh(evaluation_id=evaluation.pk)
    # Dashboards key their caches on updated_at: it moves with every refresh.
    assert mean_of(EvaluationMetric.objects.get(evaluation=evaluation, code="cg")).updated_at \
        > before
    assert MetricHistoryPoint.objects.filter(metric__evaluation=evaluation).count() == points


# --- after a grade: what the receiver queues ---


@pytest.fixture
def sent(monkeypatch):
    """The recompute tasks sent, as (args, kwargs, countdown), instead of running them."""
    calls = []

    def apply_async(args=None, kwargs=None, countdown=None, **options):
        calls.append((tuple(args or ()), kwargs or {}, countdown))

    monkeypatch.setattr(tasks.recompute_keyword, "apply_async", apply_async)
    return calls


def test_grades_of_one_evaluation_queue_one_task_for_it(grader, evaluation, sent):
    other = build_evaluation(keywords={"x": ["x1"]}, metrics=METRICS)
    ids = [keyword(evaluation, "a").pk, keyword(evaluation, "b").pk, keyword(other, "x").pk]
    receivers.on_grades_changed(sender=FeedbackSlot, keyword_ids=ids, newly_dirty_ids=ids)
    assert sorted(sent) == sorted([
        ((ids[0],), {"evaluation_id": evaluation.pk}, None),
        ((ids[2],), {"evaluation_id": other.pk}, None),
    ])


def test_a_grade_on_a_keyword_that_was_dirty_already_queues_nothing(evaluation, sent):
    ids = [keyword(evaluation, "a").pk]
    receivers.on_grades_changed(sender=FeedbackSlot, keyword_ids=ids, newly_dirty_ids=[])
    assert sent == []


def test_no_task_while_a_run_answers_for_the_evaluation_unless_it_is_long_overdue(
    evaluation, sent
):
    ids = [keyword(evaluation, "a").pk]
    RecomputeDue.objects.create(evaluation=evaluation,
                                due_at=timezone.now() + timedelta(seconds=0.1))
    receivers.on_grades_changed(sender=FeedbackSlot, keyword_ids=ids, newly_dirty_ids=ids)
    assert sent == []
    # A run due a minute ago was lost: grades queue runs again.
    RecomputeDue.objects.filter(evaluation=evaluation).update(
        due_at=timezone.now() - timedelta(minutes=1))
    receivers.on_grades_changed(sender=FeedbackSlot, keyword_ids=ids, newly_dirty_ids=ids)
    assert sent == [((ids[0],), {"evaluation_id": evaluation.pk}, None)]


def test_without_pool_metrics_in_the_team_a_grade_costs_one_query(
    evaluation, django_assert_num_queries
):
    other = build_evaluation(team=evaluation.team, keywords={" A ": ["z"]},
                             metrics=[("ndcg", 2, {"gain": "exponential"})])
    a = keyword(evaluation, "a").pk
    with django_assert_num_queries(1):
        changed = services.keyword_pool_siblings_mark_dirty(keyword_ids=[a])
    assert changed.pool_siblings == {}
    assert changed.evaluation_of == {a: evaluation.pk}
    assert not is_dirty(other, " A ")


def test_a_grade_marks_the_keywords_whose_pool_metric_reads_it(grader, sent):
    graded = build_evaluation(keywords={"Tent": ["d1"]}, metrics=[("cg", 1, {})])
    team = graded.team
    recall = build_evaluation(team=team, keywords={"tent": ["d2"]},
                              metrics=[("recall", 1, {})])
    ideal_pool = build_evaluation(team=team, keywords={" TENT": ["d3"]},
                                  metrics=[("ndcg", 1, {"ideal": "pool"})])
    ideal_local = build_evaluation(team=team, keywords={"tent ": ["d4"]},
                                   metrics=[("ndcg", 1, {"ideal": "local"})])
    other_scale = build_evaluation(team=team, scale="binary", keywords={"tent": ["d5"]},
                                   metrics=[("recall", 1, {})])
    write_grade(grader, slot(graded, "Tent", 1), 2)
    ids = [keyword(graded, "Tent").pk]
    receivers.on_grades_changed(sender=FeedbackSlot, keyword_ids=ids, newly_dirty_ids=ids)

    assert is_dirty(recall, "tent") and is_dirty(ideal_pool, " TENT")
    assert not is_dirty(ideal_local, "tent ") and not is_dirty(other_scale, "tent")
    assert sorted(kwargs["evaluation_id"] for _, kwargs, _ in sent) == sorted(
        [graded.pk, recall.pk, ideal_pool.pk])


# --- a worker's runs of a busy evaluation ---


@pytest.fixture
def worker(sent):
    """recompute_keyword as a worker runs it (not eagerly); the tasks it sends are kept."""
    from searchtweak.celery import app

    eager = app.conf.task_always_eager
    app.conf.update(task_always_eager=False)
    yield sent
    app.conf.update(task_always_eager=eager)


# Long enough that the deferred run is still ahead when the test checks, however slow
# the machine: the test reads bounds around the run, not a window of the clock.
BUSY_INTERVAL = 60


@override_settings(RECOMPUTE_BUSY_INTERVAL_SECONDS=BUSY_INTERVAL)
def test_a_worker_run_that_leaves_keywords_dirty_queues_the_next_run_a_little_later(
    grader, evaluation, monkeypatch, worker, django_assert_num_queries
):
    a, b = keyword(evaluation, "a"), keyword(evaluation, "b")
    write_grade(grader, slot(evaluation, "a", 1), 2)
    real_read = recompute_run.evaluation_grade_array

    def read_then_grade_b(**kwargs):
        grades = real_read(**kwargs)
        write_grade(grader, slot(evaluation, "b", 1), 3)
        return grades

    monkeypatch.setattr(recompute_run, "evaluation_grade_array", read_then_grade_b)
    before = timezone.now()
    outcome = tasks.recompute_keyword.run(a.pk, evaluation_id=evaluation.pk)
    after = timezone.now()

    assert outcome == "ok"
    assert worker == [((b.pk,), {"evaluation_id": evaluation.pk, "deferred": True},
                       BUSY_INTERVAL)]
    due = RecomputeDue.objects.get(evaluation=evaluation).due_at
    interval = timedelta(seconds=BUSY_INTERVAL)
    assert before + interval <= due <= after + interval
    # Until then a task for the evaluation ends at once, without a query...
    with django_assert_num_queries(0):
        assert tasks.recompute_keyword.run(b.pk, evaluation_id=evaluation.pk) == "deferred"
    # ...and grades queue none.
    ids = [keyword(evaluation, "c").pk]
    receivers.on_grades_changed(sender=FeedbackSlot, keyword_ids=ids, newly_dirty_ids=ids)
    assert len(worker) == 1

    monkeypatch.setattr(recompute_run, "evaluation_grade_array", real_read)
    assert tasks.recompute_keyword.run(b.pk, evaluation_id=evaluation.pk, deferred=True) == "ok"
    assert values(evaluation)[("b", "cg")] == 3.0
    assert not is_dirty(evaluation, "b")
    # Nothing is dirty any more: the mark is lifted and nothing more is queued.
    assert RecomputeDue.objects.get(evaluation=evaluation).due_at is None
    assert len(worker) == 1


def test_a_worker_run_finds_keywords_graded_after_its_read_when_it_ends(
    grader, evaluation, monkeypatch, worker
):
    """A grade of a clean keyword lands while a run computes; its receiver sees the run's
    mark and queues nothing: the run queues the run that reads it."""
    a, c = keyword(evaluation, "a"), keyword(evaluation, "c")
    write_grade(grader, slot(evaluation, "a", 1), 1)
    real_read = recompute_run.evaluation_grade_array

    def read_then_grade_c(**kwargs):
        grades = real_read(**kwargs)
        assert RecomputeDue.objects.get(evaluation=evaluation).due_at is not None
        write_grade(grader, slot(evaluation, "c", 2), 2)
        ids = [c.pk]
        receivers.on_grades_changed(sender=FeedbackSlot, keyword_ids=ids, newly_dirty_ids=ids)
        return grades

    monkeypatch.setattr(recompute_run, "evaluation_grade_array", read_then_grade_c)
    assert tasks.recompute_keyword.run(a.pk, evaluation_id=evaluation.pk) == "ok"
    assert worker == [((c.pk,), {"evaluation_id": evaluation.pk, "deferred": True},
                       scheduling.busy_interval())]
    assert RecomputeDue.objects.get(evaluation=evaluation).due_at is not None

    monkeypatch.setattr(recompute_run, "evaluation_grade_array", real_read)
    tasks.recompute_keyword.run(c.pk, evaluation_id=evaluation.pk, deferred=True)
    assert values(evaluation) == {("a", "cg"): 1.0, ("a", "precision"): 1.0,
                                  ("c", "cg"): 2.0, ("c", "precision"): 1.0}
    assert RecomputeDue.objects.get(evaluation=evaluation).due_at is None


def test_a_worker_run_that_fails_part_way_stops_answering_for_later_grades(
    grader, evaluation, monkeypatch, worker
):
    """Grades that see a failed run's mark would queue nothing and wait for the sweep."""
    a, c = keyword(evaluation, "a"), keyword(evaluation, "c")
    write_grade(grader, slot(evaluation, "a", 1), 1)

    def fail(**kwargs):
        assert RecomputeDue.objects.get(evaluation=evaluation).due_at is not None
        raise DatabaseError("disk I/O error")

    monkeypatch.setattr(recompute_run, "evaluation_grade_array", fail)
    with pytest.raises(DatabaseError):
        tasks.recompute_keyword.run(a.pk, evaluation_id=evaluation.pk)
    assert RecomputeDue.objects.get(evaluation=evaluation).due_at is None
    assert worker == []
    ids = [c.pk]
    receivers.on_grades_changed(sender=FeedbackSlot, keyword_ids=ids, newly_dirty_ids=ids)
    assert worker == [((c.pk,), {"evaluation_id": evaluation.pk}, None)]
    assert is_dirty(evaluation, "a")


@pytest.mark.parametrize("message, retried", [
    ("database is locked", True), ("no such table: metrics_keywordmetricvalue", False),
])
def test_a_sqlite_lock_that_outlasts_the_busy_timeout_is_retried(
    grader, evaluation, monkeypatch, message, retried
):
    write_grade(grader, slot(evaluation, "a", 1), 1)

    def fail(**kwargs):
        try:
            raise sqlite3.OperationalError(message)
        except sqlite3.OperationalError as cause:
            raise OperationalError(message) from cause

    monkeypatch.setattr(recompute_run, "evaluation_grade_array", fail)
    expected = services.RecomputeConflict if retried else OperationalError
    with pytest.raises(expected, match=message):
        services.keyword_metrics_recompute(keyword_id=keyword(evaluation, "a").pk)
    assert is_dirty(evaluation, "a")


def test_the_sweep_queues_one_run_per_evaluation(grader, evaluation, sent):
    other = build_evaluation(keywords={"x": ["x1"]}, metrics=METRICS)
    for feedback_slot in (slot(evaluation, "a", 1), slot(evaluation, "b", 1),
                          slot(other, "x", 1)):
        write_grade(grader, feedback_slot, 1)
    dirty_marks().update(
        dirty_since=timezone.now() - timedelta(minutes=1))
    assert tasks.sweep_dirty_keywords.run() == 3
    started_from = [args[0] for args, _, _ in sent]
    assert sorted(Keyword.objects.get(pk=pk).evaluation_id for pk in started_from) == sorted(
        [evaluation.pk, other.pk])


def test_a_deadlock_victim_becomes_a_conflict_the_task_retries(evaluation, monkeypatch):
    import psycopg.errors
    from django.db import OperationalError

    def deadlocked(keyword_id):
        try:
            raise psycopg.errors.DeadlockDetected("deadlock detected")
        except psycopg.errors.DeadlockDetected as cause:
            raise OperationalError("deadlock detected") from cause

    monkeypatch.setattr(recompute_run, "_recompute_dirty", deadlocked)
    with pytest.raises(services.RecomputeConflict):
        services.keyword_metrics_recompute(keyword_id=keyword(evaluation, "a").pk)
    assert services.RecomputeConflict in tasks.recompute_keyword.autoretry_for


def test_the_busy_interval_is_a_defined_setting_of_100_ms_by_default(settings):
    # Was read with getattr and a default the settings never defined.
    assert settings.RECOMPUTE_BUSY_INTERVAL_SECONDS == 0.1
    settings.RECOMPUTE_BUSY_INTERVAL_SECONDS = 0.5
    assert scheduling.busy_interval() == 0.5


def test_a_large_from_scratch_run_refreshes_the_values_statistics(personas, monkeypatch):
    """After recompute_metrics rewrites every value of a large evaluation, the planner
    must not judge the table by its old statistics until autovacuum comes by."""
    from django.db import connection

    from tests.conftest import skip_or_fail
    from tests.metrics.test_dashboard_builders import bulk_evaluation, graders_of

    if connection.vendor != "postgresql":
        skip_or_fail("ANALYZE's statistics are PostgreSQL's: set DATABASE_URL")
    evaluation = bulk_evaluation(team=personas.team, graders=graders_of(personas.team),
                                 keyword_count=7)
    monkeypatch.setattr(recompute_run, "ANALYZE_AFTER_KEYWORDS", 7)

    def estimated_rows() -> float:
        with connection.cursor() as cursor:
            cursor.execute("SELECT reltuples FROM pg_class WHERE relname = %s",
                           [KeywordMetricValue._meta.db_table])
            return cursor.fetchone()[0]

    stored = KeywordMetricValue.objects.count()
    with connection.cursor() as cursor:  # what a stale estimate looks like
        cursor.execute("UPDATE pg_class SET reltuples = 0 WHERE relname = %s",
                       [KeywordMetricValue._meta.db_table])
    recompute_run.evaluation_metrics_recompute(evaluation_id=evaluation.pk)
    assert stored == 7 * len(evaluation.metric_configs.all())
    assert estimated_rows() == stored
