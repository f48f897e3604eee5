"""A fetch claim lasts as long as the endpoint's requests can take, no longer: a dead
worker's keywords come back through the sweep or a restart, and a keyword's snapshots are
stored once, whoever fetched it."""

from datetime import timedelta

import pytest
from django.utils import timezone

from evaluations import tasks
from evaluations.endpoints.mapper import Document
from evaluations.fetching import services as fetch_services
from evaluations.fetching.search_requests import FetchResult, fetch_claim_lease_seconds
from evaluations.models import Evaluation, Keyword, Snapshot
from evaluations.services import lifecycle
from tests.evaluations.factories import fetchable_evaluation
from tests.evaluations.servers import running_server

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fast_retries(settings):
    settings.FETCH_RETRY_BACKOFF_MS = 5


@pytest.fixture
def server():
    with running_server() as server:
        yield server


def fetching(server, keywords: list[str]) -> Evaluation:
    """An evaluation in `fetching` whose keywords wait, as after a start whose tasks died."""
    evaluation = fetchable_evaluation(url=server.url, keywords=keywords, timeout_seconds=5)
    Evaluation.objects.filter(pk=evaluation.pk).update(
        status=Evaluation.Status.FETCHING, started_at=timezone.now())
    evaluation.refresh_from_db()
    return evaluation


def claimed(evaluation, text: str, *, seconds_ago: float) -> Keyword:
    keyword = Keyword.objects.get(evaluation=evaluation, text=text)
    Keyword.objects.filter(pk=keyword.pk).update(
        fetch_claimed_at=timezone.now() - timedelta(seconds=seconds_ago))
    return keyword


def snapshot_rows(evaluation) -> list[tuple[str, int]]:
    return sorted(Snapshot.objects.filter(keyword__evaluation=evaluation)
                  .values_list("keyword__text", "position"))


def test_the_lease_is_the_endpoints_requests_with_retries_and_a_margin(settings):
    settings.FETCH_RETRIES, settings.FETCH_RETRY_BACKOFF_MS = 3, 500
    settings.FETCH_CLAIM_MARGIN_SECONDS = 30
    # 4 attempts of at most 3 timeouts each, backoffs of 0.5 + 1 + 2 s, the margin.
    assert fetch_claim_lease_seconds(5.0) == 4 * 15 + 3.5 + 30
    assert fetch_claim_lease_seconds(120.0) == 4 * 360 + 3.5 + 30


def test_a_live_claim_is_left_to_its_task(server, django_capture_on_commit_callbacks):
    evaluation = fetching(server, ["lamp"])
    lease = fetch_claim_lease_seconds(5)
    claimed(evaluation, "lamp", seconds_ago=lease - 10)
    with django_capture_on_commit_callbacks(execute=True):
        assert tasks.sweep_stalled_fetches() == 0
    ids = list(evaluation.keywords.values_list("pk", flat=True))
    assert fetch_services.keywords_fetch(evaluation_id=evaluation.pk, keyword_ids=ids) == 0
    assert server.received == []
    evaluation.refresh_from_db()
    assert evaluation.status == Evaluation.Status.FETCHING


def test_the_sweep_requeues_a_keyword_whose_claim_lapsed(
        server, django_capture_on_commit_callbacks):
    """The defect: a worker SIGKILLed mid-fetch left claims that nothing took over for
    FETCH_CLAIM_LEASE (1800 s), so the evaluation stayed fetching."""
    evaluation = fetching(server, ["lamp", "desk", "chair"])
    Keyword.objects.filter(evaluation=evaluation, text="chair").update(
        fetch_status=Keyword.FetchStatus.FETCHED)
    lease = fetch_claim_lease_seconds(5)
    claimed(evaluation, "lamp", seconds_ago=lease + 1)
    claimed(evaluation, "desk", seconds_ago=lease + 1)
    with django_capture_on_commit_callbacks(execute=True):
        assert tasks.sweep_stalled_fetches() == 2
    assert sorted(server.queries()) == ["desk", "lamp"]
    evaluation.refresh_from_db()
    assert evaluation.status == Evaluation.Status.ACTIVE
    assert set(evaluation.keywords.values_list("fetch_status", flat=True)) == {"fetched"}
    assert snapshot_rows(evaluation) == [(text, p) for text in ("desk", "lamp")
                                         for p in (1, 2, 3)]
    # Nothing lapsed any more: the next sweep finds nothing.
    with django_capture_on_commit_callbacks(execute=True):
        assert tasks.sweep_stalled_fetches() == 0


