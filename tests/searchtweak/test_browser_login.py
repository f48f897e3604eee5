from pathlib import Path

import pytest

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
    assert page.get_by_role("heading", name="Welcome, lead").is_visible()
    assert "In Acme you are lead" in page.get_by_test_id("what-you-can-do").inner_text()
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "home.png"), full_page=True)


def test_a_wrong_password_stays_on_the_login_page(page, live_server, personas):
    page.goto(f"{live_server.url}/login/")
    page.get_by_label("Username").fill("lead")
    page.get_by_label("Password").fill("wrong")
    page.get_by_role("button", name="Log in").click()
    assert page.get_by_role("alert").is_visible()
    assert "/login/" in page.url
