"""Acceptance: an evaluation whose engine failed shows why, and a lead retries it."""

import threading
from pathlib import Path

import pytest
from playwright.sync_api import expect

from evaluations.services import lifecycle
from tests.evaluations.factories import fetchable_evaluation
from tests.evaluations.servers import Reply, hits, running_server
from tests.searchtweak.factories import PASSWORD

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def shot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"evaluations-{name}.png"), full_page=True)


@pytest.mark.slow_reason("fetches against a failing engine, then retries, in Chromium")
def test_a_lead_sees_every_keyword_failed_and_retries_them(page, live_server, personas,
                                                            settings):
    settings.FETCH_RETRY_BACKOFF_MS = 1
    healthy = threading.Event()
    with running_server() as server:
        server.handler = lambda request: Reply(body=hits(request.query["q"][0])) \
            if healthy.is_set() else Reply(status=500)
        evaluation = fetchable_evaluation(url=server.url, team=personas.team,
                                          keywords=["red shoes", "blue hat", "green scarf"])
        lifecycle.evaluation_start(evaluation=evaluation)

        page.goto(f"{live_server.url}/login/")
        page.get_by_label("Username").fill("lead")
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Log in").click()
        page.wait_for_url(f"{live_server.url}/")
        page.goto(f"{live_server.url}/evaluations/")
        expect(page.get_by_role("row", name=evaluation.name)).to_contain_text("Fetch failed")
        shot(page, "failures-1-list")

        page.get_by_role("link", name=evaluation.name).click()
        expect(page.get_by_test_id("status")).to_have_text("Fetch failed")
        failures = page.get_by_test_id("fetch-failures")
        expect(failures).to_contain_text("3 of 3 keywords failed")
        expect(failures).to_contain_text("HTTP 500 from the endpoint (after 4 attempts)")
        expect(failures).to_contain_text("“red shoes” and 2 more")
        shot(page, "failures-2-detail")

        healthy.set()
        page.get_by_role("button", name="Retry failed keywords").click()
        expect(page.get_by_test_id("status")).to_have_text("Active")
        expect(page.get_by_test_id("fetch-failures")).to_have_count(0)
        expect(page.get_by_test_id("fetch-summary")).to_contain_text(
            "100 % · 3 fetched · 0 failed · 3 keywords")
        shot(page, "failures-3-retried")
