"""A team's own scales are known wherever a transformer or a metric reads scales: a
transformer from a built-in to a team scale leaves the team's recomputes running, and a
configuration that would stop every recompute is refused when it is saved."""

import pytest
from django.test import Client
from rest_framework.test import APIClient

from evaluations.models import EvaluationMetric
from judgments.models import Scale, Transformer
from judgments.scale_writes import scale_create, transformer_save
from notifications.models import Event, Notification
from tests.metrics.builders import build_evaluation, set_grades, slot
from tests.recompute_state import mean_of, state_of
from tests.searchtweak.factories import UserFactory

pytestmark = pytest.mark.django_db(transaction=True)

FIVE = {str(g): {"label": str(g), "color": "#5b6675"} for g in range(1, 6)}


def fivea(team) -> Scale:
    return scale_create(team=team, code="fivea", name="Five A", lo=1, hi=5,
                        labels=FIVE)


def client_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_a_transformer_to_a_team_scale_leaves_graded_recomputes_running(personas):
    fivea(personas.team)
    response = client_for(personas.admin).post("/api/v1/transformers/", {
        "team": personas.team.pk, "source": "graded", "target": "fivea",
        "mapping": {"0": 1, "1": 2, "2": 4, "3": 5}}, format="json")
    assert response.status_code == 201, response.json()
    evaluation = build_evaluation(team=personas.team, keywords={"lamp": ["a", "b"]},
                                  metrics=[("precision", 2, {})])
    set_grades([UserFactory(username="g0")], [(slot(evaluation, "lamp", 1), 3),
                                              (slot(evaluation, "lamp", 2), 0)])
    precision = EvaluationMetric.objects.get(evaluation=evaluation)
    assert state_of(evaluation).recompute_error == ""
    assert mean_of(precision).value == 0.5  # graded 3 and 0 as binary 1 and 0, over 2


def test_an_evaluation_on_a_team_scale_reads_its_transformer_to_another_team_scale(personas):
    fivea(personas.team)
    scale_create(team=personas.team, code="threeb", name="Three B", lo=0, hi=2,
                 labels={str(g): {"label": str(g)} for g in range(3)})
    transformer_save(team=personas.team, source="fivea", target="threeb",
                     mapping={"1": 0, "2": 0, "3": 1, "4": 2, "5": 2})
    transformer_save(team=personas.team, source="fivea", target="binary",
                     mapping={"1": 0, "2": 0, "3": 0, "4": 1, "5": 1})
    evaluation = build_evaluation(team=personas.team, scale="fivea",
                                  keywords={"lamp": ["a", "b", "c"]},
                                  metrics=[("precision", 3, {})])
    set_grades([UserFactory(username="g0")], [(slot(evaluation, "lamp", 1), 5),
                                              (slot(evaluation, "lamp", 2), 3),
                                              (slot(evaluation, "lamp", 3), 4)])
    assert state_of(evaluation).recompute_error == ""
    precision = EvaluationMetric.objects.get(evaluation=evaluation)
    assert mean_of(precision).value == pytest.approx(2 / 3)


def test_an_evaluation_may_override_a_transformer_to_a_team_scale(personas):
    fivea(personas.team)
    evaluation = build_evaluation(team=personas.team, keywords={"lamp": ["a"]},
                                  metrics=[("precision", 1, {})], status="pending")
    response = client_for(personas.lead).patch(
        f"/api/v1/evaluations/{evaluation.pk}/",
        {"transformers": {"graded->fivea": {"0": 1, "1": 2, "2": 3, "3": 5}}}, format="json")
    assert response.status_code == 200, response.json()
    evaluation.refresh_from_db()
    assert evaluation.transformers == {"graded->fivea": {"0": 1, "1": 2, "2": 3, "3": 5}}
    response = client_for(personas.lead).patch(
        f"/api/v1/evaluations/{evaluation.pk}/",
        {"transformers": {"graded->fivea": {"0": 1, "1": 2, "2": 3, "3": 6}}}, format="json")
    assert response.status_code == 400
    assert "6" in str(response.json()["transformers"])


