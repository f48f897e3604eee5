"""A schedule's verdict rule names segments and traffic weighting: stored in its columns,
through the service, the API and the form, read back the same, and judging its runs
(their verdict, and the gate's default for a run)."""

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse
from rest_framework.test import APIClient

from metrics.reports.verdicts import gate_baseline_and_rule
from metrics_engine.verdicts import VerdictRule
from schedules import services as schedule_services
from schedules.models import Schedule
from schedules.verdicts import run_own_rule, schedule_run_verdict
from tests.schedules.builders import model_and_set, run_of, schedule_of

pytestmark = pytest.mark.django_db


def test_the_rule_round_trips_through_the_service(personas):
    schedule = schedule_of(personas.team, personas.lead, segments=[" Tail", "lang:DE", "tail"],
                           weighted=True)
    schedule.refresh_from_db()
    # Cleaned as tags are (lower case, trimmed), in the order given, each once.
    assert (schedule.segments, schedule.weighted) == (["tail", "lang:de"], True)
    run = run_of(schedule, hours_ago=1)
    assert run_own_rule(run.evaluation).rule == VerdictRule(segments=("tail", "lang:de"),
                                                            weighted=True)
    schedule_services.schedule_update(schedule=schedule, segments=[], weighted=False)
    schedule.refresh_from_db()
    assert (schedule.segments, schedule.weighted) == ([], False)
    assert run_own_rule(run.evaluation).rule == VerdictRule()


def test_a_schedule_made_before_has_no_segments_and_no_weighting(personas):
    schedule = schedule_of(personas.team, personas.lead)
    assert (schedule.segments, schedule.weighted) == ([], False)


@pytest.mark.parametrize(("fields", "field", "words"), [
    ({"segments": ["x" * 51]}, "segments", "longer than 50 characters"),
    ({"segments": [""]}, "segments", "item 0: a tag, not an empty text."),
    ({"segments": "tail"}, "segments", "A list of tags."),
    ({"segments": [f"t{n}" for n in range(21)]}, "segments", "a rule names at most 20"),
    ({"weighted": "yes"}, "weighted", "True or false."),
])
def test_a_bad_rule_is_refused_by_name_and_nothing_is_saved(personas, fields, field, words):
    with pytest.raises(ValidationError) as excinfo:
        schedule_of(personas.team, personas.lead, **fields)
    assert any(words in message for message in excinfo.value.message_dict[field])
    assert not Schedule.objects.exists()


def test_a_runs_verdict_is_judged_by_the_schedules_segments_and_weighting(personas):
    # The first run has nothing to compare with: undecided, stored with the rule it was
    # judged by.
    schedule = schedule_of(personas.team, personas.lead, segments=["tail"], weighted=True)
    run = run_of(schedule, hours_ago=1)
    verdict = schedule_run_verdict(run=run, evaluation=run.evaluation)
    assert (verdict.verdict, verdict.rule["segments"], verdict.rule["weighted"]) == (
        "undecided", ["tail"], True)
    assert verdict.rule_text.endswith("; segments tail; weighted by traffic too")


def test_the_gate_on_a_run_defaults_to_the_schedules_segments_unless_given(personas):
    schedule = schedule_of(personas.team, personas.lead, segments=["tail"], weighted=True)
    run = run_of(schedule, hours_ago=1)
    other = run_of(schedule, hours_ago=2)
    _, rule = gate_baseline_and_rule(evaluation=run.evaluation,
                                     baseline_id=other.evaluation_id, rule_fields={})
    assert (rule.segments, rule.weighted) == (("tail",), True)
    _, rule = gate_baseline_and_rule(
        evaluation=run.evaluation, baseline_id=other.evaluation_id,
        rule_fields={"segments": ["Head"], "weighted": False, "threshold": None})
    assert (rule.segments, rule.weighted) == (("head",), False)


# --- the API -------------------------------------------------------------------------------


