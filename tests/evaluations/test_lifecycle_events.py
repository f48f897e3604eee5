"""Lifecycle events (evaluations.events): one evaluation_transitioned per actual transition,
sent after commit, with who and how; none for a no-op or a rolled-back transition."""

import threading
from datetime import datetime

import pytest
from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.utils import timezone
from rest_framework.test import APIClient

from evaluations.events import By, EvaluationTransitioned, evaluation_transitioned
from evaluations.fetching import services as fetch_services
from evaluations.models import Evaluation, Keyword
from evaluations.services import completion, lifecycle
from judgments.grading import slot_grade_by_lead
from judgments.models import FeedbackSlot
from metrics.models import EvaluationRecomputeState, KeywordRecomputeMark
from metrics.recompute import means, run
from tests.conftest import skip_or_fail
from tests.evaluations.factories import (
    EndpointFactory,
    EvaluationFactory,
    EvaluationMetricFactory,
    KeywordFactory,
    SearchModelFactory,
)
from tests.evaluations.servers import Reply, running_server
from tests.judgments.builders import evaluation_with_slots
from tests.recompute_state import state_of
from tests.source_scan import matching_lines

pytestmark = pytest.mark.django_db


@pytest.fixture
def events():
    """The events sent while the test runs, in order."""
    heard: list[EvaluationTransitioned] = []
    lock = threading.Lock()

    def listen(sender, event, **kwargs):
        with lock:
            heard.append(event)

    evaluation_transitioned.connect(listen, dispatch_uid="test_lifecycle_events")
    yield heard
    evaluation_transitioned.disconnect(dispatch_uid="test_lifecycle_events")


@pytest.fixture
def committed(django_capture_on_commit_callbacks):
    """Run the block as a committed request would: on_commit callbacks run at its end."""
    return lambda: django_capture_on_commit_callbacks(execute=True)


def fields(event: EvaluationTransitioned) -> tuple:
    return (event.evaluation_id, event.team_id, event.transition, event.previous_status,
            event.status, event.by, event.user_id)


def startable(personas, *, fetch_statuses=("pending",), status="pending") -> Evaluation:
    evaluation = EvaluationFactory(model__endpoint__team=personas.team, status=status)
    for position, fetch_status in enumerate(fetch_statuses, start=1):
        KeywordFactory(evaluation=evaluation, text=f"k{position}", position=position,
                       fetch_status=fetch_status)
    EvaluationMetricFactory(evaluation=evaluation)
    return evaluation


def test_start_announces_started_once_the_transaction_commits(personas, events, committed):
    evaluation = startable(personas)
    with committed():
        lifecycle.evaluation_start(evaluation=evaluation, enqueue=False, by=By.USER,
                                   user=personas.lead)
        assert events == []  # not before the commit
    assert [fields(e) for e in events] == [
        (evaluation.pk, personas.team.pk, "started", "pending", "fetching", "user",
         personas.lead.pk)]
    assert isinstance(events[0].at, datetime) and events[0].at.tzinfo is not None


def test_a_start_with_nothing_to_fetch_announces_started_into_active(personas, events,
                                                                      committed):
    evaluation = startable(personas, fetch_statuses=("fetched",))
    with committed():
        lifecycle.evaluation_start(evaluation=evaluation, enqueue=False)
    assert [(e.transition, e.previous_status, e.status, e.by, e.user_id) for e in events] == [
        ("started", "pending", "active", "system", None)]


def test_the_end_of_a_fetch_announces_fetched_once(personas, events, committed):
    evaluation = startable(personas, fetch_statuses=("fetched", "failed"), status="fetching")
    with committed():
        assert fetch_services.evaluation_fetch_complete(evaluation_id=evaluation.pk) is True
        # Every task of the fetch asks; the one that moved the evaluation announced it.
        assert fetch_services.evaluation_fetch_complete(evaluation_id=evaluation.pk) is False
    assert [fields(e) for e in events] == [
        (evaluation.pk, personas.team.pk, "fetched", "fetching", "active", "system", None)]


