"""The transformer form in a real Chromium: its rows follow the chosen source scale."""

from pathlib import Path

import pytest
from playwright.sync_api import expect

from judgments.models import Transformer
from tests.judgments.test_browser_grading import log_in

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def shot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"judgments-transformer-{name}.png"), full_page=True)


def test_changing_the_source_scale_rebuilds_the_rows(page, live_server, personas):
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    log_in(page, live_server, "admin")
    page.goto(f"{live_server.url}/transformers/edit/?source=graded&target=binary")
    rows = page.get_by_test_id("transformer-rows").locator("tbody tr")
    expect(rows).to_have_count(4)
    # With JavaScript the rows follow the selects; the reload button is not needed.
    expect(page.get_by_role("button", name="Show the grades of these scales")).to_be_hidden()
    shot(page, "1-graded")

    page.get_by_label("Source").select_option("detail")
    expect(rows).to_have_count(10)
    expect(rows.first).to_have_attribute("data-grade", "1")
    expect(rows.last).to_have_attribute("data-grade", "10")
    # The default detail -> binary (docs/METRICS.md) is preselected: 1 -> 0, 2..10 -> 1.
    expect(page.locator('select[name="grade_1"]')).to_have_value("0")
    expect(page.locator('select[name="grade_10"]')).to_have_value("1")
    expect(page).to_have_url(f"{live_server.url}/transformers/edit/?source=detail&target=binary")
    shot(page, "2-detail")

    page.get_by_label("Target").select_option("graded")
    expect(page.locator('select[name="grade_10"] option')).to_have_count(5)  # — and 0..3
    expect(page.locator('select[name="grade_10"]')).to_have_value("3")
    page.locator('select[name="grade_10"]').select_option("2")
    page.get_by_role("button", name="Save").click()
    page.wait_for_url(f"{live_server.url}/scales/")
    expect(page.get_by_test_id("transformers")).to_contain_text("detail → graded")
    stored = Transformer.objects.get(team=personas.team, source="detail", target="graded")
    assert stored.mapping == {"1": 0, "2": 1, "3": 1, "4": 1, "5": 2, "6": 2, "7": 2,
                              "8": 3, "9": 3, "10": 2}
    assert errors == []


def test_the_scale_form_help_shows_a_code_example(page, live_server, personas):
    log_in(page, live_server, "admin")
    page.goto(f"{live_server.url}/scales/new/")
    expect(page.locator("small.help code")).to_have_text("1 Bad #d92d20")
    shot(page, "3-scale-help")
