"""A lead creates a query set by typing keywords, then an evaluation from it, in a real
browser; the query set pages fit a phone (390 px)."""

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from evaluations.models import Evaluation, KeywordSet
from tests.evaluations.factories import SearchModelFactory
from tests.searchtweak.factories import PASSWORD

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
PHONE = {"width": 390, "height": 844}

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def shot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"query-sets-{name}.png"), full_page=True)


def fits_the_phone(page) -> None:
    page.set_viewport_size(PHONE)
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"], page.url
    page.set_viewport_size({"width": 1280, "height": 800})


@pytest.mark.slow_reason("a query set story in Chromium ending in a fetched evaluation")
def test_a_lead_creates_a_query_set_and_an_evaluation_from_it(page, live_server, personas):
    SearchModelFactory(endpoint__team=personas.team, name="BM25")
    page.goto(f"{live_server.url}/login/")
    page.get_by_label("Username").fill("lead")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{live_server.url}/")

    page.get_by_role("link", name="Query sets").first.click()
    # Measured once the list has loaded, not while the click's navigation is under way.
    page.wait_for_url(f"{live_server.url}/query-sets/")
    fits_the_phone(page)
    page.get_by_test_id("new-query-set").click()
    # Nothing typed: the error sits on the keywords field and nothing is saved.
    page.locator("#id_name").fill("Footwear")
    page.get_by_role("button", name="Create query set").click()
    expect(page.locator(".field.has-error")).to_contain_text("Add at least one keyword.")
    assert not KeywordSet.objects.exists()

    page.locator("#id_keywords").fill("running shoes\nhiking boots\nRunning Shoes\nsandals")
    fits_the_phone(page)
    page.get_by_role("button", name="Create query set").click()
    page.wait_for_url(re.compile(r"/query-sets/\d+/$"))
    expect(page.get_by_text("Query set Footwear created with 3 keywords.")).to_be_visible()
    expect(page.get_by_test_id("keywords").locator("tbody tr")).to_have_count(3)
    expect(page.get_by_test_id("versions").locator("tbody tr")).to_have_count(1)
    fits_the_phone(page)
    shot(page, "1-created")

    page.get_by_test_id("new-evaluation-from-set").click()
    page.wait_for_url(re.compile(r"/evaluations/new/\?query_set=\d+$"))
    expect(page.get_by_label("…or use a query set")).to_have_value(
        str(KeywordSet.objects.get().pk))
    page.locator("#id_name").fill("Footwear run")
    page.get_by_label("Search model").select_option(label="BM25")
    shot(page, "2-evaluation-form")
    page.get_by_role("button", name="Create evaluation").click()
    page.wait_for_url(re.compile(r"/evaluations/\d+/$"))
    expect(page.get_by_test_id("query-set-version")).to_contain_text("Footwear, version 1")

    evaluation = Evaluation.objects.get()
    assert evaluation.query_set_version.query_set.name == "Footwear"
    assert list(evaluation.keywords.order_by("position").values_list("text", flat=True)) == [
        "running shoes", "hiking boots", "sandals"]
    shot(page, "3-evaluation")