def test_a_fetch_that_fetched_no_keyword_announces_failed(personas, events, committed):
    evaluation = startable(personas, fetch_statuses=("failed", "failed"), status="fetching")
    with committed():
        fetch_services.evaluation_fetch_complete(evaluation_id=evaluation.pk)
    assert [(e.transition, e.previous_status, e.status) for e in events] == [
        ("failed", "fetching", "active")]


def test_a_fetch_still_waiting_for_a_keyword_announces_nothing(personas, events, committed):
    evaluation = startable(personas, fetch_statuses=("fetched", "pending"), status="fetching")
    with committed():
        assert fetch_services.evaluation_fetch_complete(evaluation_id=evaluation.pk) is False
    assert events == []


def test_a_page_start_then_the_fetch_announce_started_then_fetched(client, personas, events,
                                                                   committed):
    with running_server() as server:
        # One keyword answers, the other fails: still `fetched`, there is something to grade.
        server.handler = lambda request: Reply(status=500, body="down") if (
            request.query["q"][0] == "hats") else Reply(body={"hits": {"hits": [
                {"_id": "b1", "_source": {"title": "Boot"}}]}})
        endpoint = EndpointFactory(team=personas.team, url=f"{server.url}/search", mapper={
            "documents": "hits.hits", "id": "_id", "name": "_source.title", "image": None,
            "fields": {}})
        evaluation = EvaluationFactory(model=SearchModelFactory(endpoint=endpoint))
        KeywordFactory(evaluation=evaluation, text="boots", position=1)
        KeywordFactory(evaluation=evaluation, text="hats", position=2)
        EvaluationMetricFactory(evaluation=evaluation)
        client.force_login(personas.lead)
        with committed():
            client.post(f"/evaluations/{evaluation.pk}/start/")
    assert [(e.transition, e.previous_status, e.status, e.by, e.user_id) for e in events] == [
        ("started", "pending", "fetching", "user", personas.lead.pk),
        ("fetched", "fetching", "active", "system", None)]
    assert Evaluation.objects.get(pk=evaluation.pk).status == "active"


def test_retrying_failed_keywords_announces_retried_once(personas, events, committed):
    evaluation = startable(personas, fetch_statuses=("fetched", "failed"), status="active")
    Evaluation.objects.filter(pk=evaluation.pk).update(started_at="2026-01-01T00:00:00Z")
    with committed():
        lifecycle.evaluation_retry_failed(evaluation=evaluation, enqueue=False, by=By.USER,
                                          user=personas.lead)
        # Already fetching: nothing changes, nothing is announced.
        lifecycle.evaluation_retry_failed(evaluation=evaluation, enqueue=False)
    assert [(e.transition, e.previous_status, e.status, e.by) for e in events] == [
        ("retried", "active", "fetching", "user")]


def test_pause_announces_paused(personas, events, committed):
    evaluation = startable(personas, fetch_statuses=("fetched",), status="active")
    with committed():
        lifecycle.evaluation_pause(evaluation=evaluation, by=By.USER, user=personas.lead)
    assert [fields(e) for e in events] == [
        (evaluation.pk, personas.team.pk, "paused", "active", "pending", "user",
         personas.lead.pk)]


def test_finishing_twice_announces_finished_once(personas, events, committed):
    evaluation = EvaluationFactory(model__endpoint__team=personas.team, status="active",
                                   started_at="2026-01-01T00:00:00Z")
    with committed():
        lifecycle.evaluation_finish(evaluation=evaluation, by=By.USER, user=personas.lead)
        lifecycle.evaluation_finish(evaluation=evaluation, by=By.USER, user=personas.lead)
    assert [fields(e) for e in events] == [
        (evaluation.pk, personas.team.pk, "finished", "active", "finished", "user",
         personas.lead.pk)]
    assert events[0].at == Evaluation.objects.get(pk=evaluation.pk).finished_at


