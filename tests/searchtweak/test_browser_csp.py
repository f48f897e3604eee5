"""Every main page works under the strict Content-Security-Policy, with zero violations.

Chromium reports each violation twice: a console message ("... violates the following
Content Security Policy directive ...") and a securitypolicyviolation event, which an init
script (run by Playwright outside the page's policy) records. Both must stay empty.
"""

import pytest
from playwright.sync_api import expect

from evaluations.models import Evaluation, Keyword
from judgments.models import FeedbackSlot
from searchtweak.models import Membership, Role, Team, User
from tests.demo_seed import seeded_demo

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DEMO_EVALUATION = "Demo: product search relevance"
RECORD_VIOLATIONS = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (event) => {
  window.__cspViolations.push(event.violatedDirective + " " + event.blockedURI);
});
"""


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
    """A logged-in page that records CSP violations and requests to other hosts."""

    def __init__(self, browser, live_server, username: str) -> None:
        self.base = live_server.url
        self.context = browser.new_context(viewport={"width": 1280, "height": 900})
        self.context.add_init_script(RECORD_VIOLATIONS)
        self.console: list[str] = []
        self.elsewhere: list[str] = []
        self.context.route("**/*", self._route)
        self.page = self.context.new_page()
        self.page.on("console", self._on_console)
        self.page.goto(f"{self.base}/login/")
        self.page.get_by_label("Username").fill(username)
        self.page.get_by_label("Password").fill("demo")
        self.page.get_by_role("button", name="Log in").click()
        self.page.wait_for_url(f"{self.base}/")

    def _route(self, route) -> None:
        if route.request.url.startswith(self.base):
            route.continue_()
        else:
            self.elsewhere.append(route.request.url)
            route.abort()

    def _on_console(self, message) -> None:
        if "Content Security Policy" in message.text:
            self.console.append(f"{self.page.url}: {message.text}")

    def visit(self, path: str) -> None:
        response = self.page.goto(f"{self.base}{path}")
        policy = response.headers.get("content-security-policy", "")
        assert "script-src 'self'" in policy and "style-src 'self'" in policy, path
        self.page.wait_for_load_state("networkidle")
        self.assert_clean(path)

    def assert_clean(self, where: str) -> None:
        recorded = self.page.evaluate("window.__cspViolations")
        assert recorded == [], f"{where}: {recorded}"
        assert self.console == [], self.console


def _main_paths(evaluation: Evaluation) -> list[str]:
    keyword = Keyword.objects.filter(evaluation=evaluation).order_by("pk").first()
    endpoint_id = evaluation.model.endpoint_id
    return [
        "/", "/evaluations/", f"/evaluations/{evaluation.pk}/", f"/keywords/{keyword.pk}/",
        "/dashboard/", f"/dashboard/evaluations/{evaluation.pk}/", "/grade/",
        f"/feedback/evaluations/{evaluation.pk}/", "/scales/", "/endpoints/",
        f"/endpoints/{endpoint_id}/", "/models/", "/compare/", "/leaderboards/", "/account/",
        "/help/", "/help/verdicts/",
        # Redoc last: the test looks for its page after the loop.
        "/api/docs/", "/api/redoc/",
    ]


@pytest.mark.slow_reason("visits every main page in Chromium until the network is "
                        "idle, to catch late violations")
def test_every_main_page_keeps_the_policy_as_admin(demo, browser, live_server):
    admin = Visitor(browser, live_server, "admin")
    for path in _main_paths(demo):
        admin.visit(path)
    expect(admin.page.locator("redoc, .redoc-wrap").first).to_be_attached()
    expect(admin.page.get_by_text("/api/v1/evaluations/").first).to_be_attached()
    admin.visit("/api/docs/")
    expect(admin.page.locator(".swagger-ui .info .title")).to_contain_text("SearchTweak API")

    # The team switcher (once an inline onchange) still switches.
    admin.visit("/")
    expect(admin.page.locator(".team-switcher select")).to_have_value(str(demo.team_id))
    second = Team.objects.get(name="Second team")
    admin.page.locator(".team-switcher select").select_option(str(second.pk))
    expect(admin.page.locator(".team-switcher select")).to_have_value(str(second.pk))
    assert User.objects.get(username="admin").current_team_id == second.pk
    admin.assert_clean("after switching teams")
    assert admin.elsewhere == []


@pytest.mark.slow_reason("visits every main page in Chromium until the network is "
                         "idle, to catch late violations")
def test_every_main_page_keeps_the_policy_as_a_grader_who_grades_by_keyboard(
        demo, browser, live_server):
    grader = Visitor(browser, live_server, "grader1")
    for path in _main_paths(demo):
        grader.visit(path)

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
    assert grader.elsewhere == []
