"""Every page on a phone (390x844) and a laptop (1366x900), as each role of the demo team.

The pages come from the URL conf, so a new page is visited without anyone listing it:
every pattern outside the API and Django's admin whose GET answers a whole HTML page
(a POST-only action answers 405, a download or a partial is not a page). A pattern whose
arguments this module cannot fill fails test_every_page_pattern_can_be_filled.

On every page the document must not be wider than the viewport
(`document.documentElement.scrollWidth`: a phone's browser widens its layout viewport, and
so `innerWidth`, to fit an overflowing page); wide tables scroll inside their own box. The
same walk holds every page to the strict Content-Security-Policy (tests/browser_policy.py):
the header, zero violations, no request to another host.
"""

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlencode

import pytest
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils import timezone
from playwright.sync_api import APIResponse, expect

from evaluations.models import Evaluation, Keyword
from evaluations.query_sets.services import query_set_create_from_evaluation
from judgments.models import FeedbackSlot, Transformer
from judgments.scale_writes import scale_create
from judgments.views import ITEM_SLOT, item_token
from notifications.delivery import unsubscribe_token
from notifications.models import Notification
from notifications.services import webhook_create
from schedules.services import schedule_create
from searchtweak.models import Role, User
from searchtweak.services import api_token_create, invitation_create
from sharing.services import share_link_create
from tests.browser_policy import PolicyWatch
from tests.demo_seed import seeded_demo
from tests.judges.run_builders import call_of, judge_of, run_of
from tests.metrics.builders import build_evaluation
from tests.table_copies import build_once

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
PHONE = {"width": 390, "height": 844}
LAPTOP = {"width": 1366, "height": 900}
DEMO_EVALUATION = "Demo: product search relevance"
# Apple's and Google's guidance for a finger: 44 px (iOS) / 48 dp (Android).
TAP_TARGET_PX = 44

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@dataclass
class Ids:
    evaluation: Evaluation
    earlier: Evaluation
    keyword: Keyword
    slot: FeedbackSlot
    values: dict[str, object]