def test_a_refused_transition_announces_nothing(personas, events, committed):
    evaluation = EvaluationFactory(model__endpoint__team=personas.team, status="fetching",
                                   started_at="2026-01-01T00:00:00Z")
    with committed(), pytest.raises(ValidationError):
        lifecycle.evaluation_finish(evaluation=evaluation)
    assert events == []


def test_the_api_finish_is_announced_as_by_api_with_its_user(personas, events, committed):
    evaluation = EvaluationFactory(model__endpoint__team=personas.team, status="active",
                                   started_at="2026-01-01T00:00:00Z")
    api = APIClient()
    api.force_authenticate(personas.lead)
    with committed():
        response = api.post(f"/api/v1/evaluations/{evaluation.pk}/finish/")
    assert response.status_code == 200 and response.json()["status"] == "finished"
    assert [(e.transition, e.by, e.user_id) for e in events] == [
        ("finished", "api", personas.lead.pk)]


def test_archive_and_restore_announce_once_each_and_keep_the_status(personas, events,
                                                                     committed):
    evaluation = EvaluationFactory(model__endpoint__team=personas.team, status="active")
    api = APIClient()
    api.force_authenticate(personas.lead)
    with committed():
        api.post(f"/api/v1/evaluations/{evaluation.pk}/archive/")
        api.post(f"/api/v1/evaluations/{evaluation.pk}/archive/")  # archived already
        lifecycle.evaluation_restore(evaluation=evaluation, by=By.USER, user=personas.admin)
        lifecycle.evaluation_restore(evaluation=evaluation)  # not archived any more
    assert [(e.transition, e.previous_status, e.status, e.by, e.user_id) for e in events] == [
        ("archived", "active", "active", "api", personas.lead.pk),
        ("restored", "active", "active", "user", personas.admin.pk)]
    assert Evaluation.objects.get(pk=evaluation.pk).archived_at is None


def test_a_rolled_back_transition_announces_nothing(personas, events, committed):
    evaluation = EvaluationFactory(model__endpoint__team=personas.team, status="active",
                                   started_at="2026-01-01T00:00:00Z")
    with committed():
        with pytest.raises(RuntimeError), transaction.atomic():
            lifecycle.evaluation_finish(evaluation=evaluation)
            lifecycle.evaluation_archive(evaluation=evaluation)
            raise RuntimeError("the request failed after the transitions")
        lifecycle.evaluation_pause(evaluation=evaluation)
    # Only the transition that committed was heard.
    assert [e.transition for e in events] == ["paused"]
    assert Evaluation.objects.filter(pk=evaluation.pk, archived_at=None).exists()


def test_a_failing_listener_neither_undoes_the_transition_nor_silences_others(
        personas, events, committed, caplog):
    def broken(sender, event, **kwargs):
        raise ValueError("listener bug")

    evaluation_transitioned.connect(broken, dispatch_uid="test_broken_listener")
    try:
        evaluation = EvaluationFactory(model__endpoint__team=personas.team, status="active")
        with committed():
            lifecycle.evaluation_pause(evaluation=evaluation)
    finally:
        evaluation_transitioned.disconnect(dispatch_uid="test_broken_listener")
    assert Evaluation.objects.get(pk=evaluation.pk).status == "pending"
    assert [e.transition for e in events] == ["paused"]
    assert "listener bug" in caplog.text


# --- the automatic finish ------------------------------------------------------------


def complete(personas, **fields) -> Evaluation:
    """An active evaluation of 2 keywords x 2 results, every slot graded (written
    directly) and no metric configured: complete by the rule, which reads the slots."""
    evaluation = evaluation_with_slots(personas.team, keywords=2, positions=2, **fields)
    FeedbackSlot.objects.filter(evaluation=evaluation).update(grade=1, user=personas.lead)
    EvaluationRecomputeState.objects.create(evaluation=evaluation, progress=100.0)
    return evaluation


