import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from evaluations.models import Keyword
from searchtweak.services import api_token_create
from tests.metrics.builders import build_evaluation, set_grades, slot
from tests.recompute_state import marks_set

pytestmark = pytest.mark.django_db


def api_as(user) -> APIClient:
    _, key = api_token_create(user=user, name="tests")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


@pytest.fixture
def evaluation(personas, django_capture_on_commit_callbacks):
    evaluation = build_evaluation(
        team=personas.team, keywords={"red shoes": ["a", "b"], "blue hat": ["c"]},
        metrics=[("precision", 2, {}), ("cg", 2, {})],
    )
    with django_capture_on_commit_callbacks(execute=True):
        set_grades([personas.grader], [(slot(evaluation, "red shoes", 1), 3),
                                       (slot(evaluation, "red shoes", 2), 0)])
    return evaluation


def test_keywords_come_with_their_metric_values(personas, evaluation):
    response = api_as(personas.grader).get(f"/api/v1/evaluations/{evaluation.pk}/keywords/")
    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 2
    first, second = body["results"]
    assert (first["text"], first["position"], first["snapshot_count"]) == ("red shoes", 1, 2)
    assert first["updating"] is False
    # Both results of red shoes are graded: their bounds are closed on the value.
    closed = {"bounds_exact": True}
    assert first["metrics"] == [
        {"code": "precision", "k": 2, "params": {}, "value": 0.5, "lower": 0.5, "upper": 0.5,
         **closed},
        {"code": "cg", "k": 2, "params": {}, "value": 3.0, "lower": 3.0, "upper": 3.0,
         **closed},
    ]
    # blue hat was never recomputed here (no fetch announced it): no value, no bounds yet.
    assert [(m["value"], m["lower"], m["upper"]) for m in second["metrics"]] == [
        (None, None, None), (None, None, None)]


def test_a_dirty_keyword_says_it_is_updating(personas, evaluation):
    marks_set(Keyword.objects.filter(evaluation=evaluation, text="blue hat"),
              version=1, dirty_since="2026-01-01T00:00:00Z")
    body = api_as(personas.lead).get(f"/api/v1/evaluations/{evaluation.pk}/keywords/").json()
    assert [row["updating"] for row in body["results"]] == [False, True]


def test_keywords_filter_by_status_and_search(personas, evaluation):
    Keyword.objects.filter(evaluation=evaluation, text="blue hat").update(
        fetch_status=Keyword.FetchStatus.FAILED, fetch_error="HTTP 500")
    client = api_as(personas.lead)
    url = f"/api/v1/evaluations/{evaluation.pk}/keywords/"
    failed = client.get(url, {"status": "failed"}).json()["results"]
    assert [(row["text"], row["fetch_error"]) for row in failed] == [("blue hat", "HTTP 500")]
    assert [row["text"] for row in client.get(url, {"search": "SHOES"}).json()["results"]] == [
        "red shoes"]
    response = client.get(url, {"status": "lost"})
    assert response.status_code == 400
    assert "status" in response.json()


def test_keywords_are_404_outside_the_team_and_401_anonymous(personas, evaluation):
    url = f"/api/v1/evaluations/{evaluation.pk}/keywords/"
    assert api_as(personas.outsider).get(url).status_code == 404
    assert APIClient().get(url).status_code == 401
    assert api_as(personas.grader).post(url, {}).status_code == 405


def test_the_keyword_list_query_count_does_not_grow_with_keywords(personas):
    def count_queries(keyword_count: int) -> int:
        evaluation = build_evaluation(
            team=personas.team,
            keywords={f"kw {keyword_count} {i}": ["a", "b"] for i in range(keyword_count)},
            metrics=[("precision", 2, {}), ("cg", 2, {})],
        )
        client = api_as(personas.lead)
        with CaptureQueriesContext(connection) as queries:
            response = client.get(f"/api/v1/evaluations/{evaluation.pk}/keywords/",
                                  {"page_size": 500})
        assert len(response.json()["results"]) == keyword_count
        return len(queries)

    assert count_queries(10) == count_queries(300)