def test_the_sweep_leaves_a_paused_evaluations_claims(server, django_capture_on_commit_callbacks):
    evaluation = fetching(server, ["lamp"])
    claimed(evaluation, "lamp", seconds_ago=fetch_claim_lease_seconds(5) + 1)
    lifecycle.evaluation_pause(evaluation=evaluation)
    with django_capture_on_commit_callbacks(execute=True):
        assert tasks.sweep_stalled_fetches() == 0
    assert server.received == []


def test_pause_then_start_reclaims_a_dead_tasks_keywords_at_once(
        server, django_capture_on_commit_callbacks):
    """After a worker died, its claims are young; pausing and starting again must not wait
    for them to lapse."""
    evaluation = fetching(server, ["lamp", "desk"])
    claimed(evaluation, "lamp", seconds_ago=1)
    lifecycle.evaluation_pause(evaluation=evaluation)
    with django_capture_on_commit_callbacks(execute=True):
        lifecycle.evaluation_start(evaluation=evaluation)
    evaluation.refresh_from_db()
    assert evaluation.status == Evaluation.Status.ACTIVE
    assert sorted(server.queries()) == ["desk", "lamp"]
    assert snapshot_rows(evaluation) == [(text, p) for text in ("desk", "lamp")
                                         for p in (1, 2, 3)]


def test_a_redelivered_task_finds_its_keywords_done_and_does_nothing(
        server, django_capture_on_commit_callbacks):
    evaluation = fetchable_evaluation(url=server.url, keywords=["lamp", "desk"])
    with django_capture_on_commit_callbacks(execute=True):
        lifecycle.evaluation_start(evaluation=evaluation)
    before = snapshot_rows(evaluation)
    ids = list(evaluation.keywords.values_list("pk", flat=True))
    Evaluation.objects.filter(pk=evaluation.pk).update(status=Evaluation.Status.FETCHING)
    assert tasks.fetch_keywords.run(evaluation.pk, ids) == 0
    assert len(server.received) == 2
    assert snapshot_rows(evaluation) == before
    evaluation.refresh_from_db()
    assert evaluation.status == Evaluation.Status.ACTIVE


def results(text: str) -> FetchResult:
    return FetchResult(status_code=200, documents=[
        Document(doc_id=f"{text}-{n}", name=f"{text} {n}", image="", fields={})
        for n in (1, 2)])


def test_a_task_whose_claim_lapsed_and_was_taken_over_stores_nothing(server):
    """Two tasks fetched one keyword: the first claim lapsed and a second task took it.
    Only the claim's holder stores; the other's answer and its clean-up are dropped."""
    evaluation = fetching(server, ["lamp"])
    keyword = Keyword.objects.get(evaluation=evaluation)
    first = fetch_services.keyword_fetch_claim(keyword_id=keyword.pk, lease_seconds=60)
    assert first is not None
    assert fetch_services.keyword_fetch_claim(keyword_id=keyword.pk, lease_seconds=60) is None
    Keyword.objects.filter(pk=keyword.pk).update(fetch_claimed_at=first - timedelta(seconds=61))
    lapsed = first - timedelta(seconds=61)
    second = fetch_services.keyword_fetch_claim(keyword_id=keyword.pk, lease_seconds=60)
    assert second is not None and second != lapsed

    assert fetch_services.keyword_fetch_store(keyword_id=keyword.pk, claimed_at=lapsed,
                                              result=results("lamp")) is None
    fetch_services.keyword_fetch_fail(keyword_ids=[keyword.pk], claimed_at=lapsed,
                                      error="the first task stopped")
    keyword.refresh_from_db()
    assert (keyword.fetch_status, keyword.fetch_claimed_at) == ("pending", second)
    assert fetch_services.keyword_fetch_store(keyword_id=keyword.pk, claimed_at=second,
                                              result=results("lamp")) is not None
    assert fetch_services.keyword_fetch_store(keyword_id=keyword.pk, claimed_at=second,
                                              result=results("lamp")) is None
    assert snapshot_rows(evaluation) == [("lamp", 1), ("lamp", 2)]