def test_finish_if_complete_finishes_by_auto_once(personas, events, committed):
    evaluation = complete(personas, auto_finish=True)
    with committed():
        assert completion.evaluation_finish_if_complete(evaluation_id=evaluation.pk) is True
        assert completion.evaluation_finish_if_complete(evaluation_id=evaluation.pk) is False
        lifecycle.evaluation_finish(evaluation=evaluation)  # a lead, too late: a no-op
    assert [fields(e) for e in events] == [
        (evaluation.pk, personas.team.pk, "finished", "active", "finished", "auto", None)]
    evaluation.refresh_from_db()
    assert (evaluation.status, evaluation.finished_at) == ("finished", events[0].at)


@pytest.mark.parametrize(("changes", "progress", "queries"), [
    ({"auto_finish": False}, None, 1),  # the lead finishes it by hand
    ({"slot": None}, None, 3),  # a slot is still empty
    ({"dirty": True}, None, 4),  # graded, and a keyword's values not yet recomputed
    ({"metric": True}, None, 6),  # a keyword fetched, its values not yet computed
    ({"status": "pending"}, None, 1),  # paused
    ({}, 99.9, 0),  # the caller's progress says it is not complete: no statement at all
])
def test_finish_if_complete_leaves_an_incomplete_evaluation_alone(
        personas, events, committed, changes, progress, queries, django_assert_num_queries):
    evaluation = complete(personas, auto_finish=True)
    keyword = evaluation.keywords.order_by("position").last()
    if "slot" in changes:
        FeedbackSlot.objects.filter(keyword=keyword, position=2).update(grade=None,
                                                                         user=None)
    elif "dirty" in changes:
        KeywordRecomputeMark.objects.create(keyword=keyword, evaluation=evaluation, version=1,
                                            dirty_since=timezone.now())
    elif "metric" in changes:
        EvaluationMetricFactory(evaluation=evaluation, code="precision", k=2)
    else:
        Evaluation.objects.filter(pk=evaluation.pk).update(**changes)
    with committed(), django_assert_num_queries(queries):
        assert completion.evaluation_finish_if_complete(
            evaluation_id=evaluation.pk, progress=progress) is False
    assert events == []
    assert Evaluation.objects.get(pk=evaluation.pk).finished_at is None


def graded_to_the_last_slot(personas, committed) -> tuple[Evaluation, list[FeedbackSlot]]:
    """An auto-finishing evaluation of 2 keywords x 2 results whose slots but the last are
    graded by the lead, each grade's recompute run after its commit."""
    evaluation = evaluation_with_slots(personas.team, keywords=2, positions=2,
                                       auto_finish=True)
    EvaluationMetricFactory(evaluation=evaluation, code="precision", k=2)
    slots = list(FeedbackSlot.objects.filter(evaluation=evaluation).order_by("pk"))
    for slot in slots[:-1]:
        with committed():
            slot_grade_by_lead(lead=personas.lead, slot_id=slot.pk, grade=1)
    return evaluation, slots


def test_grading_the_last_slot_finishes_the_evaluation_by_auto_once(personas, events,
                                                                     committed):
    evaluation, slots = graded_to_the_last_slot(personas, committed)
    assert events == []
    with committed():
        slot_grade_by_lead(lead=personas.lead, slot_id=slots[-1].pk, grade=3)
    assert [fields(e) for e in events] == [
        (evaluation.pk, personas.team.pk, "finished", "active", "finished", "auto", None)]
    # A later recompute of the finished evaluation (a metric added, a regrade) does not
    # finish it again.
    means.evaluation_means_refresh(evaluation_id=evaluation.pk)
    assert len(events) == 1


