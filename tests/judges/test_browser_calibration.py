"""The calibration page in a real Chromium: an admin reads the figures, learns why they do
not clear the team's bar, and lets the judge count anyway with a reason."""

from pathlib import Path

import pytest
from playwright.sync_api import expect

from judges.models import Judge
from tests.judges.calibration_data import graded_example
from tests.judgments.test_browser_grading import log_in

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_an_admin_reads_the_calibration_and_lets_the_judge_count(page, live_server, personas):
    example = graded_example(personas.team, personas.lead, personas.grader)
    violations: list[str] = []
    page.on("console", lambda message: violations.append(message.text)
            if "Content Security Policy" in message.text else None)
    log_in(page, live_server, "admin")
    page.goto(f"{live_server.url}/judges/{example.judge.pk}/calibration/")
    expect(page.get_by_test_id("kappa")).to_have_text("0.870")
    expect(page.get_by_test_id("pairs")).to_have_text("6")
    expect(page.get_by_test_id("confusion").locator("tbody tr")).to_have_count(4)
    expect(page.get_by_test_id("metric-calibration").locator("tbody tr")).to_have_count(2)
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "judges-calibration-1-figures.png"), full_page=True)
    expect(page.get_by_test_id("counts-shortfalls")).to_contain_text(
        "Only 6 pairs of the judge's and the people's grades")
    page.get_by_label("Reason for the override").fill("Pilot on the shoes catalogue")
    page.get_by_role("button", name="Let its grades count anyway").click()
    expect(page.get_by_test_id("counts-state")).to_have_text("its grades count")
    expect(page.get_by_test_id("override-reason")).to_have_text("Pilot on the shoes catalogue")
    expect(page.get_by_test_id("counts-figures")).to_contain_text("6 pairs, κ 0.870")
    assert page.url.endswith(f"?evaluation={example.evaluation.pk}")
    assert Judge.objects.get(pk=example.judge.pk).counts is True
    page.screenshot(path=str(ARTIFACTS / "judges-calibration-2-counts.png"), full_page=True)
    assert violations == []
