"""On a phone (390 px): the bell shows the unread count once its fragment arrives, the
list marks read, the choices save, and an admin adds a webhook, sees its secret once and
sends a test; no page is wider than the screen."""

from pathlib import Path

import pytest
from playwright.sync_api import expect

from notifications.models import Notification, Webhook
from tests.evaluations.servers import Reply, running_server
from tests.searchtweak.factories import PASSWORD

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
PHONE = {"width": 390, "height": 844}

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _fits(page) -> None:
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"], page.url


def _shot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"notifications-{name}.png"), full_page=True)


@pytest.mark.slow_reason("a notifications story on a phone in Chromium")
def test_notifications_and_webhooks_on_a_phone(browser, live_server, personas, settings):
    settings.WEBHOOK_RETRY_BACKOFF_MS = 1
    for n in range(3):
        Notification.objects.create(user=personas.admin, team=personas.team,
                                    event="run_regressed", text=f"nDCG@10 fell on run {n}")
    context = browser.new_context(viewport=PHONE, has_touch=True)
    page = context.new_page()
    base = live_server.url
    page.goto(f"{base}/login/")
    page.get_by_label("Username").fill("admin")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{base}/")

    # The bell's count arrives after the page, from its fragment.
    expect(page.get_by_test_id("bell-count")).to_have_text("3")
    page.goto(f"{base}/notifications/")
    expect(page.get_by_test_id("notification")).to_have_count(3)
    _fits(page)
    _shot(page, "list")
    page.get_by_role("button", name="Mark read").first.click()
    expect(page.get_by_role("button", name="Mark read")).to_have_count(2)
    page.get_by_test_id("read-all").click()
    expect(page.get_by_role("button", name="Mark read")).to_have_count(0)
    expect(page.get_by_test_id("bell-count")).to_have_count(0)

    page.goto(f"{base}/notifications/preferences/")
    _fits(page)
    box = page.get_by_label("Run improved: E-mail")
    expect(box).not_to_be_checked()
    box.check()
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_text("Your notification choices were saved.")).to_be_visible()
    expect(page.get_by_label("Run improved: E-mail")).to_be_checked()
    _shot(page, "preferences")

    with running_server() as receiver:
        receiver.handler = lambda request: Reply(status=200, body={"ok": True})
        page.goto(f"{base}/teams/{personas.team.pk}/webhooks/")
        page.get_by_label("URL").fill(f"{receiver.url}/hook")
        page.get_by_label("Run regressed").check()
        page.get_by_role("button", name="Add webhook").click()
        expect(page.get_by_test_id("webhook-secret")).to_be_visible()
        _fits(page)
        _shot(page, "webhooks")
        page.get_by_role("link", name="Deliveries").click()
        page.get_by_test_id("send-test").click()
        expect(page.get_by_test_id("delivery-status")).to_have_text("Sent")
        _fits(page)
        _shot(page, "webhook-detail")
    assert [request.path for request in receiver.received] == ["/hook"]
    assert Webhook.objects.get().events == ["run_regressed"]
    context.close()
