"""The compare page in Chromium: keywords by the largest absolute change, reordered by the
metric chosen in the page, and the metrics only one side has named."""

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.judgments.test_browser_grading import log_in
from tests.metrics.test_compare_order import BY_LARGEST, BY_NDCG, build_tied_pair

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def shot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"metrics-compare-{name}.png"), full_page=True)


def test_keywords_follow_the_largest_change_and_the_chosen_metric(page, live_server,
                                                                 personas):
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    a, b = build_tied_pair(personas.team)
    log_in(page, live_server, "lead")
    page.goto(f"{live_server.url}/compare/?a={a.pk}&b={b.pk}")
    expect(page.get_by_test_id("unshared-metrics")).to_have_text(
        "Not compared, configured on one side only: only A has ERR@10; only B has RR@10. "
        "A metric is shared when its code, k and parameters match.")
    keyword_links = page.get_by_test_id("keyword-comparison").locator("tbody tr td:first-child")
    expect(keyword_links).to_have_text(BY_LARGEST)
    # The cell that moved most is marked: nDCG@10 for beta (the second metric column).
    expect(page.get_by_test_id("keyword-comparison").locator("tbody tr").first
           .locator("td[data-largest]")).to_contain_text("(-0.400)")
    expect(page.get_by_label("Order by the absolute change of")).to_have_value("")
    expect(page.get_by_test_id("sorted-by")).to_have_text(
        "Largest absolute change of any metric both have first (in bold), then the lowest RBO.")
    shot(page, "1-largest-change")

    page.get_by_label("Order by the absolute change of").select_option(label="nDCG@10")
    page.wait_for_url(re.compile(r"metric=1"))
    expect(keyword_links).to_have_text(BY_NDCG)
    expect(page.get_by_test_id("sorted-by")).to_contain_text(
        "Largest absolute change of nDCG@10 first")
    shot(page, "2-by-ndcg")

    page.get_by_label("Order by the absolute change of").select_option(label="P@10")
    page.wait_for_url(re.compile(r"metric=0"))
    expect(keyword_links).to_have_text(BY_LARGEST)  # P@10 ties: the largest change decides
    assert errors == []
