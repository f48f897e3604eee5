"""The evaluation option "shuffle results" (position bias): set on the form and
the API, kept by clones, shown on the evaluation's page, refused with "show position"."""

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


def test_the_form_sets_shows_and_clears_it(client, personas):
    model = SearchModelFactory(endpoint__team=personas.team)
    client.force_login(personas.lead)
    client.post("/evaluations/new/", {**FORM, "model": model.pk, "shuffle_results": "on"})
    evaluation = Evaluation.objects.get(name="Spring")
    assert evaluation.shuffle_results is True
    page = client.get(f"/evaluations/{evaluation.pk}/").content.decode()
    assert ('data-testid="results-order">Shuffled per grader (engine position hidden)</dd>'
            in page)
    assert 'id="id_shuffle_results" checked' in client.get(
        f"/evaluations/{evaluation.pk}/edit/").content.decode()
    client.post(f"/evaluations/{evaluation.pk}/edit/", {**FORM, "model": model.pk})
    evaluation.refresh_from_db()
    assert evaluation.shuffle_results is False
    assert 'data-testid="results-order">Engine order</dd>' in client.get(
        f"/evaluations/{evaluation.pk}/").content.decode()


def test_the_form_refuses_it_with_show_position_and_creates_nothing(client, personas):
    model = SearchModelFactory(endpoint__team=personas.team)
    client.force_login(personas.lead)
    response = client.post("/evaluations/new/", {**FORM, "model": model.pk,
                                                 "shuffle_results": "on",
                                                 "show_position": "on"})
    assert response.status_code == 400
    assert "turn off &quot;show position&quot; to shuffle" in response.content.decode()
    assert not Evaluation.objects.filter(name="Spring").exists()


def test_the_api_defaults_sets_and_validates_it(personas):
    model = SearchModelFactory(endpoint__team=personas.team)
    lead = api_for(personas.lead)
    body = {"name": "A", "model": model.pk, "scale": "graded", "strategy": 1,
            "keywords": ["boots"], "metrics": [{"code": "ndcg", "k": 10}]}
    created = lead.post("/api/v1/evaluations/", body, format="json").json()
    assert created["shuffle_results"] is False
    url = f"/api/v1/evaluations/{created['id']}/"
    assert lead.patch(url, {"shuffle_results": True}, format="json").json()[
        "shuffle_results"] is True
    refused = lead.patch(url, {"shuffle_results": "maybe"}, format="json")
    assert refused.status_code == 400 and list(refused.json()) == ["shuffle_results"]
    # Showing the engine's position would undo the shuffle: refused, naming the option.
    refused = lead.patch(url, {"show_position": True}, format="json")
    assert refused.status_code == 400 and list(refused.json()) == ["shuffle_results"]
    stored = Evaluation.objects.get(pk=created["id"])
    assert (stored.shuffle_results, stored.show_position) == (True, False)
    both = lead.post("/api/v1/evaluations/", {**body, "name": "B", "shuffle_results": True,
                                              "show_position": True}, format="json")
    assert both.status_code == 400 and list(both.json()) == ["shuffle_results"]
    assert not Evaluation.objects.filter(name="B").exists()
    shuffled = lead.post("/api/v1/evaluations/", {**body, "name": "C",
                                                  "shuffle_results": True}, format="json")
    assert shuffled.status_code == 201 and shuffled.json()["shuffle_results"] is True


def test_a_clone_keeps_it(personas):
    model = SearchModelFactory(endpoint__team=personas.team)
    evaluation = configuration.evaluation_create(
        team=personas.team, created_by=personas.lead, model=model, name="S", scale="graded",
        strategy=1, keywords=["boots"], metrics=[{"code": "ndcg", "k": 10, "params": {}}],
        shuffle_results=True)
    clone = configuration.evaluation_clone(evaluation=evaluation, created_by=personas.lead)
    assert clone.shuffle_results is True


def test_the_service_refuses_a_non_boolean(personas):
    model = SearchModelFactory(endpoint__team=personas.team)
    with pytest.raises(ValidationError) as raised:
        configuration.evaluation_create(
            team=personas.team, created_by=personas.lead, model=model, name="S",
            scale="graded", strategy=1, keywords=["boots"],
            metrics=[{"code": "ndcg", "k": 10, "params": {}}], shuffle_results="yes")
    assert list(raised.value.message_dict) == ["shuffle_results"]
    assert not Evaluation.objects.filter(name="S").exists()