def _demo() -> tuple[int, int, int, int, dict[str, object]]:
    """The seeded demo, half graded, with one of everything a page shows: an earlier
    evaluation to compare with, a team scale and transformer, an invitation, a token,
    a judge with a run and a logged call."""
    seeded_demo()
    evaluation = Evaluation.objects.get(name=DEMO_EVALUATION)
    team = evaluation.team
    users = {user.username: user for user in User.objects.filter(memberships__team=team)}
    slots = list(FeedbackSlot.objects.filter(evaluation=evaluation).order_by("pk"))
    now = timezone.now()
    # grader2 and grader3 graded half of the results; grader1 has all of theirs to do.
    graded = [slot for slot in slots[: len(slots) // 2] if slot.index < 2]
    for slot in graded:
        slot.grade, slot.graded_at = slot.pk % 4, now
        slot.user = users["grader2" if slot.index == 0 else "grader3"]
    FeedbackSlot.objects.bulk_update(graded, ["grade", "user", "graded_at"])
    held = next(slot for slot in reversed(slots) if slot.index == 2)
    # grader1 holds one slot: the slot page answers its holder only.
    FeedbackSlot.objects.filter(pk=held.pk).update(
        user=users["grader1"], assigned_at=now, lease_expires_at=now + timezone.timedelta(hours=1))
    from metrics.services import evaluation_metrics_recompute
    evaluation_metrics_recompute(evaluation_id=evaluation.pk)

    keyword = Keyword.objects.filter(evaluation=evaluation).order_by("pk").first()
    earlier = build_evaluation(team=team, scale="graded", strategy=3,
                               keywords={keyword.text: ["d1", "d2", "d3"]},
                               metrics=[("precision", 10, {}), ("ap", 10, {})],
                               status=Evaluation.Status.FINISHED)
    scale = scale_create(
        team=team, code="stars", name="Stars", lo=1, hi=2,
        labels={"1": {"label": "Bad", "color": "#d92d20"},
                "2": {"label": "Good", "color": "#079455"}})
    transformer = Transformer.objects.create(team=team, source="graded", target="binary",
                                             mapping={"0": 0, "1": 0, "2": 1, "3": 1})
    invitation = invitation_create(team=team, invited_by=users["admin"],
                                   invitee="newcomer@example.test", role=Role.GRADER)
    token, _ = api_token_create(user=users["grader1"], name="laptop")
    judge = judge_of(team, name="Sage")
    run = run_of(judge, evaluation, started_by=users["lead"])
    call = call_of(judge, run=run)
    # The judge's account disagrees with grader2 on a few results: the triage page has rows.
    first_grades = {slot.snapshot_id: slot.grade for slot in graded if slot.index == 0}
    for slot in [slot for slot in slots if slot.index == 2 and slot.pk != held.pk
                 and slot.snapshot_id in first_grades][:5]:
        FeedbackSlot.objects.filter(pk=slot.pk).update(
            user=judge.user, grade=(first_grades[slot.snapshot_id] + 1) % 4, graded_at=now)
    query_set = query_set_create_from_evaluation(evaluation=evaluation,
                                                 created_by=users["lead"], name="Demo keywords")
    schedule = schedule_create(
        team=team, created_by=users["lead"], name="Nightly demo", model=evaluation.model,
        query_set=query_set, scale="graded", strategy=1, interval_minutes=60,
        metrics=[{"code": "ndcg", "k": 10, "params": {}}], baseline="first")
    webhook, _ = webhook_create(team=team, created_by=users["admin"],
                                url="https://hooks.example.test/services/T000/B000/XXXX",
                                events=["evaluation_finished", "run_regressed"])
    for user in users.values():
        Notification.objects.create(user=user, team=team, event="evaluation_finished",
                                    text=f"Evaluation “{DEMO_EVALUATION}” finished (by hand).",
                                    url=f"/evaluations/{evaluation.pk}/")
    share_link, share_token = share_link_create(evaluation=evaluation, created_by=users["lead"],
                                                days=7)
    values = {
        "link_id": share_link.pk, "shared:token": share_token,
        "evaluation_id": evaluation.pk, "other_id": earlier.pk, "keyword_id": keyword.pk,
        "snapshot_id": held.snapshot_id, "slot_id": held.pk, "scale_id": scale.pk,
        "transformer_id": transformer.pk, "user_id": users["grader1"].pk,
        "team_id": team.pk, "membership_id": users["grader1"].memberships.get(team=team).pk,
        "token_id": token.pk, "judge_id": judge.pk, "run_id": run.pk, "call_id": call.pk,
        "endpoint_id": evaluation.model.endpoint_id, "model_id": evaluation.model_id,
        "action": "start", "query_set_id": query_set.pk, "schedule_id": schedule.pk,
        "webhook_id": webhook.pk,
        # The guide's page with the widest content: code blocks of CI configuration.
        "page:name": "verdicts",
        "notification_id": Notification.objects.filter(user=users["admin"]).first().pk,
        "notification_unsubscribe:token": unsubscribe_token(user_id=users["admin"].pk,
                                                            event="run_regressed"),
        "invitation_detail:token": invitation.token,
        "password_reset_confirm:uidb64": "MQ", "password_reset_confirm:token": "not-a-token",
        # The grading page's address of grader1's held slot (judgments.views.item_token).
        "item:token": item_token(ITEM_SLOT, held.pk),
        "item_skip:token": item_token(ITEM_SLOT, held.pk),
    }
    return evaluation.pk, earlier.pk, keyword.pk, held.pk, values


def _queries(ids: Ids) -> dict[str, dict]:
    """Query strings that make a page show its content rather than its empty form."""
    pair = {"a": ids.earlier.pk, "b": ids.evaluation.pk}
    return {
        "metrics:compare": pair,
        "metrics:compare_keyword": {**pair, "keyword": ids.keyword.text},
        "metrics:compare_many": {"evaluation": [ids.earlier.pk, ids.evaluation.pk]},
        "judges:calibration": {"evaluation": ids.evaluation.pk},
        # A keyset page of the keyword table (Next's link: after a keyword, page 2).
        "metrics:evaluation_dashboard_table": {"after": ids.keyword.pk, "page": 2},
        "judges:run_estimate": {"judge": ids.values["judge_id"], "mode": "shadow"},
        "sharing:share_create": {"evaluation": ids.evaluation.pk},
    }


def _patterns(patterns=None, namespaces: tuple[str, ...] = (), prefix: str = "",
              ) -> Iterator[tuple[str, str]]:
    """(name as reverse() wants it, route) of every named pattern."""
    for pattern in get_resolver().url_patterns if patterns is None else patterns:
        route = prefix + str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            inner = (*namespaces, pattern.namespace) if pattern.namespace else namespaces
            yield from _patterns(pattern.url_patterns, inner, route)
        elif isinstance(pattern, URLPattern) and pattern.name:
            yield ":".join((*namespaces, pattern.name)), route


def _is_page_candidate(name: str, route: str) -> bool:
    # The API answers JSON and Django's admin is not ours to lay out.
    return not (route.startswith("api/v1/") or route.startswith("admin/")
                or name == "api_schema")


def page_urls(ids: Ids) -> list[str]:
    urls = []
    queries = _queries(ids)
    for name, route in _patterns():
        if not _is_page_candidate(name, route):
            continue
        kwargs = {}
        for argument in re.findall(r"<(?:\w+:)?(\w+)>", route):
            bare = name.rsplit(":", 1)[-1]
            key = f"{bare}:{argument}"
            kwargs[argument] = ids.values[key] if key in ids.values else ids.values[argument]
        url = reverse(name, kwargs=kwargs)
        if name in queries:
            url += "?" + urlencode(queries[name], doseq=True)
        urls.append(url)
    return urls


def test_every_page_pattern_can_be_filled(db):
    # A new pattern with an argument nobody fills fails here, not silently in the browser.
    arguments = {argument for name, route in _patterns() if _is_page_candidate(name, route)
                 for argument in re.findall(r"<(?:\w+:)?(\w+)>", route)}
    known = {"evaluation_id", "other_id", "keyword_id", "snapshot_id", "slot_id", "scale_id",
             "transformer_id", "user_id", "team_id", "membership_id", "token_id", "judge_id",
             "run_id", "call_id", "endpoint_id", "model_id", "action", "token", "uidb64",
             "query_set_id", "webhook_id", "notification_id", "schedule_id", "name",
             "link_id"}
    assert arguments <= known, f"page arguments this test cannot fill: {arguments - known}"


class Visitor:
    def __init__(self, browser, live_server, username: str | None) -> None:
        self.base = live_server.url
        self.context = browser.new_context(viewport=PHONE, has_touch=True)
        self.policy = PolicyWatch(self.context, self.base)
        self.page = self.context.new_page()
        self.policy.watch(self.page)
        self.username = username
        if username:
            self.page.goto(f"{self.base}/login/")
            self.page.get_by_label("Username").fill(username)
            self.page.get_by_label("Password").fill("demo")
            self.page.get_by_role("button", name="Log in").click()
            self.page.wait_for_url(f"{self.base}/")

    def page_answer(self, url: str) -> APIResponse | None:
        """The answer to a GET of `url` when it is a whole HTML page; None for a redirect,
        a 405 for an action, a download or an htmx partial. Asked with the context's
        cookies, as the browser would ask."""
        response = self.context.request.get(f"{self.base}{url}", max_redirects=0)
        if response.status in (301, 302, 405):
            return None
        kind = response.headers.get("content-type", "")
        if kind.startswith("text/html") and "<!doctype html" in response.text()[:200].lower():
            return response
        return None

    def overflows(self, url: str, answer: APIResponse) -> list[str]:
        """The page at both sizes (the current size first, so each page loads once), and
        what it broke of the policy.

        The browser is given `answer` (the server's status, headers and body, as asked
        for by page_answer) instead of asking again, so the server renders each page once,
        not once to tell whether it is a page and again for the browser. Only the document
        is served so; its scripts, styles and fragments come from the live server."""
        sizes = [PHONE, LAPTOP] if self.page.viewport_size == PHONE else [LAPTOP, PHONE]
        address = f"{self.base}{url}"

        def the_document(requested: str) -> bool:
            return requested == address

        self.page.route(the_document, lambda route: route.fulfill(response=answer))
        try:
            response = self.page.goto(address)
        finally:
            self.page.unroute(the_document)
        # Settled: loaded, and no htmx fragment still on its way (one can widen the page).
        # An event, not networkidle's half second of quiet, which cost ~60 s a persona.
        if not self.page.evaluate(SETTLED):
            self.page.wait_for_function(SETTLED)
        where = f"{self.username} {url}"
        problems = self.policy.header_problems(response, where)
        problems += self.policy.problems(self.page, where)
        for viewport in sizes:
            self.page.set_viewport_size(viewport)
            width = self.page.evaluate("document.documentElement.scrollWidth")
            if width > viewport["width"]:
                widest = self.page.evaluate(WIDEST_ELEMENT, viewport["width"])
                problems.append(f"{self.username} {url} at {viewport['width']}: "
                                f"{width} px wide ({widest})")
        return problems

    def shot(self, name: str) -> None:
        ARTIFACTS.mkdir(exist_ok=True)
        self.page.screenshot(path=str(ARTIFACTS / name), full_page=True)


# The parts of a document that differ between two answers to the same request.
PER_ANSWER = re.compile(rb'name="csrfmiddlewaretoken" value="[^"]*"|nonce="[^"]*"')


def same_page_key(answer: APIResponse) -> tuple:
    """What makes two answers one page to the browser: status, the headers the policy
    reads, and the document without its per-answer tokens."""
    headers = answer.headers
    return (answer.status, headers.get("content-security-policy"),
            headers.get("content-type"), PER_ANSWER.sub(b"", answer.body()))


SETTLED = '() => document.readyState === "complete" && !document.querySelector(".htmx-request")'


# For the failure message: the innermost elements that stick out on the right, leaving out
# those a scrolling box (a table's) keeps inside itself.
WIDEST_ELEMENT = """(limit) => {
  const scrolls = (e) => ["auto", "scroll", "hidden"].includes(getComputedStyle(e).overflowX);
  const contained = (e) => { for (let a = e.parentElement; a; a = a.parentElement) {
    if (scrolls(a)) return a.getBoundingClientRect().right <= limit; } return false; };
  return Array.from(document.querySelectorAll("body *"))
    .filter((e) => e.getBoundingClientRect().right > limit && !contained(e)
      && !Array.from(e.children).some((c) => c.getBoundingClientRect().right > limit))
    .slice(0, 3).map((e) => e.tagName.toLowerCase() + (e.className ? "." + e.className : "")
      + " right=" + Math.round(e.getBoundingClientRect().right)).join(", ");
}"""


@pytest.fixture
def demo() -> Ids:
    # Built once per test process (tests.table_copies): every key is the same each time.
    evaluation, earlier, keyword, slot, values = build_once("small screens demo", _demo)
    return Ids(Evaluation.objects.get(pk=evaluation), Evaluation.objects.get(pk=earlier),
               Keyword.objects.get(pk=keyword), FeedbackSlot.objects.get(pk=slot), values)


@pytest.mark.timeout(900)
@pytest.mark.slow_reason("walks every page of the URL conf as one persona, at two sizes, "
                        "under the Content-Security-Policy")
@pytest.mark.parametrize("username", ["admin", "lead", "grader1", "viewer", None])
def test_every_page_fits_a_phone_and_a_laptop_under_the_policy(browser, live_server, demo,
                                                                username):
    visitor = Visitor(browser, live_server, username)
    visited, problems, seen = 0, [], set()
    for url in page_urls(demo):
        answer = visitor.page_answer(url)
        if answer is None:
            continue
        visited += 1
        # A page the server answered exactly as one already walked (status, policy and
        # document alike: most often the refusal page, the same for many patterns) lays out
        # and keeps the policy as that one did.
        sameness = same_page_key(answer)
        if sameness in seen:
            continue
        seen.add(sameness)
        problems += visitor.overflows(url, answer)
    assert problems == []
    # Logged in, most of the ~60 pages are pages; logged out, the login and reset pages.
    assert visited >= (40 if username else 5), visited


def test_the_nav_collapses_into_a_menu_on_a_phone(browser, live_server, demo):
    visitor = Visitor(browser, live_server, "admin")
    page = visitor.page
    page.goto(f"{visitor.base}/dashboard/")
    menu = page.get_by_role("button", name="Menu")
    log_out = page.get_by_role("button", name="Log out")
    expect(menu).to_be_visible()
    expect(menu).to_have_attribute("aria-expanded", "false")
    expect(page.get_by_role("link", name="Evaluations", exact=True)).to_be_hidden()
    expect(log_out).to_be_hidden()
    visitor.shot("small-nav-closed-390.png")

    menu.tap()
    expect(menu).to_have_attribute("aria-expanded", "true")
    expect(log_out).to_be_visible()
    box = log_out.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"], box
    assert box["height"] >= TAP_TARGET_PX, box
    evaluations = page.get_by_role("link", name="Evaluations", exact=True)
    expect(evaluations).to_be_visible()
    assert evaluations.bounding_box()["height"] >= TAP_TARGET_PX
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    visitor.shot("small-nav-open-390.png")
    evaluations.tap()
    page.wait_for_url(f"{visitor.base}/evaluations/")
    # A new page starts with the menu closed.
    expect(page.get_by_role("button", name="Menu")).to_have_attribute("aria-expanded", "false")

    # On a laptop the links are all there and there is no menu button.
    page.set_viewport_size(LAPTOP)
    expect(page.get_by_role("button", name="Menu")).to_be_hidden()
    expect(page.get_by_role("button", name="Log out")).to_be_visible()
    expect(page.get_by_role("link", name="Evaluations", exact=True)).to_be_visible()
    visitor.shot("small-nav-1366.png")


@pytest.mark.slow_reason("grades by touch on three phone sizes in Chromium")
def test_a_grader_grades_by_touch_on_a_phone(browser, live_server, demo):
    visitor = Visitor(browser, live_server, "grader1")
    page = visitor.page
    page.goto(f"{visitor.base}/grade/evaluations/{demo.evaluation.pk}/")
    expect(page.get_by_test_id("document-name")).to_be_visible()
    buttons = page.locator(".grade-button")
    expect(buttons).to_have_count(4)
    for index in range(4):
        box = buttons.nth(index).bounding_box()
        assert box["height"] >= TAP_TARGET_PX, box
        assert box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"], box
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    visitor.shot("small-grade-390.png")
    # The narrowest and widest phones too.
    for width in (360, 430):
        page.set_viewport_size({"width": width, "height": 800})
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        right = max(box["x"] + box["width"] for box in
                    (buttons.nth(index).bounding_box() for index in range(4)))
        assert right <= width
    page.set_viewport_size(PHONE)

    first = page.get_by_test_id("document-name").inner_text()
    mine = int(page.get_by_test_id("mine-count").inner_text())
    page.get_by_role("button", name=re.compile(r"\b2\b.*Good")).tap()
    expect(page.get_by_test_id("mine-count")).to_have_text(str(mine + 1))
    expect(page.get_by_test_id("document-name")).not_to_have_text(first)
    assert FeedbackSlot.objects.filter(evaluation=demo.evaluation, user__username="grader1",
                                       grade=2).count() == 1
    visitor.shot("small-grade-next-390.png")

    # Back to the graded result: the re-grading badge sits under the heading, not in it.
    page.get_by_role("link", name=re.compile("Previous result")).tap()
    badge = page.get_by_test_id("regrade")
    expect(badge).to_contain_text("you gave 2 Good")
    for viewport in (PHONE, LAPTOP):
        page.set_viewport_size(viewport)
        heading = page.get_by_test_id("keyword").bounding_box()
        badge_box = badge.bounding_box()
        assert badge_box["y"] >= heading["y"] + heading["height"], (viewport, heading, badge_box)
        assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"]
        visitor.shot(f"small-grade-regrade-{viewport['width']}.png")


def test_the_dashboard_reads_on_a_phone(browser, live_server, demo):
    visitor = Visitor(browser, live_server, "lead")
    visitor.page.goto(f"{visitor.base}/dashboard/evaluations/{demo.evaluation.pk}/")
    expect(visitor.page.get_by_test_id("metric-cards")).to_be_visible()
    assert visitor.page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    # The keyword table scrolls inside its own box.
    table = visitor.page.get_by_test_id("keyword-table")
    scroller = table.evaluate(
        "t => { const s = t.closest('.table-scroll'); return s && getComputedStyle(s).overflowX }")
    assert scroller == "auto"
    visitor.shot("small-dashboard-390.png")