def api_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def body(search_model, query_set, **changes) -> dict:
    return {"name": "Nightly", "model": search_model.pk, "query_set": query_set.pk,
            "scale": "graded", "strategy": 1, "metrics": [{"code": "ndcg@10"}],
            "interval_minutes": 60, "baseline": "previous", **changes}


def test_the_api_creates_reads_and_changes_the_rule(personas):
    model, query_set = model_and_set(personas.team, personas.lead)
    client = api_for(personas.lead)
    response = client.post(reverse("schedules_api:schedules"),
                           body(model, query_set, segments=["tail", "lang:de"], weighted=True),
                           format="json")
    assert response.status_code == 201, response.json()
    assert (response.json()["segments"], response.json()["weighted"]) == (
        ["tail", "lang:de"], True)
    schedule = Schedule.objects.get()
    url = reverse("schedules_api:schedule", args=[schedule.pk])
    assert client.get(url).json()["segments"] == ["tail", "lang:de"]
    response = client.patch(url, {"segments": ["head"]}, format="json")
    assert (response.json()["segments"], response.json()["weighted"]) == (["head"], True)
    response = client.patch(url, {"weighted": False}, format="json")
    assert (response.json()["segments"], response.json()["weighted"]) == (["head"], False)


@pytest.mark.parametrize(("changes", "field"), [
    ({"segments": "tail"}, "segments"),
    ({"segments": [""]}, "segments"),
    ({"segments": ["x" * 51]}, "segments"),
    ({"segments": [f"t{n}" for n in range(21)]}, "segments"),
    ({"weighted": "maybe"}, "weighted"),
])
def test_a_bad_rule_is_a_400_that_names_it_and_nothing_is_saved(personas, changes, field):
    model, query_set = model_and_set(personas.team, personas.lead)
    response = api_for(personas.lead).post(reverse("schedules_api:schedules"),
                                           body(model, query_set, **changes), format="json")
    assert response.status_code == 400
    assert list(response.json()) == [field]
    assert not Schedule.objects.exists()


# --- the form and the page -----------------------------------------------------------------


def form_data(model, query_set, **changes) -> dict:
    return {"name": "Nightly", "model": model.pk, "query_set": query_set.pk,
            "scale": "graded", "strategy": 1, "metrics": "ndcg@10",
            "interval_minutes": "60", "cron": "", "time_zone": "UTC", "deadline_hours": 24,
            "baseline": "first", "min_coverage": "80", "threshold": "", "keep_runs": 10,
            **changes}


def test_the_form_takes_tags_separated_by_a_bar_and_shows_them_again(client, personas):
    model, query_set = model_and_set(personas.team, personas.lead)
    client.force_login(personas.lead)
    response = client.post(reverse("schedules:schedule_create"),
                           form_data(model, query_set, segments=" tail | Lang:DE |",
                                     weighted="on"))
    assert response.status_code == 302
    schedule = Schedule.objects.get()
    assert (schedule.segments, schedule.weighted) == (["tail", "lang:de"], True)
    form = client.get(reverse("schedules:schedule_edit", args=[schedule.pk])).context["form"]
    assert (form["segments"].value(), form["weighted"].value()) == ("tail | lang:de", True)
    page = client.get(reverse("schedules:schedule_detail", args=[schedule.pk])).content.decode()
    assert ("Judged on every keyword and on the keywords tagged tail, lang:de, each also "
            "weighted by traffic; Holm across every comparison.") in page


def test_a_bad_segment_in_the_form_shows_on_its_field(client, personas):
    model, query_set = model_and_set(personas.team, personas.lead)
    client.force_login(personas.lead)
    response = client.post(reverse("schedules:schedule_create"),
                           form_data(model, query_set, segments="tail | " + "x" * 51))
    assert response.status_code == 400
    [error] = response.context["form"].errors["segments"]
    assert error.startswith("item 1: ") and "longer than 50 characters" in error
    assert not Schedule.objects.exists()
