"""Failed fetches are visible (page, list, API) and retried on request, against a real
HTTP server on 127.0.0.1 that fails, then heals."""

import threading

import pytest
from rest_framework.test import APIClient

from evaluations import selectors
from evaluations.models import Evaluation, Keyword, Snapshot
from evaluations.services import lifecycle
from tests.evaluations.factories import fetchable_evaluation
from tests.evaluations.servers import Reply, hits, running_server

pytestmark = pytest.mark.django_db

KEYWORDS = ["red shoes", "blue hat", "green scarf"]


@pytest.fixture(autouse=True)
def _fast_retries(settings):
    settings.FETCH_RETRY_BACKOFF_MS = 1


@pytest.fixture
def healthy():
    return threading.Event()


@pytest.fixture
def server(healthy):
    with running_server() as server:
        server.handler = lambda request: Reply(body=hits(request.query["q"][0])) \
            if healthy.is_set() else Reply(status=500, body={"error": "index offline"})
        yield server


@pytest.fixture
def failed_evaluation(server, personas, django_capture_on_commit_callbacks) -> Evaluation:
    evaluation = fetchable_evaluation(url=server.url, keywords=KEYWORDS, team=personas.team)
    with django_capture_on_commit_callbacks(execute=True):
        lifecycle.evaluation_start(evaluation=evaluation)
    evaluation.refresh_from_db()
    return evaluation


def api_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def statuses(evaluation) -> set[str]:
    return set(evaluation.keywords.values_list("fetch_status", flat=True))


def test_an_evaluation_whose_keywords_all_failed_is_not_healthy(failed_evaluation):
    assert failed_evaluation.status == Evaluation.Status.ACTIVE
    assert statuses(failed_evaluation) == {"failed"}
    progress = selectors.fetch_progress(evaluation=failed_evaluation)
    assert (progress.failed, progress.total, progress.all_failed) == (3, 3, True)
    errors = selectors.fetch_errors(evaluation=failed_evaluation)
    assert [(e.error, e.keyword, e.keyword_count) for e in errors] == [
        ("HTTP 500 from the endpoint (after 4 attempts)", "red shoes", 3)]


def test_fetch_errors_lists_the_first_distinct_errors_in_keyword_order(personas):
    evaluation = fetchable_evaluation(url="http://127.0.0.1:9", team=personas.team,
                                      keywords=[f"k{n}" for n in range(9)])
    for keyword in evaluation.keywords.all():
        error = f"error {keyword.position % 7}" if keyword.position != 1 else ""
        Keyword.objects.filter(pk=keyword.pk).update(
            fetch_status="fetched" if keyword.position == 1 else "failed", fetch_error=error)
    errors = selectors.fetch_errors(evaluation=evaluation)
    # Positions 2..9: errors 2,3,4,5,6,0,1,2 — five distinct ones, the first five met.
    assert [(e.error, e.keyword, e.keyword_count) for e in errors] == [
        ("error 2", "k1", 2), ("error 3", "k2", 1), ("error 4", "k3", 1),
        ("error 5", "k4", 1), ("error 6", "k5", 1)]
    assert not selectors.fetch_progress(evaluation=evaluation).all_failed


def test_the_page_shows_the_failures_and_a_retry_button(client, personas, failed_evaluation):
    client.force_login(personas.lead)
    page = client.get(f"/evaluations/{failed_evaluation.pk}/").content.decode()
    assert "Fetch failed" in page
    assert "3 of 3 keywords failed" in page
    assert "HTTP 500 from the endpoint (after 4 attempts)" in page
    assert "“red shoes” and 2 more" in page
    assert f'action="/evaluations/{failed_evaluation.pk}/retry-failed/"' in page
    assert "Retry failed keywords" in page


def test_a_grader_sees_the_failures_but_no_retry_button(client, personas, failed_evaluation):
    client.force_login(personas.grader)
    page = client.get(f"/evaluations/{failed_evaluation.pk}/").content.decode()
    assert "3 of 3 keywords failed" in page
    assert "Retry failed keywords" not in page


