"""The N-way compare page in Chromium at a phone's width: the page itself does not scroll
sideways, the wide tables scroll inside their boxes, and picking works without errors."""

import pytest
from playwright.sync_api import expect

from tests.judgments.test_browser_grading import log_in
from tests.metrics.test_compare_many import trio  # noqa: F401 - the fixture

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.mark.slow_reason("compares several evaluations in Chromium at two sizes")
def test_the_page_fits_a_phone_with_a_card_per_keyword(page, live_server, personas,
                                                       trio):  # noqa: F811
    a, b, c = trio
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.set_viewport_size({"width": 390, "height": 844})
    log_in(page, live_server, "lead")
    page.goto(f"{live_server.url}/compare/many/")
    for evaluation in (a, b, c):
        page.locator(f"#pick-{evaluation.pk}").check()
    page.get_by_label(f"{a.name} as the reference").check()
    page.get_by_role("button", name="Compare", exact=True).click()
    expect(page.get_by_test_id("many-keywords")).to_be_visible()
    expect(page.get_by_test_id("changed-count")).to_contain_text("2 of 3 keywords changed")
    widths = page.evaluate("""() => ({
        page: document.documentElement.scrollWidth,
        box: document.querySelector('[data-testid=many-keywords]').parentElement.clientWidth,
        table: document.querySelector('[data-testid=many-keywords]').scrollWidth})""")
    assert widths["page"] <= 390, widths
    # A card per keyword (table.stack): nothing scrolls sideways, not even inside the box.
    assert widths["table"] <= widths["box"] <= 390, widths
    page.get_by_role("link", name="Changed only").click()
    expect(page.locator("[data-keyword=k2]")).to_have_count(0)
    assert errors == []
