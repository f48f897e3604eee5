"""The evaluation option "gold rate": set on the form (as a
percentage) and the API (as a share), kept by clones, refused outside 0..0.5."""

import pytest
from django.core.exceptions import ValidationError
from rest_framework.test import APIClient

from evaluations.models import Evaluation
from evaluations.services import configuration
from tests.evaluations.factories import SearchModelFactory
from tests.evaluations.test_evaluation_options import FORM

pytestmark = pytest.mark.django_db


def test_the_form_sets_it_as_a_percentage_and_defaults_to_five(client, personas):
    model = SearchModelFactory(endpoint__team=personas.team)
    client.force_login(personas.lead)
    client.post("/evaluations/new/", {**FORM, "model": model.pk, "gold_rate": "10"})
    evaluation = Evaluation.objects.get(name="Spring")
    assert evaluation.gold_rate == pytest.approx(0.10)
    assert 'name="gold_rate" value="10.0"' in client.get(
        f"/evaluations/{evaluation.pk}/edit/").content.decode()
    # A post without the field (an older page) sets the default.
    client.post(f"/evaluations/{evaluation.pk}/edit/", {**FORM, "model": model.pk})
    evaluation.refresh_from_db()
    assert evaluation.gold_rate == pytest.approx(0.05)
    refused = client.post(f"/evaluations/{evaluation.pk}/edit/",
                          {**FORM, "model": model.pk, "gold_rate": "60"})
    assert refused.status_code == 400
    evaluation.refresh_from_db()
    assert evaluation.gold_rate == pytest.approx(0.05)


def _api_created(personas) -> tuple[APIClient, dict]:
    """A lead's API client and the evaluation they created through it with the defaults."""
    model = SearchModelFactory(endpoint__team=personas.team)
    lead = APIClient()
    lead.force_authenticate(personas.lead)
    body = {"name": "A", "model": model.pk, "scale": "graded", "strategy": 1,
            "keywords": ["boots"], "metrics": [{"code": "ndcg", "k": 10}]}
    return lead, lead.post("/api/v1/evaluations/", body, format="json").json()


def test_the_api_defaults_sets_and_validates_it(personas):
    lead, created = _api_created(personas)
    assert created["gold_rate"] == 0.05
    url = f"/api/v1/evaluations/{created['id']}/"
    assert lead.patch(url, {"gold_rate": 0}, format="json").json()["gold_rate"] == 0
    refused = lead.patch(url, {"gold_rate": 0.6}, format="json")
    assert refused.status_code == 400 and list(refused.json()) == ["gold_rate"]
    assert Evaluation.objects.get(pk=created["id"]).gold_rate == 0


def test_the_service_refuses_a_rate_off_its_range_and_a_clone_keeps_it(personas):
    model = SearchModelFactory(endpoint__team=personas.team)
    fields = dict(team=personas.team, created_by=personas.lead, model=model, name="S",
                  scale="graded", strategy=1, keywords=["boots"],
                  metrics=[{"code": "ndcg", "k": 10, "params": {}}])
    for bad in (-0.1, 0.51, True, "0.1"):
        with pytest.raises(ValidationError) as refused:
            configuration.evaluation_create(**fields, gold_rate=bad)
        assert list(refused.value.message_dict) == ["gold_rate"]
    evaluation = configuration.evaluation_create(**fields, gold_rate=0.2)
    clone = configuration.evaluation_clone(evaluation=evaluation, created_by=personas.lead)
    assert clone.gold_rate == 0.2


# --- a second grader where a grader is below the gold bar (judgments.adaptive LOW_GOLD) ---


def test_the_form_sets_the_second_grader_under_1_to_3_only(client, personas):
    model = SearchModelFactory(endpoint__team=personas.team)
    client.force_login(personas.lead)
    refused = client.post("/evaluations/new/", {**FORM, "model": model.pk, "strategy": "1",
                                                "second_grader_below_gold_bar": "on"})
    assert refused.status_code == 400
    assert "choose that strategy" in refused.content.decode()
    assert not Evaluation.objects.filter(name="Spring").exists()
    client.post("/evaluations/new/", {**FORM, "model": model.pk, "strategy": "13",
                                      "second_grader_below_gold_bar": "on"})
    evaluation = Evaluation.objects.get(name="Spring")
    assert evaluation.second_grader_below_gold_bar is True
    page = client.get(f"/evaluations/{evaluation.pk}/").content.decode()
    assert "a second grader where a grader is below the gold bar" in page
    clone = configuration.evaluation_clone(evaluation=evaluation, created_by=personas.lead)
    assert clone.second_grader_below_gold_bar is True


def test_the_api_sets_the_second_grader_and_names_the_field_when_refused(personas):
    lead, created = _api_created(personas)
    assert created["second_grader_below_gold_bar"] is False
    url = f"/api/v1/evaluations/{created['id']}/"
    refused = lead.patch(url, {"second_grader_below_gold_bar": True}, format="json")
    assert refused.status_code == 400
    assert list(refused.json()) == ["second_grader_below_gold_bar"]
    changed = lead.patch(url, {"strategy": 13, "second_grader_below_gold_bar": True},
                         format="json").json()
    assert (changed["strategy"], changed["second_grader_below_gold_bar"]) == (13, True)