def test_a_partially_failed_evaluation_shows_the_count_and_stays_active(
        client, personas, server, django_capture_on_commit_callbacks):
    server.handler = lambda request: Reply(status=500) if request.query["q"][0] == "blue hat" \
        else Reply(body=hits(request.query["q"][0]))
    evaluation = fetchable_evaluation(url=server.url, keywords=KEYWORDS, team=personas.team)
    with django_capture_on_commit_callbacks(execute=True):
        lifecycle.evaluation_start(evaluation=evaluation)
    client.force_login(personas.lead)
    page = client.get(f"/evaluations/{evaluation.pk}/").content.decode()
    assert "1 of 3 keywords failed" in page
    assert "Some keywords failed" in page
    assert "Fetch failed" not in page and '>Active</span>' in page


def test_the_list_flags_an_evaluation_whose_keywords_all_failed(client, personas,
                                                                failed_evaluation):
    client.force_login(personas.grader)
    page = client.get("/evaluations/").content.decode()
    assert '<span class="status status-failed">Fetch failed</span>' in page
    assert "0/3 <span class=\"error\">(3 failed)</span>" in page


def test_the_api_exposes_the_failure_counts_and_first_errors(personas, failed_evaluation):
    body = api_for(personas.grader).get(f"/api/v1/evaluations/{failed_evaluation.pk}/").json()
    assert body["status"] == "active"
    assert body["fetch"] == {
        "total": 3, "fetched": 0, "failed": 3, "pending": 0, "percent": 100, "all_failed": True,
        "errors": [{"error": "HTTP 500 from the endpoint (after 4 attempts)",
                    "keyword": "red shoes", "keyword_count": 3}]}
    listed = api_for(personas.grader).get("/api/v1/evaluations/").json()["results"]
    assert [(e["id"], e["fetch"]["failed"], e["fetch"]["all_failed"]) for e in listed] == [
        (failed_evaluation.pk, 3, True)]


def test_retrying_on_the_page_fetches_the_failed_keywords_from_the_healed_server(
        client, personas, failed_evaluation, healthy, server,
        django_capture_on_commit_callbacks):
    healthy.set()
    server.received.clear()
    client.force_login(personas.lead)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(f"/evaluations/{failed_evaluation.pk}/retry-failed/")
    assert response.status_code == 302
    assert response.url == f"/evaluations/{failed_evaluation.pk}/"
    failed_evaluation.refresh_from_db()
    assert failed_evaluation.status == Evaluation.Status.ACTIVE
    assert statuses(failed_evaluation) == {"fetched"}
    assert sorted(server.queries()) == sorted(KEYWORDS)
    assert Snapshot.objects.filter(keyword__evaluation=failed_evaluation).count() == 9
    page = client.get(response.url).content.decode()
    assert "Fetching the failed keywords again." in page
    assert "keywords failed" not in page and "Fetch failed" not in page


def test_retrying_through_the_api_fetches_them_and_a_second_retry_changes_nothing(
        personas, failed_evaluation, healthy, server, django_capture_on_commit_callbacks):
    healthy.set()
    api = api_for(personas.lead)
    url = f"/api/v1/evaluations/{failed_evaluation.pk}/retry-failed/"
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post(url)
    assert response.status_code == 200
    # The answer is written before commit; the fetch runs once the request commits.
    assert (response.json()["status"], response.json()["fetch"]["pending"]) == ("fetching", 3)
    detail = api.get(f"/api/v1/evaluations/{failed_evaluation.pk}/").json()
    assert detail["status"] == "active"
    assert (detail["fetch"]["fetched"], detail["fetch"]["failed"]) == (3, 0)
    assert detail["fetch"]["errors"] == []
    server.received.clear()
    with django_capture_on_commit_callbacks(execute=True):
        again = api.post(url)
    assert again.status_code == 200 and again.json()["fetch"]["fetched"] == 3
    assert server.received == []
    assert Snapshot.objects.filter(keyword__evaluation=failed_evaluation).count() == 9


