"""Acceptance: without a broker, Start answers at once and the page's progress bar moves
while the web process fetches in the background."""

import threading
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.evaluations.factories import fetchable_evaluation
from tests.evaluations.servers import Reply, hits, running_server
from tests.searchtweak.factories import PASSWORD

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
KEYWORDS = [f"keyword {n}" for n in range(10)]

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def shot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"evaluations-{name}.png"), full_page=True)


@pytest.mark.slow_reason("watches a background fetch's progress bar move in Chromium")
def test_the_progress_bar_moves_while_the_web_process_fetches(page, live_server, personas,
                                                              settings):
    settings.EMBEDDED_TASKS_IN_BACKGROUND = True
    released = threading.Event()

    def handler(request):
        query = request.query["q"][0]
        if query not in KEYWORDS[:4]:
            released.wait(60)
        return Reply(body=hits(query), delay=0.2)

    with running_server() as server:
        server.handler = handler
        evaluation = fetchable_evaluation(url=server.url, keywords=KEYWORDS,
                                          team=personas.team)
        page.goto(f"{live_server.url}/login/")
        page.get_by_label("Username").fill("lead")
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Log in").click()
        page.wait_for_url(f"{live_server.url}/")
        page.goto(f"{live_server.url}/evaluations/{evaluation.pk}/")
        page.get_by_role("button", name="Start").click()

        expect(page.get_by_test_id("status")).to_have_text("Fetching")
        progress = page.get_by_role("progressbar", name="Keywords fetched")
        expect(progress).to_have_attribute("aria-valuenow", "40", timeout=20_000)
        expect(page.get_by_test_id("fetch-summary")).to_contain_text(
            "40 % · 4 fetched · 0 failed · 10 keywords")
        shot(page, "background-1-fetching")

        released.set()
        expect(page.get_by_test_id("status")).to_have_text("Active", timeout=20_000)
        expect(page.get_by_test_id("fetch-summary")).to_contain_text(
            "100 % · 10 fetched · 0 failed · 10 keywords")
        shot(page, "background-2-active")
