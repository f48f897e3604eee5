"""What users did, in a real Chromium on a laptop (1366x900) and a phone (390x844): the
demo's simulated log on the evaluation dashboard, the window picker, and the same panel on
a query set's and a keyword's page, none wider than the screen."""

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from playwright.sync_api import expect

from behaviour.demo import demo_behaviour_ensure
from evaluations.management.commands.seed_demo import EVALUATION_NAME, QUERY_SET_NAME
from evaluations.models import Evaluation, KeywordSet
from tests.demo_seed import seeded_demo
from tests.test_first_hour import log_in

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
PHONE = {"width": 390, "height": 844}
LAPTOP = {"width": 1366, "height": 900}

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def fits(page, viewport: dict) -> None:
    page.set_viewport_size(viewport)
    assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"]


@pytest.mark.slow_reason("seeds the demo with its week of clicks and reads the panel in "
                        "Chromium at two sizes")
def test_a_lead_reads_ctr_beside_the_offline_metrics_and_picks_a_window(page, live_server):
    seeded_demo()
    evaluation = Evaluation.objects.get(name=EVALUATION_NAME)
    demo_behaviour_ensure(team=evaluation.team, evaluation=evaluation)
    log_in(page, live_server, "lead")
    ARTIFACTS.mkdir(exist_ok=True)
    page.set_viewport_size(LAPTOP)
    page.goto(f"{live_server.url}/dashboard/evaluations/{evaluation.pk}/")
    panel = page.get_by_test_id("online-panel")
    expect(panel).to_contain_text("50 keywords with behaviour")
    expect(panel.get_by_test_id("online-positions")).to_contain_text("Position")
    ctr_at_10 = panel.get_by_test_id("online-ctr").inner_text()
    assert 0.05 < float(ctr_at_10) < 0.5
    fits(page, LAPTOP)
    panel.screenshot(path=str(ARTIFACTS / "behaviour-online-1-laptop.png"))

    # The last 7 days of the log and CTR@3: the page keeps its other choices.
    page.goto(f"{live_server.url}/dashboard/evaluations/{evaluation.pk}/?sort=text")
    panel.get_by_label("Window", exact=True).select_option("7")
    panel.get_by_label("CTR@").select_option("3")
    panel.get_by_test_id("online-show").click()
    page.wait_for_url("**online_k=3**")
    assert "sort=text" in page.url
    expect(panel).to_contain_text("CTR@3")
    today = datetime.now(UTC).date()
    expect(panel.get_by_test_id("online-window-shown")).to_contain_text(
        f"{today - timedelta(days=6):%Y-%m-%d} to {today:%Y-%m-%d}")
    assert float(panel.get_by_test_id("online-ctr").inner_text()) > float(ctr_at_10)

    # Yesterday alone, by dates, on a phone.
    yesterday = f"{today - timedelta(days=1):%Y-%m-%d}"
    page.set_viewport_size(PHONE)
    panel.get_by_label("Window", exact=True).select_option("days")
    panel.get_by_label("From").fill(yesterday)
    panel.get_by_label("To").fill(yesterday)
    panel.get_by_test_id("online-show").click()
    expect(panel.get_by_test_id("online-window-shown")).to_contain_text(
        f"{yesterday} to {yesterday}")
    fits(page, PHONE)
    page.screenshot(path=str(ARTIFACTS / "behaviour-online-2-phone.png"), full_page=True)

    for url in (f"/query-sets/{KeywordSet.objects.get(name=QUERY_SET_NAME).pk}/",
                f"/keywords/{evaluation.keywords.get(text='running shoes').pk}/"):
        page.goto(f"{live_server.url}{url}")
        expect(page.get_by_test_id("online-figures")).to_be_visible()
        for viewport in (PHONE, LAPTOP):
            fits(page, viewport)
