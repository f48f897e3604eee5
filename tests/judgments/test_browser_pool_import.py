"""The pool import in a real Chromium, as a lead: the evaluation's per-slot export is
previewed, its repeated pairs explained, and imported without choosing the file again; the
judgments page filters to the unsure grades; the pool's download for another tool previews
as the format it is, with its rating → grade rule."""

from pathlib import Path

import pytest
from playwright.sync_api import expect

from judgments.grading import feedback_submit
from judgments.models import PoolJudgment
from judgments.queue import slot_claim_next
from tests.judgments.builders import evaluation_with_slots
from tests.judgments.test_browser_grading import log_in

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def shot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"judgments-pool-{name}.png"), full_page=True)


@pytest.mark.slow_reason("exports, previews and imports a file in Chromium")
def test_a_lead_exports_per_slot_previews_and_imports_without_a_second_upload(
        page, live_server, personas):
    # Three graders a result: the first result's three grades are one pair on three lines.
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=2, strategy=3,
                                       name="Shoes Q3")
    for grader, unsure in ((personas.grader, True), (personas.lead, False),
                           (personas.owner, False)):
        slot = slot_claim_next(user=grader, team=personas.team)
        feedback_submit(user=grader, slot_id=slot.pk, grade=2, unsure=unsure,
                        note="Same shoe in another colour?" if unsure else "")
    log_in(page, live_server, "lead")
    page.goto(f"{live_server.url}/feedback/evaluations/{evaluation.pk}/")
    page.get_by_label("Unsure only").check()
    page.get_by_role("button", name="Filter").click()
    table = page.get_by_test_id("feedback-table")
    expect(table.locator("tbody tr")).to_have_count(1)
    expect(table.get_by_test_id("note")).to_have_text("Same shoe in another colour?")
    shot(page, "1-unsure-only")

    with page.expect_download() as download:
        page.get_by_test_id("exports").get_by_role("link", name="CSV per grader").click()
    exported = Path(download.value.path()).read_bytes()
    assert exported.count(b"\n") == 4  # the header and three grades

    page.goto(f"{live_server.url}/pool/import/")
    expect(page.get_by_test_id("pool-formats")).to_contain_text("Recommended: the per-slot CSV")
    page.get_by_label("Scale").select_option("graded")
    page.locator("input[name=file]").set_input_files(
        files=[{"name": "slots.csv", "mimeType": "text/csv", "buffer": exported}])
    page.get_by_role("button", name="Preview").click()
    expect(page.get_by_test_id("pool-repeats")).to_contain_text(
        "1 keyword/document pair appears on more than one line (2 extra lines): every line "
        "is imported as a separate grade")
    expect(page.get_by_test_id("pool-preview")).to_contain_text("Same shoe in another colour?")
    expect(page.get_by_test_id("pool-kept")).to_contain_text("slots.csv")
    page.get_by_label("Keep the newest line of each keyword and document only").check()
    page.get_by_role("button", name="Preview").click()
    expect(page.get_by_test_id("pool-repeats")).to_contain_text("2 lines are dropped")
    expect(page.get_by_test_id("pool-preview")).to_contain_text(
        "1 judgment for 1 keyword can be imported")
    shot(page, "2-preview")
    page.get_by_role("button", name="Import").click()
    expect(page.locator("body")).to_contain_text("Imported 1 judgments for 1 keywords")
    # The newest of the three: the owner graded last.
    assert list(PoolJudgment.objects.filter(team=personas.team).values_list(
        "grader", "grade", "unsure")) == [("owner", 2, False)]
    shot(page, "3-imported")

    # The pool downloads for another tool, and that file previews as what it is.
    page.goto(f"{live_server.url}/pool/import/")
    with page.expect_download() as download:
        page.get_by_test_id("pool-export-other").get_by_role(
            "link", name="OpenSearch Workbench JSON").click()
    workbench = Path(download.value.path()).read_bytes()
    page.get_by_label("Scale").select_option("graded")
    page.locator("input[name=file]").set_input_files(
        files=[{"name": "srw.json", "mimeType": "application/json", "buffer": workbench}])
    page.get_by_role("button", name="Preview").click()
    expect(page.get_by_test_id("pool-format")).to_have_text(
        "Read as OpenSearch Workbench judgments JSON: a JSON object with judgmentRatings.")
    expect(page.get_by_test_id("pool-grade-rule")).to_contain_text(
        "Every rating is a whole grade of the Graded scale 0..3")
    expect(page.get_by_test_id("pool-grade-rule").locator("tbody td")).to_have_text(
        ["2.000", "2"])
    shot(page, "4-workbench-preview")
