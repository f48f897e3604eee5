"""The schedules API: create (a 400 names the field, nothing saved), read,
change, pause and resume, delete, the runs with their latest verdicts, and who may."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from rest_framework.test import APIClient

from evaluations.models import Evaluation
from evaluations.query_sets import services as query_set_services
from schedules import firing
from schedules.models import Schedule, ScheduleRun
from tests.schedules.builders import model_and_set, run_of, schedule_of

pytestmark = pytest.mark.django_db

LIST = reverse("schedules_api:schedules")


def api_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def url(name: str, schedule) -> str:
    return reverse(f"schedules_api:{name}", args=[schedule.pk])


def body(search_model, query_set, **changes) -> dict:
    return {"name": "Nightly", "model": search_model.pk, "query_set": query_set.pk,
            "scale": "graded", "strategy": 1, "metrics": [{"code": "ndcg@10"}],
            "interval_minutes": 60, "baseline": "previous", **changes}


def test_a_lead_creates_a_schedule(personas):
    model, query_set = model_and_set(personas.team, personas.lead)
    response = api_for(personas.lead).post(
        LIST, body(model, query_set, min_coverage=0.8, threshold=0.02, keep_runs=5),
        format="json")
    assert response.status_code == 201, response.json()
    schedule = Schedule.objects.get()
    data = response.json()
    assert data["id"] == schedule.pk and data["team"] == personas.team.pk
    assert (data["model"], data["query_set"]) == (model.pk, query_set.pk)
    assert data["metrics"] == [{"code": "ndcg", "k": 10, "params": {}}]
    assert (data["interval_minutes"], data["cron"], data["when"]) == (60, "", "every hour")
    assert (data["baseline"], data["min_coverage"], data["threshold"], data["keep_runs"]) == (
        "previous", 0.8, 0.02, 5)
    assert (data["paused"], data["time_zone"], data["deadline_hours"]) == (False, "UTC", 24)
    assert data["next_due_at"] is not None
    assert schedule.created_by == personas.lead


@pytest.mark.parametrize(("changes", "field", "message"), [
    ({"interval_minutes": None, "cron": "*/5 * * * *"}, "cron", "the minimum is 15 minutes"),
    ({"interval_minutes": 10}, "interval_minutes", "The minimum interval is 15 minutes."),
    ({"baseline": "team"}, "baseline", "The team has no baseline"),
    ({"baseline": "latest"}, "baseline", "is not a valid choice"),
    ({"metrics": [{"code": "ndcg"}]}, "metrics", "required unless the code carries it"),
    ({"time_zone": "Nowhere/Else"}, "time_zone", "Unknown time zone"),
    ({"model": 999999}, "model", "No such search model in this team."),
])
def test_a_bad_field_is_a_400_that_names_it_and_nothing_is_saved(personas, changes, field,
                                                                 message):
    model, query_set = model_and_set(personas.team, personas.lead)
    response = api_for(personas.lead).post(LIST, body(model, query_set, **changes),
                                           format="json")
    assert response.status_code == 400
    assert message in str(response.json()[field]), response.json()
    assert Schedule.objects.count() == 0


@pytest.mark.parametrize(("timing", "when"), [
    ({"interval_minutes": 15}, "every 15 minutes"),
    ({"interval_minutes": None, "cron": "*/15 * * * *"}, "cron “*/15 * * * *” (UTC)"),
])
def test_a_schedule_every_15_minutes_exactly_is_created(personas, timing, when):
    model, query_set = model_and_set(personas.team, personas.lead)
    response = api_for(personas.lead).post(LIST, body(model, query_set, **timing),
                                           format="json")
    assert response.status_code == 201, response.json()
    assert response.json()["when"] == when


@pytest.mark.parametrize(("timing", "errors"), [
    ({"interval_minutes": 14}, {"interval_minutes": ["The minimum interval is 15 minutes."]}),
    ({"interval_minutes": None, "cron": "*/14 * * * *"}, {"cron": [
        "“*/14 * * * *” fires 14 minutes apart at times; the minimum is 15 minutes."]}),
])
def test_a_schedule_every_14_minutes_is_a_400(personas, timing, errors):
    model, query_set = model_and_set(personas.team, personas.lead)
    response = api_for(personas.lead).post(LIST, body(model, query_set, **timing),
                                           format="json")
    assert (response.status_code, response.json()) == (400, errors)
    assert Schedule.objects.count() == 0


def test_an_archived_query_set_is_a_400_on_query_set(personas):
    model, query_set = model_and_set(personas.team, personas.lead)
    query_set_services.query_set_archive(query_set=query_set)
    response = api_for(personas.lead).post(LIST, body(model, query_set), format="json")
    assert response.status_code == 400
    assert response.json()["query_set"] == ["Shoes is archived."]
    assert Schedule.objects.count() == 0


def test_another_teams_query_set_is_a_400_on_query_set(personas):
    model, _ = model_and_set(personas.team, personas.lead)
    _, foreign = model_and_set(personas.other_team, personas.outsider, name="Theirs")
    response = api_for(personas.lead).post(LIST, body(model, foreign), format="json")
    assert response.status_code == 400
    assert response.json()["query_set"] == ["No such query set in this team."]


def test_a_grader_may_not_create_and_learns_nothing_of_the_input(personas):
    model, query_set = model_and_set(personas.team, personas.lead)
    response = api_for(personas.grader).post(LIST, body(model, query_set, interval_minutes=1),
                                             format="json")
    assert response.status_code == 403
    assert Schedule.objects.count() == 0


def test_the_list_and_detail_show_the_callers_teams_only(personas):
    schedule = schedule_of(personas.team, personas.lead)
    theirs = schedule_of(personas.other_team, personas.outsider, name="Theirs")
    listed = api_for(personas.grader).get(LIST).json()
    assert [row["id"] for row in listed["results"]] == [schedule.pk]
    assert api_for(personas.grader).get(url("schedule", schedule)).json()["name"] == "Nightly"
    assert api_for(personas.grader).get(url("schedule", theirs)).status_code == 404


def test_patch_changes_fields_and_a_cron_replaces_the_interval(personas):
    schedule = schedule_of(personas.team, personas.lead)
    response = api_for(personas.lead).patch(
        url("schedule", schedule), {"cron": "30 7 * * *", "time_zone": "Europe/Berlin",
                                    "keep_runs": 3}, format="json")
    assert response.status_code == 200, response.json()
    data = response.json()
    assert (data["interval_minutes"], data["cron"], data["time_zone"], data["keep_runs"]) == (
        None, "30 7 * * *", "Europe/Berlin", 3)
    response = api_for(personas.lead).patch(url("schedule", schedule),
                                            {"interval_minutes": 90}, format="json")
    assert (response.json()["interval_minutes"], response.json()["cron"]) == (90, "")


def test_a_bad_patch_is_a_400_and_changes_nothing(personas):
    schedule = schedule_of(personas.team, personas.lead)
    response = api_for(personas.lead).patch(
        url("schedule", schedule), {"name": "Renamed", "interval_minutes": 5}, format="json")
    assert response.status_code == 400
    assert response.json() == {"interval_minutes": ["The minimum interval is 15 minutes."]}
    schedule.refresh_from_db()
    assert (schedule.name, schedule.interval_minutes) == ("Nightly", 60)


def test_pause_with_a_reason_and_resume(personas):
    schedule = schedule_of(personas.team, personas.lead)
    client = api_for(personas.lead)
    response = client.post(url("schedule_pause", schedule), {"reason": "reindexing"},
                           format="json")
    assert response.status_code == 200
    assert (response.json()["paused"], response.json()["paused_reason"]) == (
        True, "reindexing")
    response = client.post(url("schedule_resume", schedule))
    assert response.status_code == 200
    assert (response.json()["paused"], response.json()["paused_reason"]) == (False, "")
    schedule.refresh_from_db()
    assert schedule.paused_at is None


@pytest.mark.parametrize("name", ["schedule_pause", "schedule_resume"])
def test_a_grader_may_not_pause_or_resume(personas, name):
    schedule = schedule_of(personas.team, personas.lead)
    response = api_for(personas.grader).post(url(name, schedule))
    assert response.status_code == 403
    assert response.json() == {"detail": "This needs the lead role."}
    assert Schedule.objects.get().paused_at is None


def test_another_team_cannot_pause_it(personas):
    schedule = schedule_of(personas.team, personas.lead)
    assert api_for(personas.outsider).post(url("schedule_pause", schedule)).status_code == 404
    assert Schedule.objects.get().paused_at is None


def test_delete_keeps_the_runs(personas):
    schedule = schedule_of(personas.team, personas.lead)
    run = run_of(schedule, hours_ago=1)
    assert api_for(personas.grader).delete(url("schedule", schedule)).status_code == 403
    assert api_for(personas.lead).delete(url("schedule", schedule)).status_code == 204
    assert not Schedule.objects.exists()
    assert Evaluation.objects.filter(pk=run.evaluation_id).exists()


def test_the_runs_carry_their_latest_verdict(personas):
    schedule = schedule_of(personas.team, personas.lead)
    old = run_of(schedule, hours_ago=2, archived=True,
                 verdicts=[("improved", "Older."), ("regressed", "nDCG@10 fell by 0.12.")])
    new = run_of(schedule, hours_ago=1, status=Evaluation.Status.ACTIVE)
    response = api_for(personas.grader).get(url("schedule_runs", schedule))
    assert response.status_code == 200
    rows = response.json()["results"]
    assert [row["evaluation"] for row in rows] == [new.evaluation_id, old.evaluation_id]
    assert rows[0]["verdict"] is None and rows[0]["status"] == "active"
    assert not rows[0]["archived"] and rows[1]["archived"]
    assert rows[1]["verdict"]["verdict"] == "regressed"
    assert rows[1]["verdict"]["reasons"] == ["nDCG@10 fell by 0.12.", "ndcg@10: details"]
    assert rows[1]["verdict"]["baseline_name"] == "First run"
    assert rows[1]["name"] == old.evaluation.name and rows[1]["fetch_failed"] is False
    assert api_for(personas.outsider).get(url("schedule_runs", schedule)).status_code == 404


def test_a_fired_due_time_is_listed_as_a_run(personas):
    schedule = schedule_of(personas.team, personas.lead)
    run = firing.schedule_fire(schedule_id=schedule.pk, due_at=schedule.next_due_at)
    assert run is not None and ScheduleRun.objects.count() == 1
    rows = api_for(personas.lead).get(url("schedule_runs", schedule)).json()["results"]
    assert [row["evaluation"] for row in rows] == [run.evaluation_id]
    assert rows[0]["due_at"] is not None and rows[0]["deadline_at"] is not None


def test_the_runs_queries_do_not_grow_with_the_runs(personas):
    schedule = schedule_of(personas.team, personas.lead)
    client = api_for(personas.lead)

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert client.get(url("schedule_runs", schedule)).status_code == 200
        return len(captured)

    for hours in (1, 2):
        run_of(schedule, hours_ago=hours, verdicts=[("no_change", "Nothing moved.")])
    two = queries()
    for hours in range(3, 13):
        run_of(schedule, hours_ago=hours, verdicts=[("improved", "Better.")])
    assert queries() == two
