"""The evaluation's run form fits the judge picked: an LLM judge's has its cache and
budget, a clicks grader's shows what it learns from instead, says plainly that it costs
nothing, and a cache or budget sent for one is refused with nothing stored."""

from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError
from rest_framework.test import APIClient

from audit.models import AuditEvent
from behaviour import learning
from judges import runs
from judges.models import JudgeRun, JudgeRunItem
from tests.behaviour.clicks_data import evaluation_of, simulated_source
from tests.judges.run_builders import judge_of

pytestmark = pytest.mark.django_db

BLOCK = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "judge-run-start"}
ESTIMATE = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "run-estimate"}


@pytest.fixture
def setup(personas):
    simulated = simulated_source(personas.team)
    grader = learning.click_grader_create(team=personas.team, by=personas.admin,
                                          name="Clicks PBM", click_model="pbm",
                                          source=simulated.source, min_impressions=25)
    sage = judge_of(personas.team, name="Sage")
    return evaluation_of(personas.team, simulated), grader.judge, sage


@pytest.mark.parametrize("field, value", [("budget", "5.00"), ("refresh_cache", True)])
def test_the_api_refuses_a_budget_or_cache_for_a_clicks_grader_and_stores_nothing(
        personas, setup, field, value):
    evaluation, clicks, _sage = setup
    api = APIClient()
    api.force_authenticate(personas.lead)
    audits = AuditEvent.objects.count()
    response = api.post(f"/api/v1/evaluations/{evaluation.pk}/judge-runs/",
                        {"judge": clicks.pk, "mode": "shadow", field: value}, format="json")
    assert response.status_code == 400
    assert list(response.json()) == [field]
    assert "learns from clicks" in response.json()[field][0]
    assert (JudgeRun.objects.count(), JudgeRunItem.objects.count(),
            AuditEvent.objects.count()) == (0, 0, audits)


def test_the_api_takes_the_defaults_for_a_clicks_grader(personas, setup,
                                                        django_capture_on_commit_callbacks):
    evaluation, clicks, _sage = setup
    api = APIClient()
    api.force_authenticate(personas.lead)
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post(f"/api/v1/evaluations/{evaluation.pk}/judge-runs/",
                            {"judge": clicks.pk, "mode": "shadow", "budget": None,
                             "refresh_cache": False}, format="json")
    assert response.status_code == 201 and response.json()["budget"] is None


def test_the_service_refuses_both_at_once_naming_each(personas, setup):
    evaluation, clicks, _sage = setup
    with pytest.raises(ValidationError) as raised:
        runs.run_start(judge=clicks, evaluation=evaluation, mode="shadow",
                       started_by=personas.lead, refresh_cache=True, budget=Decimal("1"))
    assert sorted(raised.value.message_dict) == ["budget", "refresh_cache"]
    assert JudgeRun.objects.count() == 0
