"""The first hour on the seeded demo, in a real Chromium that may reach nothing but the app.

A grader grades ten demo results by keyboard only and sees each result's image; the lead
then finds values on the dashboard, the judgments page and the API docs. Every request
to any other address is blocked and recorded, and the test fails if a page tried one.
"""

from pathlib import Path

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from evaluations.models import Evaluation
from judgments.models import FeedbackSlot

ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
DEMO_EVALUATION = "Demo: product search relevance"

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def demo(capsys) -> Evaluation:
    call_command("seed_demo")
    printed = capsys.readouterr().out
    assert "grader1 / demo" in printed
    return Evaluation.objects.get(name=DEMO_EVALUATION)


@pytest.fixture
def offline(browser, live_server):
    """New pages in a context that blocks every request not to the live server."""
    blocked: list[str] = []
    contexts = []

    def route(route) -> None:
        if route.request.url.startswith(live_server.url):
            route.continue_()
        else:
            blocked.append(route.request.url)
            route.abort()

    def new_page():
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        context.route("**/*", route)
        contexts.append(context)
        return context.new_page()

    yield new_page, blocked
    for context in contexts:
        context.close()


def log_in(page, live_server, username: str) -> None:
    page.goto(f"{live_server.url}/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill("demo")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{live_server.url}/")


def image_loaded(page) -> bool:
    return page.get_by_test_id("document-image").evaluate(
        "image => image.complete && image.naturalWidth > 0")


@pytest.mark.slow_reason("a grader's and a lead's first hour on the demo, in Chromium")
def test_a_grader_and_a_lead_get_through_the_first_hour(demo, offline, live_server):
    ARTIFACTS.mkdir(exist_ok=True)
    new_page, blocked = offline

    grader = new_page()
    log_in(grader, live_server, "grader1")
    grader.get_by_test_id("start-grading").click()
    grader.wait_for_selector("html[data-grading-keys=on]", state="attached")
    seen = []
    for mine in range(1, 11):
        expect(grader.get_by_test_id("document-image")).to_be_visible()
        assert image_loaded(grader), f"result {mine} shows no image"
        seen.append(grader.get_by_test_id("document-name").inner_text())
        if mine == 1:
            grader.screenshot(path=str(ARTIFACTS / "first-hour-1-grader.png"), full_page=True)
        grader.keyboard.press(str(mine % 4))
        expect(grader.get_by_test_id("mine-count")).to_have_text(str(mine))
    assert len(set(seen)) == 10
    grader.screenshot(path=str(ARTIFACTS / "first-hour-2-grader-after-ten.png"), full_page=True)

    graded = FeedbackSlot.objects.filter(evaluation=demo, user__username="grader1",
                                         grade__isnull=False)
    assert sorted(graded.values_list("grade", flat=True)) == sorted(
        mine % 4 for mine in range(1, 11))

    lead = new_page()
    log_in(lead, live_server, "lead")
    lead.goto(f"{live_server.url}/dashboard/evaluations/{demo.pk}/")
    value_cell = lead.get_by_test_id("metric-value").first
    expect(value_cell).to_be_visible()
    value = value_cell.inner_text().strip()
    assert value and value[0].isdigit(), f"the dashboard shows no value: {value!r}"
    lead.screenshot(path=str(ARTIFACTS / "first-hour-3-lead-dashboard.png"), full_page=True)

    lead.get_by_role("link", name="Judgments").first.click()
    expect(lead.get_by_role("cell", name="grader1").first).to_be_visible()
    lead.screenshot(path=str(ARTIFACTS / "first-hour-4-lead-judgments.png"))

    lead.goto(f"{live_server.url}/api/docs/")
    expect(lead.get_by_text("/api/v1/evaluations/", exact=True).first).to_be_visible()
    lead.screenshot(path=str(ARTIFACTS / "first-hour-5-api-docs.png"))

    assert blocked == []
