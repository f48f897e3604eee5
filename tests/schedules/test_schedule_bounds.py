"""Schedules are bounded and isolated: an interval from 15 minutes to one year, a cron of
five fields, a real IANA zone; a too-large number is a 400 or form error naming its field
(never a 404 or 500); and the tick fires each schedule in its own guard, so a stored
schedule whose next due time cannot be computed is paused with the reason, its leads are
told, and every other schedule still fires."""

from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.core.exceptions import ValidationError
from django.db import connection
from django.urls import reverse
from rest_framework.test import APIClient

from evaluations.models import Evaluation
from notifications.models import Event, Notification
from schedules import firing
from schedules import services as schedule_services
from schedules.models import Schedule, ScheduleRun
from tests.schedules.builders import model_and_set, schedule_of

pytestmark = pytest.mark.django_db

START = datetime(2026, 11, 26, 9, 0, tzinfo=UTC)
HUGE = 99999999999999999999  # beyond 64 bits
LIST = reverse("schedules_api:schedules")


def api_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def body(search_model, query_set, /, **changes) -> dict:
    return {"name": "Nightly", "model": search_model.pk, "query_set": query_set.pk,
            "scale": "graded", "strategy": 1, "metrics": [{"code": "ndcg@10"}],
            "interval_minutes": 60, "baseline": "previous", **changes}


def form_data(search_model, query_set, /, **changes) -> dict:
    return {"name": "Nightly", "model": search_model.pk, "query_set": query_set.pk,
            "scale": "graded", "strategy": 1, "metrics": "ndcg@10", "interval_minutes": "60",
            "cron": "", "time_zone": "UTC", "deadline_hours": 24, "baseline": "first",
            "min_coverage": "80", "threshold": "", "keep_runs": 10, **changes}


# --- the bounds at save -----------------------------------------------------------------------


def test_an_interval_of_one_year_is_accepted_and_one_minute_more_refused(personas):
    schedule = schedule_of(personas.team, personas.lead, interval_minutes=525_600)
    assert schedule.interval_minutes == 525_600 and schedule.when_text() == "every 365 days"
    with pytest.raises(ValidationError) as excinfo:
        schedule_services.schedule_update(schedule=schedule, interval_minutes=525_601)
    assert excinfo.value.message_dict == {
        "interval_minutes": ["The maximum interval is 525600 minutes (one year)."]}


@pytest.mark.parametrize("cron", ["0 6 * * 1 1", "0 0 6 * * *"])
def test_a_six_field_cron_is_refused(personas, cron):
    with pytest.raises(ValidationError) as excinfo:
        schedule_of(personas.team, personas.lead, interval_minutes=None, cron=cron)
    assert excinfo.value.message_dict["cron"] == [
        f"Not a cron expression: “{cron}” has 6 fields; write five: minute hour day month "
        "weekday (e.g. “0 6 * * 1-5”)."]
    assert not Schedule.objects.exists()


@pytest.mark.parametrize("zone", ["localtime", "Factory"])
def test_a_zone_that_is_not_a_place_is_refused(personas, zone):
    with pytest.raises(ValidationError) as excinfo:
        schedule_of(personas.team, personas.lead, interval_minutes=None, cron="0 6 * * *",
                    time_zone=zone)
    assert list(excinfo.value.message_dict) == ["time_zone"]
    assert "Unknown time zone" in excinfo.value.message_dict["time_zone"][0]


def test_a_real_zone_is_accepted(personas):
    schedule = schedule_of(personas.team, personas.lead, interval_minutes=None,
                           cron="0 6 * * *", time_zone="Europe/Berlin")
    assert schedule.time_zone == "Europe/Berlin"


