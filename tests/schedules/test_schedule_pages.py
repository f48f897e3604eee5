"""Schedule pages ("watches"): create and edit through the form (each error on
its field, nothing saved), the detail page's settings, state and runs with their verdicts,
pause and resume, delete, and who may do what."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from evaluations.models import Evaluation, KeywordSet
from evaluations.query_sets.services import query_set_archive
from metrics.models import TeamBaseline
from schedules.models import Schedule
from schedules.services import schedule_pause
from tests.evaluations.factories import EvaluationFactory
from tests.schedules.builders import model_and_set, run_of, schedule_of

pytestmark = pytest.mark.django_db


def form_data(model, query_set, **changes) -> dict:
    return {"name": "Nightly", "model": model.pk, "query_set": query_set.pk,
            "scale": "graded", "strategy": 1, "metrics": "ndcg@10\nP@5",
            "interval_minutes": "60", "cron": "", "time_zone": "UTC", "deadline_hours": 24,
            "baseline": "first", "min_coverage": "80", "threshold": "", "keep_runs": 10,
            **changes}


def detail_url(schedule) -> str:
    return reverse("schedules:schedule_detail", args=[schedule.pk])


def field_errors(response, field: str) -> list[str]:
    return list(response.context["form"].errors.get(field, []))


# --- create and edit ------------------------------------------------------------------------


def test_a_lead_creates_a_schedule_through_the_form(client, personas):
    model, query_set = model_and_set(personas.team, personas.lead)
    client.force_login(personas.lead)
    response = client.post(reverse("schedules:schedule_create"),
                           form_data(model, query_set, threshold="0.02"))
    schedule = Schedule.objects.get()
    assert response.status_code == 302 and response.url == detail_url(schedule)
    assert (schedule.team, schedule.created_by, schedule.model, schedule.query_set) == (
        personas.team, personas.lead, model, query_set)
    assert schedule.metrics == [{"code": "ndcg", "k": 10, "params": {}},
                                {"code": "precision", "k": 5, "params": {}}]
    assert (schedule.interval_minutes, schedule.cron, schedule.baseline) == (60, "", "first")
    # The percent typed is stored as a share.
    assert (schedule.min_coverage, schedule.threshold, schedule.keep_runs) == (0.8, 0.02, 10)
    page = client.get(response.url)
    assert "Schedule Nightly created: every hour." in page.content.decode()


def test_the_create_page_prefills_model_and_query_set_from_the_address(client, personas):
    model, query_set = model_and_set(personas.team, personas.lead)
    client.force_login(personas.lead)
    response = client.get(reverse("schedules:schedule_create")
                          + f"?model={model.pk}&query_set={query_set.pk}")
    form = response.context["form"]
    assert (form["model"].value(), form["query_set"].value()) == (model.pk, query_set.pk)
    # No team baseline: the form starts from the first run, which the service accepts.
    assert form["baseline"].value() == "first"
    assert form["min_coverage"].value() == 90 and form["keep_runs"].value() == 10
    # No counting judges in the team: no judges field.
    assert "judge_ids" not in form.fields


def test_the_query_set_page_links_leads_to_schedule_it(client, personas):
    _, query_set = model_and_set(personas.team, personas.lead)
    link = f'{reverse("schedules:schedule_create")}?query_set={query_set.pk}'
    url = reverse("evaluations:query_set_detail", args=[query_set.pk])
    client.force_login(personas.lead)
    assert link in client.get(url).content.decode()
    client.force_login(personas.grader)
    assert link not in client.get(url).content.decode()


@pytest.mark.parametrize(("changes", "field", "message"), [
    ({"interval_minutes": "", "cron": "*/5 * * * *"}, "cron", "the minimum is 15 minutes"),
    ({"interval_minutes": "10"}, "interval_minutes", "The minimum interval is 15 minutes."),
    ({"interval_minutes": "", "cron": ""}, "interval_minutes",
     "Give either an interval in minutes or a cron expression."),
    ({"baseline": "team"}, "baseline", "The team has no baseline"),
    ({"time_zone": "Mars/Olympus"}, "time_zone", "Unknown time zone"),
    ({"metrics": "ndcg"}, "metrics", "write code@k"),
    ({"min_coverage": "120"}, "min_coverage", "less than or equal to 100"),
])
def test_each_error_shows_on_its_field_and_nothing_is_saved(client, personas, changes, field,
                                                            message):
    model, query_set = model_and_set(personas.team, personas.lead)
    client.force_login(personas.lead)
    response = client.post(reverse("schedules:schedule_create"),
                           form_data(model, query_set, **changes))
    assert response.status_code == 400
    assert any(message in error for error in field_errors(response, field)), (
        response.context["form"].errors)
    assert Schedule.objects.count() == 0


def test_an_archived_query_set_is_an_error_on_query_set(client, personas):
    model, query_set = model_and_set(personas.team, personas.lead)
    query_set_archive(query_set=query_set)
    client.force_login(personas.lead)
    response = client.post(reverse("schedules:schedule_create"),
                           form_data(model, query_set))
    assert response.status_code == 400
    # The form offers only sets in use, so the choice itself is refused on the field.
    assert field_errors(response, "query_set") == [
        "Select a valid choice. That choice is not one of the available choices."]
    assert Schedule.objects.count() == 0 and KeywordSet.objects.get().archived_at is not None


def test_a_team_baseline_on_the_schedules_scale_is_accepted(client, personas):
    model, query_set = model_and_set(personas.team, personas.lead)
    baseline = EvaluationFactory(team=personas.team, model=model,
                                 status=Evaluation.Status.FINISHED)
    TeamBaseline.objects.create(team=personas.team, evaluation=baseline)
    client.force_login(personas.lead)
    assert client.get(reverse("schedules:schedule_create")).context["form"][
        "baseline"].value() == "team"
    response = client.post(reverse("schedules:schedule_create"),
                           form_data(model, query_set, baseline="team"))
    assert response.status_code == 302
    assert Schedule.objects.get().baseline == "team"


def test_the_edit_page_shows_the_schedule_and_saves_a_change(client, personas):
    schedule = schedule_of(personas.team, personas.lead, min_coverage=0.75,
                           metrics=[{"code": "ndcg", "k": 10, "params": {"gain": "linear"}}])
    url = reverse("schedules:schedule_edit", args=[schedule.pk])
    client.force_login(personas.lead)
    form = client.get(url).context["form"]
    assert form["metrics"].value() == "ndcg@10 gain=linear"
    assert (form["min_coverage"].value(), form["interval_minutes"].value()) == (75, 60)

    data = form_data(schedule.model, schedule.query_set, name="Weekdays",
                     interval_minutes="", cron="0 6 * * 1-5", time_zone="Europe/Berlin")
    response = client.post(url, data)
    assert response.status_code == 302
    schedule.refresh_from_db()
    assert (schedule.name, schedule.interval_minutes, schedule.cron, schedule.time_zone) == (
        "Weekdays", None, "0 6 * * 1-5", "Europe/Berlin")
    local = schedule.next_due_at.astimezone(timezone.get_fixed_timezone(0))
    assert schedule.next_due_at > timezone.now() and local.minute == 0


def test_a_bad_edit_changes_nothing(client, personas):
    schedule = schedule_of(personas.team, personas.lead)
    client.force_login(personas.lead)
    response = client.post(reverse("schedules:schedule_edit", args=[schedule.pk]),
                           form_data(schedule.model, schedule.query_set, name="Other",
                                     interval_minutes="5"))
    assert response.status_code == 400
    assert field_errors(response, "interval_minutes") == [
        "The minimum interval is 15 minutes."]
    schedule.refresh_from_db()
    assert (schedule.name, schedule.interval_minutes) == ("Nightly", 60)


# --- the detail page -----------------------------------------------------------------------


def test_the_detail_page_says_the_settings_and_when_it_is_due(client, personas):
    schedule = schedule_of(personas.team, personas.lead, threshold=0.01)
    Schedule.objects.filter(pk=schedule.pk).update(
        next_due_at=timezone.now() + timezone.timedelta(minutes=12, seconds=30))
    client.force_login(personas.grader)
    html = client.get(detail_url(schedule)).content.decode()
    assert "every hour" in html
    assert "in 12\xa0minutes" in html
    assert "The schedule&#x27;s first run" in html
    assert "Undecided below 90 % of the keywords" in html and "larger than 0.01" in html
    assert 'data-testid="paused-banner"' not in html


def test_the_runs_are_listed_with_their_latest_verdict(client, personas):
    schedule = schedule_of(personas.team, personas.lead)
    old = run_of(schedule, hours_ago=3, archived=True,
                 verdicts=[("undecided", "Too few keywords.")])
    regressed = run_of(schedule, hours_ago=2, verdicts=[
        ("improved", "An older verdict."), ("regressed", "nDCG@10 fell by 0.12.")])
    active = run_of(schedule, hours_ago=1, status=Evaluation.Status.ACTIVE)
    client.force_login(personas.grader)
    response = client.get(detail_url(schedule))
    runs = response.context["runs"].object_list
    assert [run.pk for run in runs] == [active.pk, regressed.pk, old.pk]
    assert [run.verdict.verdict if run.verdict else None for run in runs] == [
        None, "regressed", "undecided"]
    html = response.content.decode()
    assert 'class="verdict-regressed"' in html and "nDCG@10 fell by 0.12." in html
    assert "An older verdict." not in html
    assert html.count('data-testid="archived"') == 1
    assert reverse("evaluations:evaluation_detail", args=[regressed.evaluation_id]) in html


def test_the_detail_pages_queries_do_not_grow_with_the_runs(client, personas):
    schedule = schedule_of(personas.team, personas.lead)
    client.force_login(personas.lead)

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert client.get(detail_url(schedule)).status_code == 200
        return len(captured)

    for hours in (1, 2):
        run_of(schedule, hours_ago=hours, verdicts=[("no_change", "Nothing moved.")])
    two = queries()
    for hours in range(3, 13):
        run_of(schedule, hours_ago=hours, verdicts=[("improved", "Better.")],
               archived=hours % 2 == 0)
    assert queries() == two


def test_the_list_shows_the_teams_schedules_with_their_state(client, personas):
    schedule = schedule_of(personas.team, personas.lead)
    schedule_pause(schedule=schedule, reason="holiday")
    client.force_login(personas.grader)
    response = client.get(reverse("schedules:schedule_list"))
    assert [row.name for row in response.context["schedules"]] == ["Nightly"]
    html = response.content.decode()
    assert 'data-testid="paused"' in html and "every hour" in html
    # A grader reads; no way to create or change.
    assert 'data-testid="new-schedule"' not in html
    assert reverse("schedules:schedule_edit", args=[schedule.pk]) not in html


# --- pause, resume, delete, access ------------------------------------------------------------


def test_a_lead_pauses_with_a_reason_and_resumes(client, personas):
    schedule = schedule_of(personas.team, personas.lead)
    client.force_login(personas.lead)
    response = client.post(reverse("schedules:schedule_pause", args=[schedule.pk]),
                           {"reason": "index rebuild"})
    assert response.status_code == 302 and response.url == detail_url(schedule)
    schedule.refresh_from_db()
    assert schedule.is_paused and schedule.paused_reason == "index rebuild"
    html = client.get(detail_url(schedule)).content.decode()
    assert 'data-testid="paused-banner"' in html and "index rebuild" in html
    assert reverse("schedules:schedule_resume", args=[schedule.pk]) in html

    response = client.post(reverse("schedules:schedule_resume", args=[schedule.pk]))
    assert response.status_code == 302
    schedule.refresh_from_db()
    assert not schedule.is_paused and schedule.next_due_at > timezone.now()
    html = client.get(detail_url(schedule)).content.decode()
    assert 'data-testid="paused-banner"' not in html


def test_a_pause_without_a_reason_names_who_paused(client, personas):
    schedule = schedule_of(personas.team, personas.lead)
    client.force_login(personas.admin)
    client.post(reverse("schedules:schedule_pause", args=[schedule.pk]))
    schedule.refresh_from_db()
    assert schedule.paused_reason == "paused by admin"


@pytest.mark.parametrize("name", ["schedule_pause", "schedule_resume", "schedule_delete"])
def test_a_grader_may_not_change_a_schedule(client, personas, name):
    schedule = schedule_of(personas.team, personas.lead)
    client.force_login(personas.grader)
    response = client.post(reverse(f"schedules:{name}", args=[schedule.pk]))
    assert response.status_code == 403
    assert Schedule.objects.get().paused_at is None


def test_a_grader_sees_the_page_without_its_buttons(client, personas):
    schedule = schedule_of(personas.team, personas.lead)
    client.force_login(personas.grader)
    html = client.get(detail_url(schedule)).content.decode()
    for name in ("schedule_pause", "schedule_edit", "schedule_delete"):
        assert reverse(f"schedules:{name}", args=[schedule.pk]) not in html
    assert client.get(reverse("schedules:schedule_edit", args=[schedule.pk])
                      ).status_code == 403
    assert client.get(reverse("schedules:schedule_create")).status_code == 403


@pytest.mark.parametrize("name", ["schedule_detail", "schedule_edit", "schedule_delete"])
def test_another_teams_schedule_is_not_found(client, personas, name):
    schedule = schedule_of(personas.team, personas.lead)
    client.force_login(personas.outsider)
    assert client.get(reverse(f"schedules:{name}", args=[schedule.pk])).status_code == 404
    assert client.post(reverse("schedules:schedule_pause", args=[schedule.pk])
                       ).status_code == 404
    assert Schedule.objects.get().paused_at is None


def test_delete_asks_then_deletes_and_keeps_the_runs(client, personas):
    schedule = schedule_of(personas.team, personas.lead)
    run = run_of(schedule, hours_ago=1)
    url = reverse("schedules:schedule_delete", args=[schedule.pk])
    client.force_login(personas.lead)
    page = client.get(url)
    assert "It has made 1 run(s)." in page.content.decode()
    assert Schedule.objects.exists()
    response = client.post(url)
    assert response.status_code == 302
    assert response.url == reverse("schedules:schedule_list")
    assert not Schedule.objects.exists()
    assert Evaluation.objects.filter(pk=run.evaluation_id).exists()


@pytest.mark.parametrize(("name", "method"), [
    ("schedule_pause", "get"), ("schedule_resume", "get"), ("schedule_detail", "post")])
def test_the_wrong_method_is_refused(client, personas, name, method):
    schedule = schedule_of(personas.team, personas.lead)
    client.force_login(personas.lead)
    response = getattr(client, method)(reverse(f"schedules:{name}", args=[schedule.pk]))
    assert response.status_code == 405
