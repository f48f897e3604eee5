"""Chromium switches the evaluation dashboard between segments on a laptop (1366x900) and a
phone (390x844): the choice lands in the URL, the cards follow it, and the table of every
metric by segment fits the window (a card per metric on the phone). Screenshots of the
segment table go to tests/artifacts/ (and SHOTS_DIR, when set)."""

import os
from pathlib import Path

import pytest
from playwright.sync_api import expect

from evaluations.models import Evaluation, Keyword
from metrics import queries
from metrics.services import evaluation_metrics_recompute
from searchtweak.models import User
from tests.browser_policy import PolicyWatch
from tests.demo_seed import seeded_demo
from tests.metrics.test_dashboard_browser import _grade_all, _login
from tests.table_copies import build_once

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
SIZES = {"laptop": {"width": 1366, "height": 900}, "phone": {"width": 390, "height": 844}}
DEMO_EVALUATION = "Demo: product search relevance"

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _build() -> int:
    """The demo evaluation, 70% graded, its 50 keywords weighted and tagged: a traffic
    segment each, a language each and an intent on some (six tags)."""
    seeded_demo()
    evaluation = Evaluation.objects.get(name=DEMO_EVALUATION)
    for keyword in Keyword.objects.filter(evaluation=evaluation):
        rank = keyword.position
        segment = "head" if rank <= 5 else "torso" if rank <= 15 else "tail"
        tags = [segment, "lang:de" if rank % 3 == 0 else "lang:en"]
        if rank % 4 == 0:
            tags.append("intent:navigational")
        Keyword.objects.filter(pk=keyword.pk).update(weight=max(0, 600 // rank - 5),
                                                     tags=sorted(tags))
    # Written past the keyword services: the sums are rebuilt with the tags by the run.
    queries.metric_sums_forget(evaluation_id=evaluation.pk)
    graders = [User.objects.get(username=f"grader{i}") for i in (1, 2, 3)]
    _grade_all(evaluation, graders, seed=4, share=0.7)
    evaluation_metrics_recompute(evaluation_id=evaluation.pk)
    return evaluation.pk


def _fits(page) -> tuple[float, float, int]:
    """The segment table's box width, the window's width, and the document's scroll width."""
    box = page.get_by_test_id("segment-table").bounding_box()
    return box["width"], page.evaluate("window.innerWidth"), page.evaluate(
        "document.documentElement.scrollWidth")


def _shot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    table = page.get_by_test_id("segment-table")
    table.screenshot(path=str(ARTIFACTS / name))
    if os.environ.get("SHOTS_DIR"):
        Path(os.environ["SHOTS_DIR"]).mkdir(parents=True, exist_ok=True)
        table.screenshot(path=str(Path(os.environ["SHOTS_DIR"]) / name))


@pytest.mark.slow_reason("the tagged demo's dashboard in Chromium at two sizes")
def test_switching_segments_on_a_laptop_and_a_phone(browser, live_server):
    evaluation_id = build_once("dashboard segments demo", _build)
    problems: list[str] = []
    for name, size in SIZES.items():
        context = browser.new_context(viewport=size)
        watch = PolicyWatch(context, live_server.url)
        page = context.new_page()
        watch.watch(page)
        try:
            _login(page, live_server)
            page.goto(f"{live_server.url}/dashboard/evaluations/{evaluation_id}/")
            table = page.get_by_test_id("segment-table")
            expect(table.locator("thead th")).to_have_text(
                ["Metric", "All keywords", "head", "torso", "tail", "intent:navigational",
                 "lang:de", "lang:en"])
            width, window, document = _fits(page)
            assert width <= window and document <= window, (name, width, window, document)
            _shot(page, f"segment-table-{size['width']}.png")
            # Choosing a segment shows it at once (the selector submits itself).
            page.locator("#id_segment").select_option("tail")
            page.wait_for_url("**segment=tail**")
            cards = page.get_by_test_id("metric-cards")
            expect(cards.get_by_test_id("card-count").first).to_contain_text("tagged tail")
            expect(page.get_by_test_id("table-segment")).to_have_text("tagged tail")
            page.locator("#id_weighted").check()
            page.wait_for_url("**weighted=1**")
            expect(cards.get_by_test_id("card-weight").first).to_contain_text("Σ weight")
            assert "segment=tail" in page.url
            if name == "laptop":
                # A heading of the segment table shows its segment, keeping the weights.
                table.get_by_role("link", name="lang:de").click()
            else:
                # On a phone the table is a card per metric, its headings beside each
                # line: the selector above chooses.
                page.locator("#id_segment").select_option("lang:de")
            page.wait_for_url("**segment=lang%3Ade**")
            assert "weighted=1" in page.url
            expect(page.get_by_test_id("segment-shown")).to_contain_text(
                "keywords tagged lang:de, weighted by traffic")
            width, window, document = _fits(page)
            assert width <= window and document <= window, (name, width, window, document)
            _shot(page, f"segment-table-{size['width']}-lang-de-weighted.png")
            page.screenshot(path=str(ARTIFACTS / f"dashboard-segment-{size['width']}.png"),
                            full_page=True)
            problems += watch.problems(page, f"{name} dashboard")
        finally:
            context.close()
    assert problems == []
