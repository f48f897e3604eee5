"""Schedules walked in a real browser, on the demo: the lead creates a query set and a
schedule on the demo model; the clock moves (time-machine, in the test and the live
server alike) and the ticks fire the runs; the demo engine's ranking is made worse between
two runs (a bad deploy); the bell shows the regression, the schedule's page lists every
run's verdict, the N-way compare of the runs and the model's history read right.

The ticks are called as beat (or make run's thread) would call them; the runs' pairs are
graded by the demo's own relevance rule, as simulated graders would."""

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import time_machine
from django.core.management import call_command
from playwright.sync_api import expect

from evaluations.management.commands.seed_demo import DEMO_KEYWORDS, MODEL_NAME
from evaluations.models import Evaluation, SearchModel
from metrics.models import RegressionVerdict
from metrics.services import evaluation_metrics_recompute
from schedules import firing
from schedules.models import Schedule, ScheduleRun
from tests.metrics.demo_grading import grade_ungraded_by_demo_relevance

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
DESKTOP = {"width": 1366, "height": 900}
PHONE = {"width": 390, "height": 844}
START = datetime(2026, 11, 26, 9, 0, tzinfo=UTC)
KEYWORDS = DEMO_KEYWORDS[:30]

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def shot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"schedule-walk-{name}.png"), full_page=True)


def fire_and_grade(at: datetime) -> Evaluation:
    """One tick at `at` (the run is made and fetched from the live demo engine), then its
    ungraded pairs graded by the demo's relevance rule and the values computed: the run
    finishes by itself and the listeners store and announce its verdict."""
    with time_machine.travel(at, tick=False):
        assert firing.schedules_tick().fired == 1
        evaluation = ScheduleRun.objects.get(due_at=at).evaluation
        grade_ungraded_by_demo_relevance(evaluation, at=at)
        evaluation_metrics_recompute(evaluation_id=evaluation.pk)
    evaluation.refresh_from_db()
    assert evaluation.status == Evaluation.Status.FINISHED
    return evaluation


@pytest.mark.timeout(600)
@pytest.mark.slow_reason("seeds the demo over HTTP and walks a schedule's runs in Chromium")
def test_a_lead_watches_the_demo_model_and_hears_of_its_regression(page, live_server,
                                                                   settings):
    settings.FETCH_RETRIES = 0
    call_command("seed_demo", verbosity=0, demo_url=live_server.url)
    model = SearchModel.objects.get(name=MODEL_NAME)
    page.set_viewport_size(DESKTOP)
    page.goto(f"{live_server.url}/login/")
    page.get_by_label("Username").fill("lead")
    page.get_by_label("Password").fill("demo")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{live_server.url}/")

    # A query set, typed.
    page.goto(f"{live_server.url}/query-sets/new/")
    page.locator("#id_name").fill("Top queries")
    page.locator("#id_keywords").fill("\n".join(KEYWORDS))
    page.get_by_role("button", name="Create query set").click()
    page.wait_for_url(re.compile(r"/query-sets/\d+/$"))

    # A schedule on it, compared run by run.
    page.get_by_test_id("schedule-query-set").click()
    page.locator("#id_name").fill("Hourly watch")
    page.get_by_label("Search model").select_option(label=MODEL_NAME)
    page.get_by_label("Every N minutes").fill("60")
    page.get_by_label("The previous run").check()
    with time_machine.travel(START, tick=False):
        page.get_by_role("button", name="Create schedule").click()
        page.wait_for_url(re.compile(r"/schedules/\d+/$"))
    schedule = Schedule.objects.get()
    assert (schedule.model, schedule.interval_minutes, schedule.baseline) == (
        model, 60, "previous")

    first = fire_and_grade(START)
    assert RegressionVerdict.objects.get(evaluation=first).verdict == "undecided"
    # A bad deploy: the engine now ranks the cheapest products first.
    SearchModel.objects.filter(pk=model.pk).update(
        params={**model.params, "ranking": "cheap-first"})
    second = fire_and_grade(START + timedelta(hours=1))
    verdict = RegressionVerdict.objects.get(evaluation=second)
    assert verdict.verdict == "regressed" and verdict.baseline == first

    with time_machine.travel(START + timedelta(hours=1, minutes=5), tick=False):
        page.goto(f"{live_server.url}/schedules/{schedule.pk}/")
        # Each run's "evaluation finished", and the second run's regression.
        expect(page.get_by_test_id("bell-count")).to_have_text("3")
        rows = page.get_by_test_id("run")
        expect(rows).to_have_count(2)
        expect(rows.nth(0).get_by_test_id("verdict")).to_contain_text("Regressed")
        expect(rows.nth(0).get_by_test_id("verdict-detail")).to_contain_text("P@10 fell ")
        expect(rows.nth(1).get_by_test_id("verdict")).to_contain_text("Undecided")
        expect(page.get_by_test_id("next-due")).to_contain_text("in 55")
        shot(page, "1-schedule")
        page.set_viewport_size(PHONE)
        shot(page, "2-schedule-phone")
        page.set_viewport_size(DESKTOP)

        page.get_by_test_id("bell").click()
        expect(page.get_by_text(re.compile(
            r"“Hourly watch · 2026-11-26 10:00” against “Hourly watch · 2026-11-26 09:00”: "
            r"Regressed: 3 of 3 metrics got worse\. P@10 fell "))).to_be_visible()
        shot(page, "3-notifications")

        page.goto(f"{live_server.url}/schedules/{schedule.pk}/")
        page.get_by_test_id("compare-runs").click()
        page.wait_for_url(re.compile(r"/compare/many/\?"))
        expect(page.locator("body")).to_contain_text(second.name)
        shot(page, "4-compare")

        page.goto(f"{live_server.url}/models/{model.pk}/history/")
        # One red ring per metric's chart, on the second run only; its rows say so.
        expect(page.locator("svg circle.marker")).to_have_count(3)
        expect(page.get_by_test_id("regressed")).to_have_count(3)
        for section in range(1, 4):
            page.get_by_test_id(f"history-{section}").locator("summary").click()
        expect(page.get_by_role("row", name=re.compile(re.escape(second.name))).first
               ).to_contain_text("regressed")
        expect(page.get_by_role("row", name=re.compile(re.escape(first.name))).first
               ).not_to_contain_text("regressed")
        shot(page, "5-history")
