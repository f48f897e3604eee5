"""GET /api/v1/evaluations/{id}/metric-table/: the keyword metric table as CSV."""

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from tests.metrics.builders import build_evaluation, set_grades, slot

pytestmark = pytest.mark.django_db


def client_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def evaluation(personas, django_capture_on_commit_callbacks):
    evaluation = build_evaluation(
        team=personas.team, scale="graded", strategy=1,
        keywords={"laptop": ["d1", "d2"], "phone": ["p1"]},
        metrics=[("precision", 2, {}), ("ndcg", 2, {"ideal": "pool"})])
    with django_capture_on_commit_callbacks(execute=True):
        set_grades([personas.grader], [(slot(evaluation, "laptop", 1), 3),
                                       (slot(evaluation, "laptop", 2), 0)])
    return evaluation


def test_it_writes_one_line_per_keyword_with_empty_cells_for_null(personas, evaluation):
    response = client_for(personas.grader).get(
        f"/api/v1/evaluations/{evaluation.pk}/metric-table/", HTTP_ACCEPT="text/csv")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    assert response["X-SearchTweak-Partial"] == "true"
    assert response.content.decode().splitlines() == [
        "keyword,precision@2,ndcg@2[ideal=pool]", "laptop,0.5,1.0", "phone,,"]


def test_it_hides_other_teams_and_needs_credentials(personas, evaluation):
    url = f"/api/v1/evaluations/{evaluation.pk}/metric-table/"
    assert client_for(personas.owner).get(url).status_code == 200
    assert client_for(personas.outsider).get(url).status_code == 404
    assert APIClient().get(url).status_code == 401
    assert client_for(personas.owner).post(url).status_code == 405


def test_with_bounds_each_metric_is_followed_by_its_lower_upper_and_exactness(
        personas, evaluation):
    call_command("recompute_metrics", "--evaluation", str(evaluation.pk), "--quiet")
    response = client_for(personas.grader).get(
        f"/api/v1/evaluations/{evaluation.pk}/metric-table/?bounds=true", HTTP_ACCEPT="text/csv")
    assert response.status_code == 200
    # laptop is fully graded: its bounds are its values. phone's one result is ungraded:
    # P@2 counts judged positions only, so 0/1 (grade 0) .. 1/1 (grade 3); nDCG with the
    # pool ideal: 0 (a 0 gains nothing) .. 1 (its one document is the whole pool).
    lines = response.content.decode().splitlines()
    assert lines[0] == ("keyword,precision@2,precision@2 lower,precision@2 upper,"
                        "precision@2 exact,ndcg@2[ideal=pool],ndcg@2[ideal=pool] lower,"
                        "ndcg@2[ideal=pool] upper,ndcg@2[ideal=pool] exact")
    assert lines[1] == "laptop,0.5,0.5,0.5,true,1.0,1.0,1.0,true"
    assert lines[2] == "phone,,0.0,1.0,true,,0.0,1.0,true"


def test_a_bad_bounds_flag_is_a_400_naming_it(personas, evaluation):
    response = client_for(personas.grader).get(
        f"/api/v1/evaluations/{evaluation.pk}/metric-table/?bounds=maybe", HTTP_ACCEPT="text/csv")
    assert response.status_code == 400
    assert "bounds" in response.json()
