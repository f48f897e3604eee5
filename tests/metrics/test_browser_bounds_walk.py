"""A walk through bounds in a real Chromium: a lead watches an evaluation's bounds narrow as a
grader grades by keyboard, and the compare with a worse evaluation turns decided before
every result is graded. Screenshots in tests/artifacts/bounds-walk-*.png."""

from pathlib import Path

import pytest
from playwright.sync_api import expect

from evaluations.models import EvaluationMetric, Keyword
from metrics.tasks import mark_fetched_dirty
from tests.judgments.builders import evaluation_with_slots
from tests.judgments.test_browser_grading import keys_ready, log_in, press_and_wait
from tests.metrics.builders import set_grades, slot

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
DESKTOP = {"width": 1366, "height": 900}
PHONE = {"width": 390, "height": 844}
TEXTS = ["boots", "tents"]

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def shot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"bounds-walk-{name}.png"), full_page=True)


def fetched_evaluation(team, doc_ids=None):
    """Graded scale, one slot, P@3 (graded -> binary: 0 -> 0, 1..3 -> 1), its keywords
    announced as fetched (their bounds computed before any grade, as after a real fetch)."""
    evaluation = evaluation_with_slots(team, keywords=2, positions=3, texts=TEXTS,
                                       doc_ids=doc_ids)
    EvaluationMetric.objects.create(evaluation=evaluation, code="precision", k=3, position=0)
    for keyword in Keyword.objects.filter(evaluation=evaluation):
        mark_fetched_dirty(keyword.pk, evaluation.pk, True)
    return evaluation


@pytest.mark.timeout(300)
@pytest.mark.slow_reason("a lead and a grader in two Chromium contexts until the compare decides")
def test_a_lead_watches_bounds_narrow_and_the_compare_decide(browser, live_server, personas):
    # Other documents than after's: identical rankings could not differ.
    before = fetched_evaluation(personas.team, doc_ids=["old-1", "old-2", "old-3"])
    after = fetched_evaluation(personas.team)
    set_grades([personas.lead], [(slot(before, text, position), 0)
                                 for text in TEXTS for position in (1, 2, 3)])

    lead = browser.new_context(viewport=DESKTOP).new_page()
    log_in(lead, live_server, "lead")
    dashboard = f"{live_server.url}/dashboard/evaluations/{after.pk}/"
    lead.goto(dashboard)
    # Nothing graded: each keyword's P@3 can end anywhere in 0 .. 1.
    card = lead.locator("[data-metric]").first
    expect(card.get_by_test_id("bounds")).to_have_text("(0.0000\u20131.0000)")
    shot(lead, "1-nothing-graded")

    grader = browser.new_context(viewport=PHONE).new_page()
    log_in(grader, live_server, "grader")
    grader.goto(f"{live_server.url}/grade/evaluations/{after.pk}/")
    keys_ready(grader)
    press_and_wait(grader, "3", mine=1)
    lead.reload()
    # boots: position 1 relevant, 2 and 3 open → 1/3 .. 3/3; tents 0 .. 1.
    expect(card.get_by_test_id("bounds")).to_have_text("(0.1667\u20131.0000)")
    for mine in (2, 3):
        press_and_wait(grader, "3", mine=mine)
    shot(grader, "2-grader-phone")
    lead.reload()
    # boots closed at 1; tents still 0 .. 1: the mean's bounds (1 + 0) / 2 .. (1 + 1) / 2.
    expect(card.get_by_test_id("bounds")).to_have_text("(0.5000\u20131.0000)")
    shot(lead, "3-half-graded")

    lead.goto(f"{live_server.url}/compare/?a={before.pk}&b={after.pk}")
    decision = lead.get_by_test_id("decision").first
    expect(decision).to_have_text(
        "Decided: B is better than A whatever the 3 ungraded results turn out to be.")
    shot(lead, "4-compare-decided")
    lead.set_viewport_size(PHONE)
    expect(decision).to_be_visible()
    shot(lead, "5-compare-decided-phone")
