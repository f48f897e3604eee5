"""metrics.receivers only enqueue: every write they cause happens in a task's service, but
for the dirty marks of a configuration change, which commit with it
(tests/metrics/test_recompute_config.py)."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from evaluations.models import Keyword
from judgments.models import FeedbackSlot
from metrics import receivers, tasks
from tests.metrics.builders import build_evaluation
from tests.recompute_state import mark_of

pytestmark = pytest.mark.django_db


@pytest.fixture
def sent(monkeypatch):
    """Tasks sent by name, as (args, kwargs), instead of running them."""
    calls = []
    for task in (tasks.recompute_keyword, tasks.mark_pool_siblings_dirty,
                 tasks.mark_fetched_dirty, tasks.mark_fetched_dirty_many):
        def apply_async(args=None, kwargs=None, countdown=None, _name=task.name, **options):
            calls.append((_name, tuple(args or ()), kwargs or {}))
        monkeypatch.setattr(task, "apply_async", apply_async)
    return calls


def writes(queries: CaptureQueriesContext) -> list[str]:
    return [q["sql"] for q in queries.captured_queries
            if not q["sql"].lstrip().upper().startswith(("SELECT", "SAVEPOINT", "RELEASE"))]


def test_a_grade_read_by_a_pool_metric_queues_the_marking_of_its_siblings_without_writing(sent):
    graded = build_evaluation(keywords={"Tent": ["d1"]}, metrics=[("cg", 1, {})])
    recall = build_evaluation(team=graded.team, keywords={"tent": ["d2"]},
                              metrics=[("recall", 1, {})])
    graded_id = Keyword.objects.get(evaluation=graded).pk
    with CaptureQueriesContext(connection) as queries:
        receivers.on_grades_changed(sender=FeedbackSlot, keyword_ids=[graded_id],
                                    newly_dirty_ids=[graded_id])
    assert writes(queries) == []
    assert sent == [
        ("metrics.mark_pool_siblings_dirty", ([graded_id],), {}),
        ("metrics.recompute_keyword", (graded_id,), {"evaluation_id": graded.pk}),
    ]
    assert mark_of(Keyword.objects.get(evaluation=recall)).dirty_since is None  # the task's


def test_the_siblings_task_marks_them_dirty_and_queues_their_run(sent):
    graded = build_evaluation(keywords={"Tent": ["d1"]}, metrics=[("cg", 1, {})])
    recall = build_evaluation(team=graded.team, keywords={"tent": ["d2"]},
                              metrics=[("recall", 1, {})])
    sibling = Keyword.objects.get(evaluation=recall)
    assert tasks.mark_pool_siblings_dirty.run([Keyword.objects.get(evaluation=graded).pk]) == 1
    sibling.refresh_from_db()
    assert mark_of(sibling).dirty_since is not None and mark_of(sibling).version == 1
    assert sent == [("metrics.recompute_keyword", (sibling.pk,), {"evaluation_id": recall.pk})]


def test_an_empty_fetch_result_queues_its_marking_after_commit_without_writing(
        sent, django_capture_on_commit_callbacks):
    evaluation = build_evaluation(keywords={"tent": []}, metrics=[("recall", 1, {})])
    keyword = Keyword.objects.get(evaluation=evaluation)
    with CaptureQueriesContext(connection) as queries, \
            django_capture_on_commit_callbacks(execute=False) as callbacks:
        receivers.on_snapshots_created(sender=None, evaluation=evaluation,
                                       snapshots_by_keyword={keyword: []})
    assert writes(queries) == [] and sent == []
    callbacks[0]()
    assert sent == [("metrics.mark_fetched_dirty_many", (evaluation.pk, [[keyword.pk, False]]),
                     {})]


@pytest.mark.parametrize(("metric", "marked"), [("recall", True), ("cg", False)])
def test_the_empty_results_task_marks_the_keyword_only_for_a_pool_metric(
        metric, marked, django_capture_on_commit_callbacks):
    evaluation = build_evaluation(keywords={"tent": []}, metrics=[(metric, 1, {})])
    keyword = Keyword.objects.get(evaluation=evaluation)
    with django_capture_on_commit_callbacks(execute=False):
        assert tasks.mark_fetched_dirty.run(keyword.pk, evaluation.pk, False) is marked
    keyword.refresh_from_db()
    mark = mark_of(keyword)
    assert (mark.version, mark.dirty_since is not None) == (int(marked), marked)


@pytest.mark.parametrize("metrics", [[("cg", 3, {})], []])
def test_fetched_results_mark_their_keyword_with_or_without_metrics(
        metrics, django_capture_on_commit_callbacks):
    """For its values' bounds, and for its new slots in the dashboard's counts, which the
    progress reads with or without metrics."""
    evaluation = build_evaluation(keywords={"tent": ["d1", "d2"]}, metrics=metrics)
    keyword = Keyword.objects.get(evaluation=evaluation)
    with django_capture_on_commit_callbacks(execute=False):
        assert tasks.mark_fetched_dirty.run(keyword.pk, evaluation.pk, True) is True
    mark = mark_of(keyword)
    assert (mark.version, mark.dirty_since is not None) == (1, True)


@pytest.mark.parametrize(("metric", "marked_texts"), [
    ("cg", {"tent", "boots"}),  # the empty "stove" has no value to bound
    ("recall", {"tent", "boots", "stove"}),  # the pool gives the empty one its 0
])
def test_a_fetched_group_is_marked_at_once_and_queues_one_run(
        sent, metric, marked_texts, django_capture_on_commit_callbacks):
    evaluation = build_evaluation(keywords={"tent": ["d1"], "boots": ["d2"], "stove": []},
                                  metrics=[(metric, 1, {})])
    keywords = {keyword.text: keyword for keyword in Keyword.objects.filter(
        evaluation=evaluation)}
    group = [[keyword.pk, keyword.text != "stove"] for keyword in keywords.values()]
    with django_capture_on_commit_callbacks(execute=True):
        assert tasks.mark_fetched_dirty_many.run(evaluation.pk, group) == len(marked_texts)
    assert {text for text, keyword in keywords.items()
            if mark_of(keyword).dirty_since is not None} == marked_texts
    assert {mark_of(keyword).version for keyword in keywords.values()} == (
        {1} if len(marked_texts) == 3 else {0, 1})
    first = min(keywords[text].pk for text in marked_texts)
    assert sent == [("metrics.recompute_keyword", (first,), {"evaluation_id": evaluation.pk})]


def test_marking_a_fetched_group_costs_the_same_queries_at_any_size(
        sent, django_capture_on_commit_callbacks):
    counts = []
    for size in (2, 40):
        evaluation = build_evaluation(
            keywords={f"k{index}": ["d1"] for index in range(size)}, metrics=[("cg", 1, {})])
        group = [[pk, True] for pk in Keyword.objects.filter(
            evaluation=evaluation).values_list("pk", flat=True)]
        with CaptureQueriesContext(connection) as queries, \
                django_capture_on_commit_callbacks(execute=True):
            assert tasks.mark_fetched_dirty_many.run(evaluation.pk, group) == size
        counts.append(len(queries.captured_queries))
    assert counts[0] == counts[1]
    assert [name for name, _, _ in sent] == ["metrics.recompute_keyword"] * 2


def test_a_fetched_group_of_keywords_already_dirty_queues_no_run(
        sent, django_capture_on_commit_callbacks):
    evaluation = build_evaluation(keywords={"tent": ["d1"], "boots": ["d2"]},
                                  metrics=[("cg", 1, {})])
    group = [[pk, True] for pk in Keyword.objects.filter(
        evaluation=evaluation).values_list("pk", flat=True)]
    with django_capture_on_commit_callbacks(execute=True):
        tasks.mark_fetched_dirty_many.run(evaluation.pk, group)
    sent.clear()
    with django_capture_on_commit_callbacks(execute=True):
        assert tasks.mark_fetched_dirty_many.run(evaluation.pk, group) == 2
    assert sent == []
    assert {mark_of(pk).version for pk, _ in group} == {2}


def test_a_message_queued_under_the_old_name_still_marks_an_empty_fetch(
        django_capture_on_commit_callbacks):
    evaluation = build_evaluation(keywords={"tent": []}, metrics=[("recall", 1, {})])
    keyword = Keyword.objects.get(evaluation=evaluation)
    with django_capture_on_commit_callbacks(execute=False):
        assert tasks.mark_empty_results_dirty.run(keyword.pk, evaluation.pk) is True


def test_with_the_broker_down_the_siblings_are_marked_here_so_the_sweep_finds_them(
        monkeypatch):
    graded = build_evaluation(keywords={"Tent": ["d1"]}, metrics=[("cg", 1, {})])
    recall = build_evaluation(team=graded.team, keywords={"tent": ["d2"]},
                              metrics=[("recall", 1, {})])
    graded_id = Keyword.objects.get(evaluation=graded).pk

    def broker_down(*args, **kwargs):
        raise ConnectionError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    for task in (tasks.recompute_keyword, tasks.mark_pool_siblings_dirty):
        monkeypatch.setattr(task, "apply_async", broker_down)
    receivers.on_grades_changed(sender=FeedbackSlot, keyword_ids=[graded_id],
                                newly_dirty_ids=[graded_id])
    sibling = Keyword.objects.get(evaluation=recall)
    assert mark_of(sibling).dirty_since is not None and mark_of(sibling).version == 1