@pytest.mark.parametrize(("changes", "field"), [
    ({"interval_minutes": HUGE}, "interval_minutes"),
    ({"interval_minutes": -HUGE}, "interval_minutes"),
    ({"interval_minutes": 2**31}, "interval_minutes"),
    ({"deadline_hours": HUGE}, "deadline_hours"),
    ({"deadline_hours": -1}, "deadline_hours"),
    ({"keep_runs": HUGE}, "keep_runs"),
    ({"strategy": HUGE}, "strategy"),
    ({"model": HUGE}, "model"),
    ({"query_set": -1}, "query_set"),
    ({"team": HUGE}, "team"),
    ({"judge_ids": [HUGE]}, "judge_ids"),
    ({"metrics": [{"code": "ndcg", "k": HUGE}]}, "metrics"),
    ({"metrics": [{"code": "ndcg", "k": 32_768}]}, "metrics"),
    ({"metrics": [f"ndcg@{HUGE}"]}, "metrics"),
])
def test_a_number_out_of_range_is_a_400_naming_the_field(personas, changes, field):
    model, query_set = model_and_set(personas.team, personas.lead)
    response = api_for(personas.lead).post(LIST, body(model, query_set, **changes),
                                           format="json")
    assert response.status_code == 400, response.content
    assert field in response.json(), response.json()
    assert not Schedule.objects.exists()


def test_a_huge_interval_through_patch_is_a_400(personas):
    schedule = schedule_of(personas.team, personas.lead)
    response = api_for(personas.lead).patch(
        reverse("schedules_api:schedule", args=[schedule.pk]), {"interval_minutes": HUGE},
        format="json")
    assert response.status_code == 400
    assert "less than or equal to 2147483647" in response.json()["interval_minutes"][0]
    schedule.refresh_from_db()
    assert schedule.interval_minutes == 60


def test_metrics_may_be_given_as_names(personas):
    model, query_set = model_and_set(personas.team, personas.lead)
    response = api_for(personas.lead).post(
        LIST, body(model, query_set, metrics=["ndcg@10", "P@5"]), format="json")
    assert response.status_code == 201, response.json()
    assert Schedule.objects.get().metrics == [{"code": "ndcg", "k": 10, "params": {}},
                                              {"code": "precision", "k": 5, "params": {}}]


@pytest.mark.parametrize(("changes", "field", "words"), [
    ({"interval_minutes": str(HUGE)}, "interval_minutes", "less than or equal to 2147483647"),
    ({"interval_minutes": "600000"}, "interval_minutes", "The maximum interval is 525600"),
    ({"keep_runs": str(HUGE)}, "keep_runs", "less than or equal to 2147483647"),
    ({"deadline_hours": "-3"}, "deadline_hours", "greater than or equal to 0"),
    ({"metrics": f"ndcg@{HUGE}"}, "metrics", "Line 1: k must be between 1 and 32767"),
    ({"interval_minutes": "", "cron": "0 6 * * 1 1"}, "cron", "has 6 fields"),
])
def test_the_form_names_the_field_of_a_number_out_of_range(client, personas, changes, field,
                                                            words):
    model, query_set = model_and_set(personas.team, personas.lead)
    client.force_login(personas.lead)
    response = client.post(reverse("schedules:schedule_create"),
                           form_data(model, query_set, **changes))
    assert response.status_code == 400  # the form again, with its errors
    errors = response.context["form"].errors[field]
    assert any(words in error for error in errors), errors
    assert not Schedule.objects.exists()


# --- the tick: one schedule in its own guard --------------------------------------------------


def two_schedules(personas, *names: str) -> list[Schedule]:
    first = schedule_of(personas.team, personas.lead, name=names[0])
    return [first, *(schedule_services.schedule_create(
        team=personas.team, created_by=personas.lead, name=name, model=first.model,
        query_set=first.query_set, scale="graded", strategy=1, metrics=first.metrics,
        interval_minutes=60, baseline=Schedule.Baseline.FIRST) for name in names[1:])]


def store_unfollowable_timing(schedule: Schedule) -> tuple[str, str]:
    """A stored timing that gives no due time; (its field, the reason's start). On SQLite
    (the embedded default) ten billion minutes, stored before the bound existed, beyond
    the calendar; PostgreSQL's integer column refuses that (and its largest, 2^31 - 1
    minutes, still lands before the year 9999), so there a cron that no longer reads."""
    if connection.vendor == "postgresql":
        Schedule.objects.filter(pk=schedule.pk).update(interval_minutes=None,
                                                      cron="99 * * * *")
        return "cron", "its next due time cannot be computed (CronSimError: "
    Schedule.objects.filter(pk=schedule.pk).update(interval_minutes=10_000_000_000)
    return "interval_minutes", ("its next due time cannot be computed (OverflowError: date "
                                "value out of range); change its timing, then resume")


