"""The pages whose scripts do the most keep working under the strict
Content-Security-Policy, with zero violations: the team switcher (once an inline onchange)
and grading by keyboard; the API docs (Redoc, Swagger UI) are held to it where they are
rendered (tests/searchtweak/test_browser_api_docs.py). Every page of the URL conf is held
to the policy, as every persona, by the small-screen walk
(tests/searchtweak/test_browser_small_screens.py), which watches the same way
(tests/browser_policy.py).
"""

import pytest
from playwright.sync_api import expect

from evaluations.models import Evaluation
from judgments.models import FeedbackSlot
from searchtweak.models import Membership, Role, Team, User
from tests.browser_policy import PolicyWatch
from tests.demo_seed import seeded_demo

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DEMO_EVALUATION = "Demo: product search relevance"
SETTLED = '() => document.readyState === "complete" && !document.querySelector(".htmx-request")'


@pytest.fixture
def demo() -> Evaluation:
    seeded_demo()
    # A second team, so the team switcher shows for both users.
    second = Team.objects.create(name="Second team")
    for username in ("admin", "grader1"):
        Membership.objects.create(team=second, user=User.objects.get(username=username),
                                  role=Role.GRADER)
    return Evaluation.objects.get(name=DEMO_EVALUATION)


class Visitor:
    """A logged-in page watched for violations and requests to other hosts."""

    def __init__(self, browser, live_server, username: str) -> None:
        self.base = live_server.url
        self.context = browser.new_context(viewport={"width": 1280, "height": 900})
        self.policy = PolicyWatch(self.context, self.base)
        self.page = self.context.new_page()
        self.policy.watch(self.page)
        self.page.goto(f"{self.base}/login/")
        self.page.get_by_label("Username").fill(username)
        self.page.get_by_label("Password").fill("demo")
        self.page.get_by_role("button", name="Log in").click()
        self.page.wait_for_url(f"{self.base}/")

    def visit(self, path: str) -> None:
        response = self.page.goto(f"{self.base}{path}")
        assert self.policy.header_problems(response, path) == []
        # Loaded, and no htmx fragment still on its way: a late one could still violate.
        self.page.wait_for_function(SETTLED)
        self.assert_clean(path)

    def assert_clean(self, where: str) -> None:
        assert self.policy.problems(self.page, where) == []


def test_the_team_switcher_keeps_the_policy_as_admin(demo, browser, live_server):
    # The team switcher (once an inline onchange) still switches.
    admin = Visitor(browser, live_server, "admin")
    admin.visit("/")
    expect(admin.page.locator(".team-switcher select")).to_have_value(str(demo.team_id))
    second = Team.objects.get(name="Second team")
    admin.page.locator(".team-switcher select").select_option(str(second.pk))
    expect(admin.page.locator(".team-switcher select")).to_have_value(str(second.pk))
    assert User.objects.get(username="admin").current_team_id == second.pk
    admin.assert_clean("after switching teams")


def test_a_grader_who_grades_by_keyboard_keeps_the_policy(demo, browser, live_server):
    grader = Visitor(browser, live_server, "grader1")
    grader.visit("/")
    grader.page.get_by_test_id("start-grading").click()
    grader.page.wait_for_selector("html[data-grading-keys=on]", state="attached")
    # The grade buttons take their colour from data-grade-color, set by static/js/app.js.
    colour = grader.page.locator("[data-grade-color]").first.evaluate(
        "button => getComputedStyle(button).getPropertyValue('--grade-color').trim()")
    # The first button is grade 0 of the demo's graded scale: red, as judgments.scales has it.
    assert colour == "#d92d20"
    grader.page.keyboard.press("2")
    expect(grader.page.get_by_test_id("mine-count")).to_have_text("1")
    assert FeedbackSlot.objects.filter(evaluation=demo, user__username="grader1",
                                       grade=2).count() == 1
    grader.assert_clean("after grading")
