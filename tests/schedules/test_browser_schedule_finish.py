"""A lead watches the demo model with a schedule, in a real browser at 1366 and 390 px:
the schedule is created on its page; the first run is made by the tick, fetched from the
live demo engine and graded by the demo's graders; an hour later the model has not
changed, so the next run's every result is filled from the first run's grades as it is
fetched. That run finishes at its fetch's end, with no grade to wait for: its row on the
schedule's page says Finished with its verdict (no change against the previous run), the
bell counts one more, and the run's dashboard shows the verdict.

The ticks are called as beat (or make run's thread) would call them, under a clock the
test moves (time-machine, in the test and the live server alike)."""

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import time_machine
from playwright.sync_api import expect

from evaluations.management.commands.seed_demo import DEMO_KEYWORDS, MODEL_NAME
from evaluations.models import Evaluation, SearchModel
from evaluations.query_sets import services as query_set_services
from judgments.models import FeedbackSlot
from metrics.services import evaluation_metrics_recompute
from searchtweak.models import Team, User
from tests.demo_seed import seeded_demo
from tests.metrics.demo_grading import grade_ungraded_by_demo_relevance
from tests.schedules.ticks import tick

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
DESKTOP = {"width": 1366, "height": 900}
PHONE = {"width": 390, "height": 844}
START = datetime(2026, 11, 26, 9, 0, tzinfo=UTC)
KEYWORDS = DEMO_KEYWORDS[:12]

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def shot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"schedule-finish-{name}.png"), full_page=True)



@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1366px", "390px"])
@pytest.mark.slow_reason("seeds the demo over HTTP and walks two schedule runs in Chromium")
def test_a_run_of_an_unchanged_model_finishes_at_its_fetch_and_the_lead_hears_of_it(
        page, live_server, settings, viewport):
    settings.FETCH_RETRIES = 0
    seeded_demo(demo_url=live_server.url)
    team = Team.objects.get(name="Demo")
    lead = User.objects.get(username="lead")
    model = SearchModel.objects.get(team=team, name=MODEL_NAME)
    query_set = query_set_services.query_set_create(team=team, created_by=lead, name="Top queries",
                                                    keywords=KEYWORDS)
    page.set_viewport_size(viewport)
    page.goto(f"{live_server.url}/login/")
    page.get_by_label("Username").fill("lead")
    page.get_by_label("Password").fill("demo")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{live_server.url}/")

    # The schedule, on its form: hourly, each run compared with the previous one.
    page.goto(f"{live_server.url}/query-sets/{query_set.pk}/")
    page.get_by_test_id("schedule-query-set").click()
    page.locator("#id_name").fill("Hourly watch")
    page.get_by_label("Search model").select_option(label=MODEL_NAME)
    page.get_by_label("Every N minutes").fill("60")
    page.get_by_label("The previous run").check()
    with time_machine.travel(START, tick=False):
        page.get_by_role("button", name="Create schedule").click()
        page.wait_for_url(re.compile(r"/schedules/\d+/$"))
    schedule_url = page.url
    assert re.search(r"/schedules/(\d+)/$", schedule_url)

    # The first run: made, fetched, graded by the demo's graders, finished by its grades.
    first = tick(START)
    assert first.model == model and first.status == Evaluation.Status.ACTIVE
    grade_ungraded_by_demo_relevance(first, at=START)
    with time_machine.travel(START, tick=False):
        evaluation_metrics_recompute(evaluation_id=first.pk)

    with time_machine.travel(START + timedelta(hours=1), tick=False):
        page.goto(schedule_url)
        rows = page.get_by_test_id("run")
        expect(rows).to_have_count(1)
        expect(rows.nth(0).locator(".status")).to_have_text("Finished")
        expect(page.get_by_test_id("bell-count")).to_have_text("1")

        # An hour on, the same model: the tick makes the run and its fetch fills every
        # slot from the first run's grades. Nobody grades, nobody presses Finish.
        second = tick(START + timedelta(hours=1))
        assert not FeedbackSlot.objects.filter(evaluation=second, grade__isnull=True).exists()
        page.reload()
        expect(rows).to_have_count(2)
        expect(rows.nth(0)).to_contain_text("Hourly watch · 2026-11-26 10:00")
        expect(rows.nth(0).locator(".status")).to_have_text("Finished")
        expect(rows.nth(0).get_by_test_id("verdict")).to_contain_text("No change")
        assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"]
        shot(page, f"1-schedule-{viewport['width']}")
        if viewport == PHONE:  # the navigation folds into its menu
            page.get_by_role("button", name="Menu").click()
        expect(page.get_by_test_id("bell-count")).to_have_text("2")
        expect(page.get_by_test_id("bell-count")).to_be_visible()
        page.get_by_test_id("bell").click()
        page.wait_for_url(re.compile(r"/notifications/"))
        expect(page.get_by_text(
            "Evaluation “Hourly watch · 2026-11-26 10:00” finished (automatically, every "
            "result graded).")).to_be_visible()
        shot(page, f"2-notifications-{viewport['width']}")

        # The run's dashboard: its verdict against the first run.
        page.goto(f"{live_server.url}/dashboard/evaluations/{second.pk}/")
        verdict = page.get_by_test_id("regression-verdict")
        expect(verdict.get_by_test_id("verdict-badge")).to_have_text("No change")
        expect(verdict).to_contain_text("Hourly watch · 2026-11-26 09:00")
        shot(page, f"3-dashboard-{viewport['width']}")
