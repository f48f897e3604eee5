"""The evaluation option "grading order": set on the form and the API,
kept by clones, shown on the evaluation's page, refused with shuffled results."""

import pytest
from django.core.exceptions import ValidationError
from rest_framework.test import APIClient

from evaluations.models import Evaluation
from evaluations.services import configuration
from tests.evaluations.factories import SearchModelFactory
from tests.evaluations.test_evaluation_options import FORM

pytestmark = pytest.mark.django_db


def api_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_the_form_sets_shows_and_resets_it(client, personas):
    model = SearchModelFactory(endpoint__team=personas.team)
    client.force_login(personas.lead)
    client.post("/evaluations/new/", {**FORM, "model": model.pk, "grading_order": "decisive"})
    evaluation = Evaluation.objects.get(name="Spring")
    assert evaluation.grading_order == "decisive"
    page = client.get(f"/evaluations/{evaluation.pk}/").content.decode()
    assert 'data-testid="grading-order">Grade what decides first' in page
    assert '<option value="decisive" selected>' in client.get(
        f"/evaluations/{evaluation.pk}/edit/").content.decode()
    # A post without the field (an older page) keeps the default order.
    client.post(f"/evaluations/{evaluation.pk}/edit/", {**FORM, "model": model.pk})
    evaluation.refresh_from_db()
    assert evaluation.grading_order == "position"
    assert 'data-testid="grading-order">Keyword and position order</dd>' in client.get(
        f"/evaluations/{evaluation.pk}/").content.decode()


def test_the_form_refuses_it_with_shuffled_results_and_creates_nothing(client, personas):
    model = SearchModelFactory(endpoint__team=personas.team)
    client.force_login(personas.lead)
    response = client.post("/evaluations/new/", {**FORM, "model": model.pk,
                                                 "grading_order": "decisive",
                                                 "shuffle_results": "on"})
    assert response.status_code == 400
    assert "turn off shuffled results to use it" in response.content.decode()
    assert not Evaluation.objects.filter(name="Spring").exists()


def test_the_api_defaults_sets_and_validates_it(personas):
    model = SearchModelFactory(endpoint__team=personas.team)
    lead = api_for(personas.lead)
    body = {"name": "A", "model": model.pk, "scale": "graded", "strategy": 1,
            "keywords": ["boots"], "metrics": [{"code": "ndcg", "k": 10}]}
    created = lead.post("/api/v1/evaluations/", body, format="json").json()
    assert created["grading_order"] == "position"
    url = f"/api/v1/evaluations/{created['id']}/"
    assert lead.patch(url, {"grading_order": "decisive"}, format="json").json()[
        "grading_order"] == "decisive"
    refused = lead.patch(url, {"grading_order": "random"}, format="json")
    assert refused.status_code == 400 and list(refused.json()) == ["grading_order"]
    # Shuffling with it: refused, naming the grading order.
    refused = lead.patch(url, {"shuffle_results": True}, format="json")
    assert refused.status_code == 400 and list(refused.json()) == ["grading_order"]
    stored = Evaluation.objects.get(pk=created["id"])
    assert (stored.grading_order, stored.shuffle_results) == ("decisive", False)
    both = lead.post("/api/v1/evaluations/", {**body, "name": "B", "shuffle_results": True,
                                              "grading_order": "decisive"}, format="json")
    assert both.status_code == 400 and list(both.json()) == ["grading_order"]
    assert not Evaluation.objects.filter(name="B").exists()


def test_a_clone_keeps_it(personas):
    model = SearchModelFactory(endpoint__team=personas.team)
    evaluation = configuration.evaluation_create(
        team=personas.team, created_by=personas.lead, model=model, name="S", scale="graded",
        strategy=1, keywords=["boots"], metrics=[{"code": "ndcg", "k": 10, "params": {}}],
        grading_order="decisive")
    clone = configuration.evaluation_clone(evaluation=evaluation, created_by=personas.lead)
    assert clone.grading_order == "decisive"


def test_the_service_refuses_an_unknown_order(personas):
    model = SearchModelFactory(endpoint__team=personas.team)
    with pytest.raises(ValidationError) as raised:
        configuration.evaluation_create(
            team=personas.team, created_by=personas.lead, model=model, name="S",
            scale="graded", strategy=1, keywords=["boots"],
            metrics=[{"code": "ndcg", "k": 10, "params": {}}], grading_order="widest")
    assert list(raised.value.message_dict) == ["grading_order"]
    assert not Evaluation.objects.filter(name="S").exists()
