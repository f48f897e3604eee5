"""Two options a lead sets per evaluation: show graders the position, finish when graded."""

import pytest
from rest_framework.test import APIClient

from evaluations.models import Evaluation
from tests.evaluations.factories import SearchModelFactory
from tests.judgments.builders import evaluation_with_slots

pytestmark = pytest.mark.django_db

FORM = {"name": "Spring", "description": "", "keywords": "green scarf", "scale": "graded",
        "strategy": "1", "metrics": "ndcg@10", "transformers": "", "tags": "",
        "guidelines": "", "reuse_grades": "none"}


def api_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_the_form_sets_and_clears_both_options(client, personas):
    model = SearchModelFactory(endpoint__team=personas.team)
    client.force_login(personas.lead)
    client.post("/evaluations/new/", {**FORM, "model": model.pk, "show_position": "on",
                                      "auto_finish": "on"})
    evaluation = Evaluation.objects.get(name="Spring")
    assert (evaluation.show_position, evaluation.auto_finish) == (True, True)
    page = client.get(f"/evaluations/{evaluation.pk}/edit/").content.decode()
    assert 'id="id_show_position" checked' in page
    assert 'id="id_auto_finish" checked' in page
    client.post(f"/evaluations/{evaluation.pk}/edit/", {**FORM, "model": model.pk})
    evaluation.refresh_from_db()
    assert (evaluation.show_position, evaluation.auto_finish) == (False, False)


def test_the_api_defaults_sets_and_validates_both_options(personas):
    model = SearchModelFactory(endpoint__team=personas.team)
    lead = api_for(personas.lead)
    body = {"name": "A", "model": model.pk, "scale": "graded", "strategy": 1,
            "keywords": ["boots"], "metrics": [{"code": "ndcg", "k": 10}]}
    created = lead.post("/api/v1/evaluations/", body, format="json").json()
    assert (created["show_position"], created["auto_finish"]) == (False, True)
    url = f"/api/v1/evaluations/{created['id']}/"
    changed = lead.patch(url, {"show_position": True}, format="json").json()
    assert (changed["show_position"], changed["auto_finish"]) == (True, True)
    refused = lead.patch(url, {"auto_finish": "maybe"}, format="json")
    assert refused.status_code == 400 and list(refused.json()) == ["auto_finish"]
    assert Evaluation.objects.get(pk=created["id"]).auto_finish is True


def test_graders_see_the_position_only_when_the_evaluation_shows_it(client, personas):
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=2)
    client.force_login(personas.grader)
    url = f"/grade/evaluations/{evaluation.pk}/"
    assert 'data-testid="position"' not in client.get(url).content.decode()
    api_for(personas.lead).patch(f"/api/v1/evaluations/{evaluation.pk}/",
                                 {"show_position": True}, format="json")
    assert "Position 1</span>" in client.get(url).content.decode()
