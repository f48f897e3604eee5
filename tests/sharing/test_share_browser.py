"""A lead shares the demo dashboard; a visitor with no account opens it on a laptop and a
phone and sees the metrics with nobody's name, then the revoked link's page."""

from pathlib import Path

import numpy as np
import pytest
from django.utils import timezone
from playwright.sync_api import expect

from evaluations.models import Evaluation
from judgments.models import FeedbackSlot
from metrics.services import evaluation_metrics_recompute
from searchtweak.models import User
from tests.browser_policy import PolicyWatch
from tests.demo_seed import seeded_demo
from tests.table_copies import build_once

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
SIZES = {"laptop": {"width": 1366, "height": 900}, "phone": {"width": 390, "height": 844}}
GRADERS = ("grader1", "grader2", "grader3")

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _graded_demo() -> int:
    seeded_demo()
    evaluation = Evaluation.objects.get(name="Demo: product search relevance")
    graders = [User.objects.get(username=name) for name in GRADERS]
    rng = np.random.default_rng(7)
    slots = list(FeedbackSlot.objects.filter(evaluation=evaluation))
    for slot in slots:
        if rng.random() < 0.7:
            slot.grade, slot.user = int(rng.integers(0, 4)), graders[slot.index]
            slot.graded_at = timezone.now()
    FeedbackSlot.objects.bulk_update(slots, ["grade", "user", "graded_at"])
    evaluation_metrics_recompute(evaluation_id=evaluation.pk)
    return evaluation.pk


@pytest.mark.slow_reason("seeds the demo, then a lead and a visitor in Chromium at two sizes")
def test_a_visitor_reads_a_shared_dashboard_with_no_names_until_it_is_revoked(
        browser, live_server):
    evaluation_id = build_once("share browser demo", _graded_demo)
    base = live_server.url
    lead = browser.new_context(viewport=SIZES["laptop"])
    page = lead.new_page()
    page.goto(f"{base}/login/")
    page.get_by_label("Username").fill("lead")
    page.get_by_label("Password").fill("demo")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{base}/")
    page.goto(f"{base}/dashboard/evaluations/{evaluation_id}/")
    # The lead sees the graders' names in an opened row: the check below is not vacuous.
    page.get_by_test_id("keyword-table").locator("summary").first.click()
    assert any(name in page.content() for name in GRADERS)
    page.get_by_test_id("share-link").click()
    page.get_by_label("Open for (days)").fill("3")
    page.get_by_test_id("make-link").click()
    url = page.get_by_test_id("share-url").input_value()
    assert url.startswith(f"{base}/s/")

    visitor = browser.new_context(viewport=SIZES["laptop"])
    policy = PolicyWatch(visitor, base)
    shared = visitor.new_page()
    policy.watch(shared)
    problems: list[str] = []
    for size, viewport in SIZES.items():
        shared.set_viewport_size(viewport)
        response = shared.goto(url)
        assert response.status == 200
        expect(shared.get_by_test_id("metric-cards")).to_be_visible()
        expect(shared.get_by_test_id("shared-note")).to_contain_text("Read-only dashboard")
        expect(shared.locator("nav.mainnav")).to_have_count(0)
        # Every link stays on the shared page (sorting, filters, pages of the table).
        hrefs = shared.eval_on_selector_all("a[href]", "links => links.map(a => a.href)")
        assert hrefs and not [href for href in hrefs if not href.startswith(url)]
        table = shared.get_by_test_id("keyword-table")
        table.locator("summary").first.click()
        expect(table.locator(".snapshot-list li").first).to_be_visible()
        # Nobody's grade: an opened row lists the results without a grade mark.
        expect(table.locator(".slot")).to_have_count(0)
        html = shared.content()
        assert not [name for name in (*GRADERS, "lead", "admin") if f">{name}<" in html
                    or f'"{name}"' in html or f"({name})" in html]
        width = shared.evaluate("document.documentElement.scrollWidth")
        assert width <= viewport["width"], f"{size}: {width} px wide"
        problems += policy.header_problems(response, f"shared {size}")
        problems += policy.problems(shared, f"shared {size}")
        ARTIFACTS.mkdir(exist_ok=True)
        shared.screenshot(path=str(ARTIFACTS / f"share-dashboard-{size}.png"), full_page=True)
    assert problems == []

    # The lead revokes it from the team's list; the visitor's next visit says so.
    page.get_by_role("link", name="The team's share links").click()
    expect(page.get_by_test_id("link-state").first).to_have_text("Active")
    page.get_by_test_id("revoke").first.click()
    expect(page.get_by_test_id("link-state").first).to_contain_text("Revoked by lead")
    response = shared.goto(url)
    assert response.status == 410
    expect(shared.get_by_test_id("link-gone")).to_contain_text("This share link was revoked")
    lead.close()
    visitor.close()