def test_the_recompute_asks_the_lifecycle_and_does_not_finish_by_itself(
        personas, events, committed, monkeypatch):
    asked = []
    monkeypatch.setattr(run, "evaluation_finish_if_complete",
                        lambda **kwargs: asked.append(kwargs) or False)
    evaluation, slots = graded_to_the_last_slot(personas, committed)
    with committed():
        slot_grade_by_lead(lead=personas.lead, slot_id=slots[-1].pk, grade=3)
    evaluation.refresh_from_db()
    # Complete, and yet active: finishing is the lifecycle's, which said no here.
    assert (state_of(evaluation).progress, evaluation.status, evaluation.finished_at) == (
        100.0, "active", None)
    assert asked[-1] == {"evaluation_id": evaluation.pk, "progress": 100.0}
    assert events == []


STATUS_WRITES = [
    r"^\s*evaluation\.(status|finished_at|archived_at)\s*=[^=]",  # evaluation.status = ...
    r"\.update\([^)]*\bstatus=Evaluation\.",  # ORM: ….update(status=Evaluation.Status.…)
    r"Evaluation\.objects[^\n]*\.update\([^)]*\barchived_at=",  # ORM: the archive flag
    r"(?i)update\s+(\{_table\(Evaluation\)\}|\"?evaluations_evaluation\b)[^;]*\bset\b"
    r"[^;]*\b(status|finished_at|archived_at)\s*=",  # SQL
]


def test_only_the_services_that_announce_write_an_evaluations_status():
    # A write elsewhere (the recompute finishing by itself, say) would go unannounced.
    assert set(matching_lines(STATUS_WRITES)) == {
        "evaluations/services/lifecycle.py", "evaluations/fetching/services.py",
        "evaluations/services/completion.py"}


# --- races, on PostgreSQL ---------------------------------------------------------------


def race(actions: list) -> list:
    """Run each action in a thread of its own, started together; their results."""
    start = threading.Barrier(len(actions))
    results: list = [None] * len(actions)
    errors: list[BaseException] = []

    def run(index: int) -> None:
        try:
            start.wait()
            results[index] = actions[index]()
        except BaseException as error:  # surfaced by the main thread below
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(index,)) for index in range(len(actions))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == [] and not any(thread.is_alive() for thread in threads)
    return results


@pytest.mark.django_db(transaction=True)
def test_racing_automatic_finishes_announce_once(personas, events):
    if connection.vendor != "postgresql":
        skip_or_fail("a race between connections needs PostgreSQL: set DATABASE_URL")
    evaluation = complete(personas, auto_finish=True)
    results = race([lambda: completion.evaluation_finish_if_complete(
        evaluation_id=evaluation.pk)] * 4)
    assert sorted(results) == [False, False, False, True]
    assert [(e.evaluation_id, e.transition, e.by) for e in events] == [
        (evaluation.pk, "finished", "auto")]


@pytest.mark.django_db(transaction=True)
def test_a_lead_and_the_rule_finishing_at_once_announce_once(personas, events):
    if connection.vendor != "postgresql":
        skip_or_fail("a race between connections needs PostgreSQL: set DATABASE_URL")
    evaluation = complete(personas, auto_finish=True)
    race([lambda: lifecycle.evaluation_finish(evaluation=evaluation, by=By.USER,
                                              user=personas.lead),
          lambda: completion.evaluation_finish_if_complete(evaluation_id=evaluation.pk)])
    assert [e.transition for e in events] == ["finished"]
    assert Evaluation.objects.get(pk=evaluation.pk).status == "finished"


@pytest.mark.django_db(transaction=True)
def test_a_transition_in_a_rolled_back_transaction_is_never_heard(personas, events):
    # A real transaction, not the test's savepoint: the rollback is the database's.
    evaluation = startable(personas)
    with pytest.raises(RuntimeError), transaction.atomic():
        lifecycle.evaluation_start(evaluation=evaluation, enqueue=False)
        raise RuntimeError("after the start")
    assert events == []
    assert Evaluation.objects.get(pk=evaluation.pk).status == "pending"
    lifecycle.evaluation_start(evaluation=evaluation, enqueue=False)  # autocommit: heard
    assert [(e.transition, e.status) for e in events] == [("started", "fetching")]
    assert Keyword.objects.filter(evaluation=evaluation).count() == 1
