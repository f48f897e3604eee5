"""A lead schedules a query set through the form in a real browser, reads the schedule's
page (when, next due, the runs and their verdicts), pauses and resumes it; the page fits
a phone (390 px)."""

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from evaluations.models import Evaluation
from evaluations.query_sets import services as query_set_services
from schedules.models import Schedule
from tests.evaluations.factories import SearchModelFactory
from tests.schedules.builders import run_of
from tests.searchtweak.factories import PASSWORD

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
DESKTOP = {"width": 1366, "height": 900}
PHONE = {"width": 390, "height": 844}

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def shot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"schedules-{name}.png"), full_page=True)


def fits_the_phone(page) -> None:
    page.set_viewport_size(PHONE)
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"], page.url
    page.set_viewport_size(DESKTOP)


@pytest.mark.slow_reason("a schedule story in Chromium: create, pause, resume")
def test_a_lead_schedules_a_query_set_then_pauses_and_resumes_it(page, live_server,
                                                                  personas):
    SearchModelFactory(endpoint__team=personas.team, name="BM25")
    query_set = query_set_services.query_set_create(team=personas.team, created_by=personas.lead,
                                                    name="Footwear", keywords=["boots", "sandals"])
    page.set_viewport_size(DESKTOP)
    page.goto(f"{live_server.url}/login/")
    page.get_by_label("Username").fill("lead")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{live_server.url}/")

    page.goto(f"{live_server.url}/query-sets/{query_set.pk}/")
    page.get_by_test_id("schedule-query-set").click()
    page.wait_for_url(re.compile(rf"/schedules/new/\?query_set={query_set.pk}$"))
    expect(page.get_by_label("Query set")).to_have_value(str(query_set.pk))
    page.locator("#id_name").fill("Footwear nightly")
    page.get_by_label("Search model").select_option(label="BM25")
    # Too often: the error sits on the interval and nothing is saved.
    page.get_by_label("Every N minutes").fill("10")
    fits_the_phone(page)
    shot(page, "1-form")
    page.get_by_role("button", name="Create schedule").click()
    expect(page.locator(".field.has-error")).to_contain_text(
        "The minimum interval is 15 minutes.")
    assert not Schedule.objects.exists()

    page.get_by_label("Every N minutes").fill("60")
    page.get_by_label("The schedule's first run").check()
    page.get_by_role("button", name="Create schedule").click()
    page.wait_for_url(re.compile(r"/schedules/\d+/$"))
    expect(page.get_by_text("Schedule Footwear nightly created: every hour.")
           ).to_be_visible()
    expect(page.get_by_test_id("when")).to_have_text("every hour")
    # An interval schedule is due at once (its first run is the reference).
    expect(page.get_by_test_id("next-due")).to_contain_text("due now")
    schedule = Schedule.objects.get()
    assert (schedule.query_set, schedule.interval_minutes, schedule.baseline) == (
        query_set, 60, "first")

    page.get_by_label("Reason for pausing").fill("index rebuild")
    page.get_by_role("button", name="Pause").click()
    expect(page.get_by_test_id("paused-banner")).to_contain_text("index rebuild")
    expect(page.get_by_test_id("schedule-state")).to_have_text("Paused")
    shot(page, "2-paused")
    page.get_by_role("button", name="Resume").click()
    expect(page.get_by_test_id("paused-banner")).to_have_count(0)
    expect(page.get_by_test_id("next-due")).to_contain_text(re.compile(r"in \d+\s+minutes"))
    schedule.refresh_from_db()
    assert schedule.paused_at is None

    # Runs with their verdicts, as the tick and the verdict listener would leave them.
    run_of(schedule, hours_ago=3, archived=True,
           verdicts=[("undecided", "Coverage 60 % is below 90 %.")])
    run_of(schedule, hours_ago=2, verdicts=[("regressed", "nDCG@10 fell by 0.12 (p 0.004).")])
    run_of(schedule, hours_ago=1, verdicts=[("improved", "nDCG@10 rose by 0.05 (p 0.01).")])
    run_of(schedule, hours_ago=0, status=Evaluation.Status.ACTIVE)
    page.reload()
    expect(page.get_by_test_id("run")).to_have_count(4)
    expect(page.get_by_test_id("verdict").nth(2)).to_contain_text("Regressed")
    fits_the_phone(page)
    shot(page, "3-detail-1366")
    page.set_viewport_size(PHONE)
    shot(page, "4-detail-390")
