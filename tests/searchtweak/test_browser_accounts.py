"""A grader finds their account from the nav, renames themselves; the login page offers
a password reset."""

from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.searchtweak.factories import PASSWORD

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def shot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"account-{name}.png"), full_page=True)


def test_a_grader_renames_themselves_from_the_account_page(page, live_server, personas):
    page.goto(f"{live_server.url}/login/")
    page.get_by_role("link", name="Forgot your password?").click()
    expect(page.get_by_role("heading", name="Forgot your password?")).to_be_visible()
    shot(page, "forgot-password")

    page.goto(f"{live_server.url}/login/")
    page.get_by_label("Username").fill("grader")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{live_server.url}/")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Account").click()
    page.get_by_label("First name").fill("Grace")
    page.get_by_label("Last name").fill("Hopper")
    page.get_by_role("button", name="Save name").click()
    expect(page.get_by_text("Your name was saved.")).to_be_visible()
    expect(page.get_by_label("First name")).to_have_value("Grace")
    shot(page, "page")

    page.get_by_role("link", name="Change your password").click()
    expect(page.get_by_label("Old password")).to_be_visible()
    shot(page, "change-password")
    personas.grader.refresh_from_db()
    assert personas.grader.get_full_name() == "Grace Hopper"
