"""The judgments page in a real Chromium: reached from the evaluation, paged with its filter."""

import json
from pathlib import Path

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from judgments.grading import feedback_submit
from judgments.queue import slot_claim_next
from tests.judgments.builders import evaluation_with_slots
from tests.judgments.test_browser_grading import log_in

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def shot(page, name: str, *, full_page: bool = True) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"judgments-feedback-{name}.png"), full_page=full_page)


@pytest.mark.slow_reason("pages through a keyword's judgments in Chromium")
def test_a_lead_opens_the_judgments_and_pages_through_one_keyword(page, live_server, personas):
    # 3 graders per result: the second keyword alone holds 40 x 3 = 120 slots.
    evaluation = evaluation_with_slots(personas.team, keywords=2, positions=40, strategy=3,
                                       name="Shoes Q3")
    slot = slot_claim_next(user=personas.grader, team=personas.team)
    feedback_submit(user=personas.grader, slot_id=slot.pk, grade=2, unsure=True,
                    note="Same shoe in another colour?")
    log_in(page, live_server, "lead")
    page.goto(f"{live_server.url}/evaluations/{evaluation.pk}/")
    page.get_by_test_id("judgments-link").click()
    page.wait_for_url(f"{live_server.url}/feedback/evaluations/{evaluation.pk}/")
    table = page.get_by_test_id("feedback-table")
    expect(table.locator("tbody tr")).to_have_count(100)
    first = table.locator(f'tr[data-slot-id="{slot.pk}"]')
    expect(first.get_by_test_id("unsure")).to_have_text("unsure")
    expect(first.get_by_test_id("note")).to_have_text("Same shoe in another colour?")
    shot(page, "1-first-page", full_page=False)

    # The JSON export is a file to save, named for the evaluation and the day.
    day = timezone.localdate().strftime("%Y%m%d")
    with page.expect_download() as download:
        page.get_by_test_id("exports").get_by_role("link", name="JSON", exact=True).click()
    assert download.value.suggested_filename == f"searchtweak-shoes-q3-judgments-{day}.json"
    assert json.loads(Path(download.value.path()).read_text())["name"] == "Shoes Q3"

    page.get_by_label("Keyword").select_option(label="2. query 2")
    page.get_by_role("button", name="Filter").click()
    expect(page.get_by_test_id("feedback-pager")).to_contain_text("Page 1 of 2 (120 slots)")
    page.get_by_role("link", name="Next →").click()
    expect(page.get_by_test_id("feedback-pager")).to_contain_text("Page 2 of 2")
    expect(table.locator("tbody tr")).to_have_count(20)
    expect(page.get_by_label("Keyword")).to_have_value(
        str(evaluation.keywords.get(position=2).pk))
    shot(page, "2-keyword-page-2")