@pytest.fixture(autouse=True)
def no_fetch_retries(settings):
    # The runs' fetches go to an engine that is not there: fail them at once.
    settings.FETCH_RETRIES = 0


def test_a_schedule_whose_due_time_cannot_be_computed_is_paused_and_the_others_fire(
        personas, django_capture_on_commit_callbacks):
    with time_machine.travel(START, tick=False):
        good, bad = two_schedules(personas, "Good", "Bad")
    _, reason = store_unfollowable_timing(bad)

    with time_machine.travel(START + timedelta(seconds=5), tick=False), \
            django_capture_on_commit_callbacks(execute=True):
        report = firing.schedules_tick()

    assert (report.fired, report.skipped) == (1, 1)
    assert list(ScheduleRun.objects.values_list("schedule_id", flat=True)) == [good.pk]
    good.refresh_from_db()
    bad.refresh_from_db()
    assert good.next_due_at == START + timedelta(hours=1) and not good.is_paused
    assert bad.is_paused and bad.next_due_at == START  # nothing claimed
    assert bad.paused_reason.startswith(reason)
    told = Notification.objects.filter(event=Event.SCHEDULE_PAUSED)
    assert sorted(told.values_list("user__username", flat=True)) == ["admin", "lead", "owner"]
    assert told.first().text == f"Schedule “Bad” paused: {bad.paused_reason}"
    # A second tick: the paused one is not tried again, the good one keeps its rhythm.
    with time_machine.travel(START + timedelta(hours=1, seconds=5), tick=False), \
            django_capture_on_commit_callbacks(execute=True):
        assert firing.schedules_tick().fired == 1
    assert Evaluation.objects.count() == 2


def test_a_stored_cron_that_no_longer_reads_pauses_only_its_schedule(
        personas, django_capture_on_commit_callbacks):
    with time_machine.travel(START, tick=False):
        good, bad = two_schedules(personas, "Good", "Bad")
    Schedule.objects.filter(pk=bad.pk).update(interval_minutes=None, cron="99 * * * *")
    with time_machine.travel(START + timedelta(seconds=5), tick=False), \
            django_capture_on_commit_callbacks(execute=True):
        report = firing.schedules_tick()
    assert (report.fired, report.skipped) == (1, 1)
    assert list(ScheduleRun.objects.values_list("schedule_id", flat=True)) == [good.pk]
    bad.refresh_from_db()
    assert bad.is_paused and bad.paused_reason.startswith(
        "its next due time cannot be computed (CronSimError: ")


def test_the_paused_reason_is_shown_on_the_schedules_page(client, personas):
    with time_machine.travel(START, tick=False):
        bad = schedule_of(personas.team, personas.lead, name="Bad")
    Schedule.objects.filter(pk=bad.pk).update(time_zone="Mars/Olympus", interval_minutes=None,
                                              cron="0 6 * * *")
    with time_machine.travel(START, tick=False):
        firing.schedules_tick()
    bad.refresh_from_db()
    assert bad.paused_reason == "unknown time zone 'Mars/Olympus'"
    client.force_login(personas.grader)
    page = client.get(reverse("schedules:schedule_detail", args=[bad.pk])).content.decode()
    assert "unknown time zone &#x27;Mars/Olympus&#x27;" in page