@pytest.mark.django_db(transaction=True)
def test_a_retry_against_a_still_failing_server_reports_them_failed_again(
        client, personas, failed_evaluation):
    # Committed for real, as without a broker: the fetch runs before the page answers.
    client.force_login(personas.lead)
    response = client.post(f"/evaluations/{failed_evaluation.pk}/retry-failed/", follow=True)
    page = response.content.decode()
    assert "3 keywords failed again." in page and "3 of 3 keywords failed" in page
    assert statuses(failed_evaluation) == {"failed"}


def test_retry_puts_failed_keywords_back_to_pending_and_enqueues_after_commit(
        personas, failed_evaluation, server):
    server.received.clear()
    lifecycle.evaluation_retry_failed(evaluation=failed_evaluation)  # on-commit never runs
    failed_evaluation.refresh_from_db()
    assert failed_evaluation.status == Evaluation.Status.FETCHING
    assert statuses(failed_evaluation) == {"pending"}
    assert set(failed_evaluation.keywords.values_list("fetch_error", flat=True)) == {""}
    assert server.received == []


@pytest.mark.parametrize("status", ["pending", "finished"])
def test_only_a_started_unfinished_evaluation_retries(personas, failed_evaluation, status):
    Evaluation.objects.filter(pk=failed_evaluation.pk).update(status=status)
    with pytest.raises(Exception) as raised:
        lifecycle.evaluation_retry_failed(evaluation=failed_evaluation)
    assert "status" in raised.value.message_dict
    assert statuses(failed_evaluation) == {"failed"}


def test_an_outsider_gets_404_and_nothing_is_retried(client, personas, failed_evaluation):
    client.force_login(personas.outsider)
    assert client.post(f"/evaluations/{failed_evaluation.pk}/retry-failed/").status_code == 404
    response = api_for(personas.outsider).post(
        f"/api/v1/evaluations/{failed_evaluation.pk}/retry-failed/")
    assert response.status_code == 404
    assert statuses(failed_evaluation) == {"failed"}


def test_a_grader_gets_403_and_nothing_is_retried(client, personas, failed_evaluation):
    client.force_login(personas.grader)
    assert client.post(f"/evaluations/{failed_evaluation.pk}/retry-failed/").status_code == 403
    response = api_for(personas.grader).post(
        f"/api/v1/evaluations/{failed_evaluation.pk}/retry-failed/")
    assert response.status_code == 403
    assert "lead" in response.json()["detail"].lower()
    assert statuses(failed_evaluation) == {"failed"}


def test_retry_answers_405_to_a_get(client, personas, failed_evaluation):
    client.force_login(personas.lead)
    assert client.get(f"/evaluations/{failed_evaluation.pk}/retry-failed/").status_code == 405
    response = api_for(personas.lead).get(
        f"/api/v1/evaluations/{failed_evaluation.pk}/retry-failed/")
    assert response.status_code == 405
    assert statuses(failed_evaluation) == {"failed"}


def test_retrying_a_paused_evaluation_is_a_400_naming_the_status(client, personas,
                                                                 failed_evaluation):
    lifecycle.evaluation_pause(evaluation=failed_evaluation)
    response = api_for(personas.lead).post(
        f"/api/v1/evaluations/{failed_evaluation.pk}/retry-failed/")
    assert response.status_code == 400
    assert "Start it" in str(response.json()["status"])
    client.force_login(personas.lead)
    page = client.post(f"/evaluations/{failed_evaluation.pk}/retry-failed/", follow=True)
    assert "Only an active or fetching evaluation retries failed keywords" in \
        page.content.decode()
    failed_evaluation.refresh_from_db()
    assert failed_evaluation.status == Evaluation.Status.PENDING
    assert statuses(failed_evaluation) == {"failed"}
