"""A grader who follows a link to an admin page sees why, in the normal layout."""

from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.searchtweak.factories import PASSWORD

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_grader_sees_the_403_and_404_pages_in_the_layout(page, live_server, personas):
    page.goto(f"{live_server.url}/login/")
    page.get_by_label("Username").fill("grader")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{live_server.url}/")

    page.goto(f"{live_server.url}/endpoints/new/")
    expect(page.get_by_role("heading", name="Not allowed")).to_be_visible()
    expect(page.get_by_test_id("error-reason")).to_have_text("This needs the admin role.")
    expect(page.get_by_role("navigation", name="Main")).to_be_visible()
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "error-403.png"), full_page=True)

    page.goto(f"{live_server.url}/teams/999999/")
    expect(page.get_by_role("heading", name="Not found")).to_be_visible()
    expect(page.get_by_test_id("error-reason")).to_have_text("No such team.")
    page.screenshot(path=str(ARTIFACTS / "error-404.png"), full_page=True)