def test_a_schedule_that_raises_anything_else_does_not_stop_the_others(
        personas, monkeypatch, django_capture_on_commit_callbacks):
    with time_machine.travel(START, tick=False):
        first, second = two_schedules(personas, "First", "Second")
    real = firing.evaluation_create_from_query_set

    def fails_for_first(**kwargs):
        if kwargs["name"].startswith("First"):
            raise RuntimeError("boom")
        return real(**kwargs)

    monkeypatch.setattr(firing, "evaluation_create_from_query_set", fails_for_first)
    # The bulk path fails for the batch: both go one by one; the first raises there too.
    monkeypatch.setattr(firing, "evaluations_create_started",
                        lambda specs: (_ for _ in ()).throw(RuntimeError("bulk")))
    with time_machine.travel(START + timedelta(seconds=5), tick=False), \
            django_capture_on_commit_callbacks(execute=True):
        report = firing.schedules_tick()
    assert report.fired == 1
    assert list(ScheduleRun.objects.values_list("schedule_id", flat=True)) == [second.pk]
    first.refresh_from_db()
    # Not a timing fault: left due for the next tick, not paused.
    assert not first.is_paused and first.next_due_at == START


def test_resuming_a_schedule_whose_due_time_cannot_be_computed_is_refused(personas):
    schedule = schedule_of(personas.team, personas.lead)
    schedule_services.schedule_pause(schedule=schedule, reason="x")
    field, _ = store_unfollowable_timing(schedule)
    with pytest.raises(ValidationError) as excinfo:
        schedule_services.schedule_resume(schedule=schedule)
    assert list(excinfo.value.message_dict) == [field]
    assert "Cannot resume: its next due time cannot be computed" in (
        excinfo.value.message_dict[field][0])
    schedule.refresh_from_db()
    assert schedule.is_paused


# --- how many: a page at a time, and at most SCHEDULES_PER_TEAM a team ------------------------


def test_the_list_page_shows_fifty_schedules_a_page(client, personas,
                                                    django_assert_max_num_queries):
    first = schedule_of(personas.team, personas.lead, name="s00")
    Schedule.objects.bulk_create([
        Schedule(team=personas.team, model=first.model, query_set=first.query_set,
                 name=f"s{number:02}", scale="graded", strategy=1, metrics=first.metrics,
                 interval_minutes=60) for number in range(1, 60)])
    client.force_login(personas.grader)
    with django_assert_max_num_queries(12):
        page = client.get(reverse("schedules:schedule_list"))
    rows = page.content.decode().count('href="/schedules/')
    assert page.context["schedules"].paginator.count == 60
    assert [s.name for s in page.context["schedules"]][:2] == ["s00", "s01"]
    assert len(page.context["schedules"]) == 50
    assert "Page 1 of 2" in page.content.decode() and rows >= 50
    second = client.get(reverse("schedules:schedule_list"), {"page": "2"})
    assert [s.name for s in second.context["schedules"]] == [f"s{n}" for n in range(50, 60)]
    # A page past the end or not a number shows the nearest page, never an error.
    assert client.get(reverse("schedules:schedule_list"), {"page": str(HUGE)}).status_code == 200


def test_the_api_lists_schedules_a_page_at_a_time(personas):
    first = schedule_of(personas.team, personas.lead, name="s00")
    Schedule.objects.bulk_create([
        Schedule(team=personas.team, model=first.model, query_set=first.query_set,
                 name=f"s{number:02}", scale="graded", strategy=1, metrics=first.metrics,
                 interval_minutes=60) for number in range(1, 60)])
    data = api_for(personas.grader).get(LIST, {"page_size": 25, "page": 3}).json()
    assert data["count"] == 60
    assert [row["name"] for row in data["results"]] == [f"s{n}" for n in range(50, 60)]


def test_a_team_may_have_schedules_up_to_the_cap_and_not_one_more(personas, settings):
    settings.SCHEDULES_PER_TEAM = 2
    first, second = two_schedules(personas, "One", "Two")
    model, query_set = first.model, first.query_set
    response = api_for(personas.lead).post(LIST, body(model, query_set, name="Three"),
                                           format="json")
    assert response.status_code == 400
    assert response.json() == {"name": [
        "The team has 2 schedules, the most it may have (SCHEDULES_PER_TEAM): delete one it "
        "no longer needs first."]}
    assert Schedule.objects.count() == 2
    schedule_services.schedule_delete(schedule=second)
    assert api_for(personas.lead).post(LIST, body(model, query_set, name="Three"),
                                       format="json").status_code == 201
