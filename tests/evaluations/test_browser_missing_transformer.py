"""Item: a metric that needs a transformer the team's own scale lacks is refused when the
evaluation form is saved (not later at Start), in words, with a link for admins; the
transformer editor then shows only the chosen pair's mapping."""

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from evaluations.models import Evaluation
from judgments.models import Transformer
from judgments.scale_writes import scale_create
from tests.evaluations.factories import SearchModelFactory
from tests.judgments.test_browser_grading import log_in

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

FIVE_LABELS = {str(g): {"label": label, "color": "#777777"} for g, label in enumerate(
    ["bad", "poor", "fair", "good", "great"], start=1)}
MISSING = ("nDCG@10 (detail) needs grades on the detail scale: an admin must define a "
           "transformer from 'Five grades (1..5)' to detail under Scales (or give this "
           "evaluation one in its transformer overrides).")


def shot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"evaluations-missing-transformer-{name}.png"),
                    full_page=True)


@pytest.fixture
def five(personas):
    return scale_create(team=personas.team, code="five", name="Five grades",
                        lo=1, hi=5, labels=FIVE_LABELS)


def fill_evaluation(page, live_server, model) -> None:
    page.goto(f"{live_server.url}/evaluations/new/?model={model.pk}")
    page.locator("#id_name").fill("Five-grade shoes")
    page.locator("#id_keywords").fill("running shoes\nboots")
    page.get_by_label("Scale").select_option("five")
    page.get_by_label("Metrics").fill("ndcg@10\nndcg_d@10")


@pytest.mark.parametrize("username", ["admin", "lead"])
@pytest.mark.slow_reason("a form story in Chromium across the evaluation and transformer pages")
def test_saving_refuses_a_metric_without_a_transformer_in_words(page, live_server, personas,
                                                               five, username):
    model = SearchModelFactory(endpoint__team=personas.team, name="BM25")
    log_in(page, live_server, username)
    fill_evaluation(page, live_server, model)
    page.get_by_role("button", name="Create evaluation").click()

    error = page.locator(".field.has-error").filter(has=page.locator("#id_metrics"))
    expect(error.get_by_role("alert")).to_contain_text(MISSING)
    # The form keeps what was typed, and nothing is stored.
    expect(page.get_by_label("Metrics")).to_have_value("ndcg@10\nndcg_d@10")
    expect(page.locator("#id_name")).to_have_value("Five-grade shoes")
    assert not Evaluation.objects.exists()
    link = page.get_by_test_id("define-transformer")
    if username == "lead":
        expect(link).to_have_count(0)  # leads cannot open the transformer page
        return
    shot(page, "1-form-error")

    link.click()
    page.wait_for_url(re.compile(r"/transformers/edit/\?source=five&target=detail$"))
    rows = page.get_by_test_id("transformer-rows").locator("tbody tr")
    expect(rows).to_have_count(5)
    for grade, target in zip(range(1, 6), ["1", "3", "5", "8", "10"], strict=True):
        page.locator(f'select[name="grade_{grade}"]').select_option(target)
    page.get_by_role("button", name="Save").click()
    page.wait_for_url(f"{live_server.url}/scales/")
    assert Transformer.objects.get(source="five", target="detail").mapping == {
        "1": 1, "2": 3, "3": 5, "4": 8, "5": 10}

    fill_evaluation(page, live_server, model)
    page.get_by_role("button", name="Create evaluation").click()
    page.wait_for_url(re.compile(r"/evaluations/\d+/$"))
    assert list(Evaluation.objects.get().metric_configs.values_list("code", flat=True)) == [
        "ndcg", "ndcg_d"]


@pytest.mark.slow_reason("switches three scales in Chromium and reads every row")
def test_switching_the_source_scale_shows_that_scales_mapping_only(page, live_server,
                                                                   personas, five):
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    log_in(page, live_server, "admin")
    page.goto(f"{live_server.url}/transformers/edit/?source=graded&target=binary")
    picks = page.get_by_test_id("transformer-rows").locator("tbody select")
    # The default graded -> binary (docs/METRICS.md): 0 -> 0; 1, 2, 3 -> 1.
    expect(picks).to_have_count(4)
    assert [s.input_value() for s in picks.all()] == ["0", "1", "1", "1"]

    page.get_by_label("Source").select_option("five")
    expect(picks).to_have_count(5)
    # Five grades has no mapping to binary yet: every row starts unmapped, none inherits
    # graded's picks for the same grade numbers 1..3.
    assert [s.input_value() for s in picks.all()] == ["", "", "", "", ""]
    shot(page, "2-five-unmapped")
    page.locator('select[name="grade_5"]').select_option("1")

    page.get_by_label("Source").select_option("detail")
    expect(picks).to_have_count(10)
    assert [s.input_value() for s in picks.all()] == ["0"] + ["1"] * 9  # detail's default

    page.get_by_label("Source").select_option("five")
    expect(picks).to_have_count(5)
    assert [s.input_value() for s in picks.all()] == ["", "", "", "", "1"]  # its own pick
    expect(page.locator('input[name="shown"]')).to_have_value("five->binary")
    assert errors == []
