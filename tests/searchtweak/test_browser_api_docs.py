"""The API docs (Swagger UI, Redoc) render in a browser that can reach nothing but this
server, under the strict Content-Security-Policy with zero violations (tests/browser_policy.py,
as every page walk watches it). The docs are public: the same page for anyone signed in."""

from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser_policy import PolicyWatch

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def offline_context(context, live_server):
    """The browser context with every request to another host aborted, and recorded."""
    blocked: list[str] = []

    def only_the_live_server(route):
        url = route.request.url
        if url.startswith(f"{live_server.url}/"):
            route.continue_()
        else:
            blocked.append(url)
            route.abort()

    context.route("**/*", only_the_live_server)
    context.blocked = blocked
    context.policy = PolicyWatch(context, live_server.url)
    return context


def _policy_problems(context, page, response, where: str) -> list[str]:
    return (context.policy.header_problems(response, where)
            + context.policy.problems(page, where))


@pytest.mark.slow_reason("Swagger UI lays out the whole schema in Chromium, each request "
                         "routed (3 s alone, over 5 s beside the rest of the suite)")
def test_swagger_ui_renders_offline(offline_context, live_server):
    # The docs are public (drf-spectacular's SERVE_PERMISSIONS): no login needed.
    page = offline_context.new_page()
    offline_context.policy.watch(page)
    response = page.goto(f"{live_server.url}/api/docs/")
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("SearchTweak API")
    operation = page.locator(".opblock-summary-path[data-path='/api/v1/evaluations/']")
    expect(operation.first).to_be_visible()
    assert _policy_problems(offline_context, page, response, "/api/docs/, rendered") == []
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "api-docs-swagger.png"))
    assert offline_context.blocked == []


@pytest.mark.slow_reason("Redoc renders the whole schema in Chromium")
def test_redoc_renders_offline(offline_context, live_server):
    page = offline_context.new_page()
    offline_context.policy.watch(page)
    response = page.goto(f"{live_server.url}/api/redoc/")
    # Redoc lays out the whole schema in the browser before its first heading shows: seconds
    # on a busy 2-core host, past expect's default 5 s.
    expect(page.get_by_role("heading", name="SearchTweak API").first).to_be_visible(
        timeout=30_000)
    expect(page.get_by_text("/api/v1/evaluations/").first).to_be_attached()
    assert _policy_problems(offline_context, page, response, "/api/redoc/, rendered") == []
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "api-docs-redoc.png"))
    # Redoc's bundle links its own "API docs by Redocly" logo, which no setting turns off;
    # static/searchtweak/redoc-offline.js keeps it from being requested at all.
    assert offline_context.blocked == []
