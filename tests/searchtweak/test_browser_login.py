import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.searchtweak.factories import PASSWORD

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_lead_logs_in_through_the_real_login_page(page, live_server, personas):
    page.goto(f"{live_server.url}/")
    assert page.url.startswith(f"{live_server.url}/login/")
    page.get_by_label("Username").fill("lead")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{live_server.url}/")
    expect(page.get_by_role("heading", name="Welcome, lead")).to_be_visible()
    expect(page.get_by_test_id("what-you-can-do")).to_contain_text("In Acme you are lead")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "home.png"), full_page=True)


def test_a_wrong_password_stays_on_the_login_page(page, live_server, personas):
    page.goto(f"{live_server.url}/login/")
    page.get_by_label("Username").fill("lead")
    page.get_by_label("Password").fill("wrong")
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("alert")).to_be_visible()
    expect(page).to_have_url(re.compile(r"/login/"))
