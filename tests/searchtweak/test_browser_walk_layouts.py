"""The pages a walk of the demo found hard to use, at the two sizes people use them.

At 390 px (a phone) Compare, Compare many, Feedback, Triage, Judges, an evaluation's judge
runs, a keyword's results, a judge's calibration, the team dashboard's recent evaluations
and the lists of evaluations, models, query sets, endpoints and a team's members need no
sideways scrolling, neither of the page nor of a row inside its table's box: their tables
are a card per row (`table.stack`, static/css/app.css and static/js/app.js), and the
Feedback actions (Set, Make gold, Reset) and Adjudicate sit inside the screen. At 1366 px
(a laptop) the main menu is one line for an admin, a lead and a grader, the judges' trust
bar keeps its inputs on one line whatever the length of their help, and a result's
thumbnail keeps its size beside long fields.
"""

import pytest
from playwright.sync_api import expect

from judges.models import JudgeRun
from judgments.models import FeedbackSlot
from tests.judges.calibration_data import make_judge
from tests.searchtweak.test_browser_small_screens import (
    ARTIFACTS,
    LAPTOP,
    PHONE,
    SETTLED,
    Ids,
    Visitor,
)
from tests.searchtweak.test_browser_small_screens import demo as demo

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Every box on the page that is wider inside than it shows: the page itself and any
# element that scrolls sideways (a table's box).
SIDEWAYS = """() => {
  const wide = [];
  const root = document.documentElement;
  if (root.scrollWidth > root.clientWidth) wide.push("page " + root.scrollWidth);
  for (const e of document.querySelectorAll("body *")) {
    const scrolls = ["auto", "scroll"].includes(getComputedStyle(e).overflowX);
    if (scrolls && e.scrollWidth > e.clientWidth + 1)
      wide.push((e.querySelector("[data-testid]") || e).getAttribute("data-testid") + " "
                + e.scrollWidth + ">" + e.clientWidth);
  }
  return wide;
}"""


def _shadow_answer(demo: Ids):
    # A shadow judge disagrees with the people on one result: triage lists it.
    from judges.models import JudgeRunItem

    slot = (FeedbackSlot.objects.filter(evaluation=demo.evaluation, grade__isnull=False,
                                        user__is_judge=False).order_by("pk").first())
    shade = make_judge(demo.evaluation.team, "Shade")
    run = JudgeRun.objects.create(judge=shade, evaluation=demo.evaluation,
                                  mode=JudgeRun.Mode.SHADOW, status=JudgeRun.Status.DONE)
    JudgeRunItem.objects.create(run=run, snapshot_id=slot.snapshot_id,
                                keyword_id=slot.keyword_id, status=JudgeRunItem.Status.DONE,
                                grade=(slot.grade + 1) % 4, reason="shadow")
    return shade


def _visit(visitor: Visitor, url: str) -> None:
    visitor.page.goto(f"{visitor.base}{url}")
    if not visitor.page.evaluate(SETTLED):
        visitor.page.wait_for_function(SETTLED)


def _inside(locator, width: int) -> None:
    for index in range(locator.count()):
        box = locator.nth(index).bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width, box


@pytest.mark.slow_reason("four wide pages as a lead on a phone in Chromium")
def test_wide_pages_need_no_sideways_scrolling_on_a_phone(browser, live_server, demo):
    shade = _shadow_answer(demo)
    visitor = Visitor(browser, live_server, "lead")
    page = visitor.page
    assert page.viewport_size == PHONE
    pair = f"a={demo.earlier.pk}&b={demo.evaluation.pk}"
    evaluation = demo.evaluation.pk
    pages = {
        "compare": (f"/compare/?{pair}", "metric-comparison"),
        "compare-many": (f"/compare/many/?evaluation={demo.earlier.pk}"
                         f"&evaluation={evaluation}", "many-keywords"),
        "feedback": (f"/feedback/evaluations/{evaluation}/", "feedback-table"),
        "triage": (f"/evaluations/{evaluation}/triage/", "triage"),
        "judges": ("/judges/", "judges"),
        "judge-runs": (f"/evaluations/{evaluation}/judge-runs/", "judge-run-table"),
        "keyword": (f"/keywords/{demo.keyword.pk}/", "snapshots"),
        "calibration": (f"/judges/{shade.pk}/calibration/?evaluation={evaluation}",
                        "metric-calibration"),
        "dashboard": ("/dashboard/", "recent-evaluations"),
        "evaluations": ("/evaluations/", "evaluation-list"),
        "models": ("/models/", "model-list"),
        "query-sets": ("/query-sets/", "query-sets"),
        "endpoints": ("/endpoints/", "endpoint-list"),
        "team": (f"/teams/{demo.evaluation.team_id}/", "members"),
    }
    for name, (url, table) in pages.items():
        _visit(visitor, url)
        rows = page.get_by_test_id(table).locator("tbody tr")
        expect(rows.first).to_be_visible()
        assert page.evaluate(SIDEWAYS) == [], name
        # A card per row: each cell says which column it is.
        assert rows.first.locator("td").first.get_attribute("data-label"), name
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"walk-{name}-390.png"), full_page=True)
        if name == "feedback":
            for label in ("Set", "Make gold", "Reset"):
                _inside(rows.first.get_by_role("button", name=label, exact=True),
                        PHONE["width"])
        if name == "triage":
            expect(page.get_by_test_id("shadow-grades").filter(has_text="Shade")).to_have_count(1)
            _inside(rows.first.get_by_role("button", name="Adjudicate"), PHONE["width"])


@pytest.mark.slow_reason("the main menu as three roles on a laptop in Chromium")
def test_the_main_menu_is_one_line_on_a_laptop_for_every_role(browser, live_server, demo):
    for username in ("admin", "lead", "grader1"):
        visitor = Visitor(browser, live_server, username)
        page = visitor.page
        page.set_viewport_size(LAPTOP)
        _visit(visitor, "/dashboard/")
        expect(page.get_by_test_id("bell")).to_be_visible()
        tops = page.evaluate("""() => Array.from(document.querySelectorAll(
            '.mainnav > *, .session > *')).map(e => Math.round(e.getBoundingClientRect().top
            + e.getBoundingClientRect().height / 2))""")
        assert max(tops) - min(tops) <= 4, (username, tops)
        assert page.evaluate("document.documentElement.scrollWidth") <= LAPTOP["width"]
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"walk-menu-{username}-1366.png"))
        if username == "lead":
            # A keyword's results: the thumbnail keeps its 48 px beside long fields.
            _visit(visitor, f"/keywords/{demo.keyword.pk}/")
            thumb = page.get_by_test_id("snapshots").locator("img.thumb").first
            assert round(thumb.bounding_box()["width"]) == 48
        if username == "admin":
            # The trust bar's fields carry help of different lengths: their inputs and the
            # button stay on one line, not pushed up by the longest help.
            _visit(visitor, "/judges/")
            form = page.get_by_test_id("trust-policy").locator("form")
            tops = [round(box["y"]) for box in (
                form.locator(selector).nth(index).bounding_box()
                for selector in ("input:not([type=hidden])", "button")
                for index in range(form.locator(selector).count()))]
            assert len(tops) == 5 and max(tops) - min(tops) <= 4, tops
        visitor.context.close()
