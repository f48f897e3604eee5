"""Acceptance: endpoint → model → evaluation in a real browser, fetched from the demo engine."""

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.searchtweak.factories import PASSWORD

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

KEYWORDS = ["running shoes", "cast iron skillet", "wireless headphones", "yoga mat",
            "camping tent", "desk lamp", "wool coat", "red sneakers"]


def shot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"evaluations-{name}.png"), full_page=True)


@pytest.mark.slow_reason("a whole setup story in Chromium: endpoint, model, "
                        "evaluation, a real fetch")
def test_a_team_configures_the_demo_engine_and_fetches_an_evaluation(page, live_server,
                                                                      personas):
    # Admins configure endpoints and models, and may lead evaluations (ROLE_RANK).
    page.goto(f"{live_server.url}/login/")
    page.get_by_label("Username").fill("admin")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{live_server.url}/")

    page.get_by_role("link", name="Endpoints").first.click()
    page.get_by_role("link", name="New endpoint").click()
    page.locator("#id_name").fill("Demo engine")
    page.get_by_label("URL").fill(f"{live_server.url}/demo/search")
    page.get_by_label("Mapper preset").select_option("json_list")
    expect(page.get_by_label("Document id")).to_have_value("id")  # filled by the preset
    page.get_by_label("Documents (JMESPath to the list)").fill("hits")
    page.get_by_label("Document name").fill("title")
    page.get_by_label("Document image (optional)").fill("image")
    page.get_by_label("Extra fields (optional)").fill("Category: category\nPrice: price")
    shot(page, "1-endpoint")
    page.get_by_role("button", name="Create endpoint").click()

    page.wait_for_url(re.compile(r"/models/new/\?endpoint=\d+$"))
    page.locator("#id_name").fill("Demo BM25")
    page.get_by_label("Endpoint").select_option(label="Demo engine")
    page.get_by_label("Query parameters").fill("q=#query#\nsize=10")
    shot(page, "2-model")
    page.get_by_role("button", name="Create search model").click()

    page.wait_for_url(re.compile(r"/models/\d+/test/$"))
    page.get_by_label("Query").fill("cast iron skillet")
    page.get_by_role("button", name="Run query").click()
    result = page.get_by_test_id("test-result")
    expect(result).to_contain_text("HTTP status")
    expect(result).to_contain_text("skillet")
    shot(page, "3-model-test")

    page.get_by_role("link", name="Create an evaluation with this model").click()
    page.locator("#id_name").fill("Browser evaluation")
    page.locator("#id_keywords").fill("\n".join([*KEYWORDS, "Yoga Mat", ""]))
    page.get_by_label("Strategy").select_option("3")
    shot(page, "4-evaluation-form")
    page.get_by_role("button", name="Create evaluation").click()

    page.wait_for_url(re.compile(r"/evaluations/\d+/$"))
    expect(page.get_by_text("Removed 1 duplicate.")).to_be_visible()
    expect(page.get_by_test_id("status")).to_have_text("Pending")
    page.get_by_role("button", name="Start").click()

    progress = page.get_by_role("progressbar", name="Keywords fetched")
    expect(progress).to_have_attribute("aria-valuenow", "100", timeout=60_000)
    expect(page.get_by_test_id("status")).to_have_text("Active")
    expect(page.get_by_test_id("fetch-summary")).to_contain_text(
        f"100 % · {len(KEYWORDS)} fetched · 0 failed · {len(KEYWORDS)} keywords")
    shot(page, "5-evaluation-fetched")

    page.get_by_role("link", name="cast iron skillet").click()
    snapshots = page.get_by_test_id("snapshots")
    expect(snapshots.locator("tbody tr")).to_have_count(10)
    expect(snapshots).to_contain_text("skillet")
    expect(snapshots.locator("img.thumb").first).to_be_visible()
    shot(page, "6-snapshots")
