"""A metric on a built-in scale that a team's own scale has no transformer to is refused
when the evaluation is saved through the API (create and PATCH), with a 400 naming
`metrics`, instead of at Start."""

import pytest
from rest_framework.test import APIClient

from evaluations.models import Evaluation, EvaluationMetric
from judgments.scale_writes import scale_create, transformer_save
from tests.evaluations.factories import SearchModelFactory

pytestmark = pytest.mark.django_db

NDCG_D_MISSING = (
    "nDCG@10 (detail) needs grades on the detail scale: an admin must define a transformer "
    "from 'Five grades (1..5)' to detail under Scales (or give this evaluation one in its "
    "transformer overrides).")


FIVE_LABELS = {str(g): {"label": label, "color": "#777777"} for g, label in enumerate(
    ["bad", "poor", "fair", "good", "great"], start=1)}


@pytest.fixture
def five(personas):
    return scale_create(team=personas.team, code="five", name="Five grades",
                        lo=1, hi=5, labels=FIVE_LABELS)


def client_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def payload(personas, **overrides) -> dict:
    model = SearchModelFactory(endpoint__team=personas.team)
    return {"name": "Spring", "model": model.pk, "scale": "five", "strategy": 1,
            "keywords": ["boots"], "metrics": [{"code": "ndcg", "k": 10},
                                               {"code": "ndcg_d", "k": 10}], **overrides}


def test_create_is_400_naming_metrics_and_stores_nothing(personas, five):
    response = client_for(personas.lead).post("/api/v1/evaluations/", payload(personas),
                                              format="json")
    assert response.status_code == 400
    assert response.json() == {"metrics": [NDCG_D_MISSING]}
    assert not Evaluation.objects.exists()


def test_create_succeeds_once_the_team_has_the_transformer(personas, five):
    transformer_save(team=personas.team, source="five", target="detail",
                     mapping={"1": 1, "2": 3, "3": 5, "4": 8, "5": 10})
    response = client_for(personas.lead).post("/api/v1/evaluations/", payload(personas),
                                              format="json")
    assert response.status_code == 201, response.json()
    assert [m["code"] for m in response.json()["metrics"]] == ["ndcg", "ndcg_d"]


def test_patch_of_metrics_is_400_naming_metrics_and_keeps_the_old_ones(personas, five):
    lead = client_for(personas.lead)
    created = lead.post("/api/v1/evaluations/",
                        payload(personas, metrics=[{"code": "ndcg", "k": 10}]), format="json")
    assert created.status_code == 201, created.json()
    url = f"/api/v1/evaluations/{created.json()['id']}/"
    response = lead.patch(url, {"metrics": [{"code": "ndcg_d", "k": 10}]}, format="json")
    assert response.status_code == 400
    assert response.json() == {"metrics": [NDCG_D_MISSING]}
    assert list(EvaluationMetric.objects.values_list("code", "k")) == [("ndcg", 10)]


def test_patch_adding_the_evaluations_own_transformer_lets_the_metric_in(personas, five):
    lead = client_for(personas.lead)
    created = lead.post("/api/v1/evaluations/",
                        payload(personas, metrics=[{"code": "ndcg", "k": 10}]), format="json")
    url = f"/api/v1/evaluations/{created.json()['id']}/"
    response = lead.patch(url, {"metrics": [{"code": "ndcg_d", "k": 10}], "transformers": {
        "five->detail": {"1": 1, "2": 3, "3": 5, "4": 8, "5": 10}}}, format="json")
    assert response.status_code == 200, response.json()
    assert list(EvaluationMetric.objects.values_list("code", "k")) == [("ndcg_d", 10)]
