"""The endpoint form in a real browser: the demo preset, Test before saving, every error at
once; then a confirm page that names dependents, and Restore."""

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from evaluations.models import Endpoint
from tests.searchtweak.factories import PASSWORD

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def shot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"endpoint-form-{name}.png"), full_page=True)


def log_in(page, base: str) -> None:
    page.goto(f"{base}/login/")
    page.get_by_label("Username").fill("admin")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{base}/")


@pytest.mark.slow_reason("tests an endpoint against the live demo engine from the form in Chromium")
def test_the_demo_preset_is_tested_before_saving_then_saved(page, live_server, personas):
    log_in(page, live_server.url)
    page.goto(f"{live_server.url}/endpoints/new/")
    page.locator("#id_name").fill("Demo engine")
    page.get_by_label("Mapper preset").select_option(label="SearchTweak demo engine")
    expect(page.get_by_label("URL")).to_have_value(f"{live_server.url}/demo/search")
    expect(page.get_by_label("Documents (JMESPath to the list)")).to_have_value("hits")
    expect(page.get_by_label("Extra fields (optional)")).to_have_value(re.compile("Brand: brand"))
    page.get_by_label("Test query").fill("cast iron skillet")
    expect(page.get_by_label("Test parameters")).to_have_value("q=#query#")
    page.get_by_role("button", name="Test", exact=True).click()

    result = page.get_by_test_id("test-result")
    expect(result).to_contain_text("HTTP status")
    expect(result.locator("dd").first).to_have_text("200")
    expect(result.locator("tbody tr").first).to_contain_text("cast iron skillet")
    expect(result).to_contain_text("Category")
    assert not Endpoint.objects.exists()
    # The typed settings survive the test, ready to save.
    expect(page.locator("#id_name")).to_have_value("Demo engine")
    shot(page, "1-demo-preset-tested")

    page.get_by_role("button", name="Create endpoint").click()
    page.wait_for_url(re.compile(r"/models/new/\?endpoint=\d+$"))
    endpoint = Endpoint.objects.get(name="Demo engine")
    expect(page.get_by_label("Endpoint")).to_have_value(str(endpoint.pk))
    shot(page, "2-model-preselected")

    page.locator("#id_name").fill("Demo BM25")
    page.get_by_role("button", name="Create search model").click()
    page.wait_for_url(re.compile(r"/models/\d+/test/$"))

    # Deleting the endpoint now asks first, naming the model that uses it.
    page.goto(f"{live_server.url}/endpoints/")
    page.get_by_role("link", name="Delete…").click()
    expect(page.get_by_test_id("dependents")).to_have_text(
        "1 search model uses this endpoint.")
    shot(page, "3-confirm")
    page.get_by_role("button", name="Archive endpoint").click()
    archived = page.get_by_test_id("archived")
    expect(archived).to_contain_text("Demo engine")
    shot(page, "4-archived")
    archived.get_by_role("button", name="Restore").click()
    expect(page.get_by_text("Endpoint Demo engine restored.")).to_be_visible()
    expect(page.get_by_test_id("archived")).to_have_count(0)
    expect(page.locator("table").first).to_contain_text("Demo engine")


def test_the_form_names_every_bad_field_at_once(page, live_server, personas):
    log_in(page, live_server.url)
    page.goto(f"{live_server.url}/endpoints/new/")
    page.locator("#id_name").fill("Broken")
    page.get_by_label("URL").fill("not a url")
    page.get_by_label("Documents (JMESPath to the list)").fill("hits.hits.")
    page.get_by_label("Document id").fill("_id")
    page.get_by_label("Document name").fill("_source.title")
    page.get_by_label("Extra fields (optional)").fill("Price: price[")
    page.get_by_role("button", name="Create endpoint").click()
    errors = page.locator(".field .error")
    expect(errors).to_have_count(3)
    expect(errors.nth(0)).to_have_text("Enter an http:// or https:// URL.")
    expect(errors.nth(1)).to_contain_text("Parse error at column 10")
    expect(errors.nth(2)).to_contain_text("Price: invalid JMESPath 'price['")
    shot(page, "5-errors")
    assert not Endpoint.objects.exists()


@pytest.mark.slow_reason("a form story in Chromium: archive, confirm, restore")
def test_an_evaluation_is_archived_after_asking_and_restored(page, live_server, personas):
    from tests.evaluations.factories import EvaluationFactory, KeywordFactory

    evaluation = EvaluationFactory(model__endpoint__team=personas.team, name="Spring",
                                   status="active")
    for text in ("boots", "hats"):
        KeywordFactory(evaluation=evaluation, text=text)
    log_in(page, live_server.url)
    page.goto(f"{live_server.url}/evaluations/{evaluation.pk}/")
    page.get_by_role("link", name="Archive…").click()
    expect(page.get_by_test_id("dependents")).to_have_text("It has 2 keywords.")
    shot(page, "6-evaluation-archive-confirm")
    page.get_by_role("button", name="Archive evaluation").click()
    expect(page.get_by_text("Evaluation Spring archived.")).to_be_visible()
    page.get_by_role("link", name="Show archived").click()
    archived = page.get_by_test_id("archived")
    expect(archived).to_contain_text("Spring")
    shot(page, "7-evaluation-archived")
    archived.get_by_role("button", name="Restore").click()
    expect(page.get_by_text("Evaluation Spring restored.")).to_be_visible()
    expect(page.get_by_role("link", name="Archive…")).to_be_visible()
    shot(page, "8-evaluation-restored")