def fivea_evaluation(personas):
    """An evaluation on the team's 1..5 scale whose precision reads fivea -> binary."""
    fivea(personas.team)
    transformer = transformer_save(
        team=personas.team, source="fivea", target="binary",
        mapping={"1": 0, "2": 0, "3": 0, "4": 1, "5": 1})
    evaluation = build_evaluation(team=personas.team, scale="fivea", keywords={"lamp": ["a"]},
                                  metrics=[("precision", 1, {})])
    evaluation.name = "Lamps"
    evaluation.save(update_fields=["name"])
    return evaluation, transformer


def test_deleting_a_transformer_a_metric_reads_is_refused_naming_the_field(personas):
    evaluation, transformer = fivea_evaluation(personas)
    response = client_for(personas.admin).delete(f"/api/v1/transformers/{transformer.pk}/")
    assert response.status_code == 400
    assert "Lamps" in response.json()["transformer"][0]
    assert Transformer.objects.filter(pk=transformer.pk).exists()

    set_grades([UserFactory(username="g0")], [(slot(evaluation, "lamp", 1), 4)])
    assert state_of(evaluation).recompute_error == ""
    assert mean_of(EvaluationMetric.objects.get(evaluation=evaluation)).value == 1.0


def test_the_scales_page_refuses_deleting_a_transformer_a_metric_reads(personas, client):
    _, transformer = fivea_evaluation(personas)
    client.force_login(personas.admin)
    response = client.post(f"/transformers/{transformer.pk}/delete/", follow=True)
    assert response.status_code == 200
    body = response.content.decode()
    assert "reads grades through fivea-&gt;binary" in body
    assert Transformer.objects.filter(pk=transformer.pk).exists()


def test_a_transformer_no_metric_needs_is_deleted(personas):
    fivea(personas.team)
    transformer = transformer_save(
        team=personas.team, source="graded", target="fivea",
        mapping={"0": 1, "1": 2, "2": 4, "3": 5})
    build_evaluation(team=personas.team, keywords={"lamp": ["a"]}, metrics=[("precision", 1, {})])
    response = client_for(personas.admin).delete(f"/api/v1/transformers/{transformer.pk}/")
    assert response.status_code == 204
    assert not Transformer.objects.exists()


def test_a_scales_range_cannot_change_under_a_transformer_that_maps_it(personas):
    scale = fivea(personas.team)
    transformer_save(team=personas.team, source="graded", target="fivea",
                     mapping={"0": 1, "1": 2, "2": 4, "3": 5})
    response = client_for(personas.admin).patch(
        f"/api/v1/scales/{scale.pk}/",
        {"hi": 3, "labels": {str(g): {"label": str(g)} for g in range(1, 4)}}, format="json")
    assert response.status_code == 400
    assert "graded->fivea" in response.json()["hi"][0]
    scale.refresh_from_db()
    assert (scale.lo, scale.hi) == (1, 5)


def test_a_recompute_that_cannot_run_tells_the_leads_once(personas):
    evaluation, _ = fivea_evaluation(personas)
    # A stored override the save would refuse today (grade 5 unmapped): every run fails.
    type(evaluation).objects.filter(pk=evaluation.pk).update(
        transformers={"fivea->binary": {"1": 0, "2": 0, "3": 0, "4": 1}})
    grader = UserFactory(username="g0")
    set_grades([grader], [(slot(evaluation, "lamp", 1), 4)])
    set_grades([grader], [(slot(evaluation, "lamp", 1), 5)])
    error = state_of(evaluation).recompute_error
    assert error == "transformers.fivea->binary: grade 5 is not mapped"
    told = Notification.objects.filter(event=Event.RECOMPUTE_FAILED)
    assert sorted(told.values_list("user__username", flat=True)) == ["admin", "lead", "owner"]
    assert told.first().text == f"The metrics of “Lamps” could not be computed: {error}"
    assert told.first().url == f"/dashboard/evaluations/{evaluation.pk}/"

    page = Client()
    page.force_login(personas.lead)
    body = page.get(f"/dashboard/evaluations/{evaluation.pk}/").content.decode()
    assert f"Metric recompute failed: {error}".replace(">", "&gt;") in body
