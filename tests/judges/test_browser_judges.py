"""An LLM judge on the seeded demo, in a real Chromium, through a local fake provider.

The admin adds the judge; a grader grades a few results; the lead runs the judge in
shadow, reads its progress, its call log and its calibration; the admin lets it count;
the lead runs it on what is ungraded, and the stored metrics are what a person's same
grades would give (recompute_metrics from scratch writes the same values).
"""

import zlib
from pathlib import Path

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from behaviour import learning
from behaviour.demo import demo_behaviour_ensure
from evaluations.models import Evaluation, EvaluationMetric
from judges.models import Judge, JudgeRun
from judgments.models import FeedbackSlot
from metrics.models import KeywordMetricValue
from tests.demo_seed import seeded_demo
from tests.judges.calibration_data import bar
from tests.judges.fake_providers import OPENAI, ModelAnswer, document_ids, fake_provider

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
DEMO_EVALUATION = "Demo: product search relevance"
KEY = "sk-demo-judge-key-0123456789"

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def grade_of(doc_id: str) -> int:
    """A fixed grade per result on the graded scale."""
    return zlib.crc32(doc_id.encode()) % 4


def model(prompt, request):
    return ModelAnswer({"grades": [
        {"id": doc_id, "grade": grade_of(doc_id), "reason": f"grade {grade_of(doc_id)} by rule"}
        for doc_id in document_ids(prompt)]})


def log_in(context, live_server, username: str):
    page = context.new_page()
    page.goto(f"{live_server.url}/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill("demo")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{live_server.url}/")
    return page


def metric_state(evaluation) -> tuple[dict, dict]:
    values = {(row.keyword_id, row.metric_id): row.value for row in
              KeywordMetricValue.objects.filter(keyword__evaluation=evaluation)}
    means = dict(EvaluationMetric.objects.filter(evaluation=evaluation).with_stored_mean()
                 .values_list("pk", "value"))
    return values, means


@pytest.mark.slow_reason("a judge grades the whole demo through the real lane, twice, "
                        "watched in Chromium")
def test_a_judge_grades_the_demo_beside_people(browser, live_server):
    ARTIFACTS.mkdir(exist_ok=True)
    seeded_demo()
    evaluation = Evaluation.objects.get(name=DEMO_EVALUATION)
    errors: list[str] = []

    def context():
        new = browser.new_context(viewport={"width": 1280, "height": 1000})
        # A CSP refusal shows only in the console; the browser's own favicon request does
        # not reach page events, so a 404 is counted from the responses alone.
        new.on("console", lambda message: "Content Security Policy" in message.text
               and errors.append(message.text))
        new.on("response", lambda response: response.status >= 400 and errors.append(
            f"{response.status} {response.url}"))
        return new

    with fake_provider(OPENAI, api_key=KEY) as provider:
        provider.default = model

        # The admin adds a judge with its key; the key is never shown back.
        admin = log_in(context(), live_server, "admin")
        admin.goto(f"{live_server.url}/judges/new/")
        admin.get_by_label("Name").fill("Demo judge")
        admin.get_by_label("Provider").select_option(OPENAI)
        admin.get_by_label("Base URL").fill(provider.base_url)
        admin.get_by_label("Model").fill("fake-model")
        admin.get_by_label("API key").fill(KEY)
        admin.get_by_label("Batch size").fill("5")
        admin.get_by_role("button", name="Create judge").click()
        admin.wait_for_url(f"{live_server.url}/judges/**")
        judge = Judge.objects.get(name="Demo judge")
        admin.goto(f"{live_server.url}/judges/")
        expect(admin.get_by_test_id(f"judge-{judge.pk}")).to_contain_text("shadow only")
        assert KEY not in admin.content()
        admin.screenshot(path=str(ARTIFACTS / "judges-list.png"), full_page=True)

        # A grader grades ten results by keyboard, as on any day.
        grader = log_in(context(), live_server, "grader1")
        grader.get_by_test_id("start-grading").click()
        grader.wait_for_selector("html[data-grading-keys=on]", state="attached")
        for mine, key in enumerate("3210321032", start=1):
            grader.keyboard.press(key)
            expect(grader.get_by_test_id("mine-count")).to_have_text(str(mine))

        # The lead runs the judge in shadow from the evaluation page. The picker names
        # each judge's kind; picking the team's clicks grader swaps the LLM judge's cache
        # and budget for what the grader learns from, and a note that it costs nothing.
        source = demo_behaviour_ensure(team=evaluation.team, evaluation=evaluation)
        learning.click_grader_create(team=evaluation.team, by=None, name="Visits",
                                     source=source, click_model="pbm")
        lead = log_in(context(), live_server, "lead")
        lead.goto(f"{live_server.url}/evaluations/{evaluation.pk}/")
        panel = lead.get_by_test_id("judge-runs")
        expect(panel.get_by_test_id("needs-counts")).to_contain_text("Demo judge")
        expect(panel.get_by_label("Budget")).to_be_visible()
        expect(panel.get_by_test_id("run-estimate")).to_contain_text("Estimate:")
        panel.get_by_label("Judge").select_option(label=f"Visits — clicks · PBM on {source.name}")
        expect(panel.get_by_test_id("learns-source")).to_have_text(source.name)
        expect(panel.get_by_label("Budget")).to_have_count(0)
        expect(panel.get_by_test_id("estimate-local")).to_contain_text("Costs nothing")
        lead.screenshot(path=str(ARTIFACTS / "judge-run-form-clicks.png"), full_page=True)
        panel.get_by_label("Judge").select_option(label="Demo judge — LLM · openai fake-model")
        expect(panel.get_by_label("Budget")).to_be_visible()
        expect(panel.get_by_test_id("run-learns")).to_have_count(0)
        panel.get_by_label("Mode").select_option(JudgeRun.Mode.SHADOW)
        panel.get_by_role("button", name="Start").click()
        expect(lead.get_by_test_id("run-status")).to_have_text("Done", timeout=60_000)
        shadow = JudgeRun.objects.get(judge=judge, mode=JudgeRun.Mode.SHADOW)
        pairs = evaluation.keywords.filter(snapshots__isnull=False).values(
            "snapshots").count()
        expect(lead.get_by_test_id("run-counts")).to_contain_text(str(pairs))
        assert (shadow.done_count, shadow.failed_count) == (pairs, 0)
        lead.screenshot(path=str(ARTIFACTS / "judge-run.png"), full_page=True)

        # Its call log: every call, none carrying the key.
        lead.goto(f"{live_server.url}/judges/{judge.pk}/calls/")
        expect(lead.get_by_test_id("call-table")).to_contain_text("ok")
        assert KEY not in lead.content()
        lead.screenshot(path=str(ARTIFACTS / "judge-calls.png"), full_page=True)

        # Its calibration against grader1's ten grades.
        lead.goto(f"{live_server.url}/judges/{judge.pk}/calibration/?evaluation={evaluation.pk}")
        expect(lead.get_by_test_id("snapshots")).to_have_text("10")
        expect(lead.get_by_test_id("pairs")).to_have_text("10")
        human = {slot.snapshot.doc_id: slot.grade for slot in FeedbackSlot.objects.filter(
            evaluation=evaluation, user__username="grader1").select_related("snapshot")}
        exact = sum(grade_of(doc_id) == grade for doc_id, grade in human.items())
        expect(lead.get_by_test_id("exact")).to_have_text(f"{exact / 10:.3f}")
        lead.screenshot(path=str(ARTIFACTS / "judge-calibration.png"), full_page=True)

        # The admin lets it count: the shadow run is done and the team's bar is ten pairs.
        bar(judge.team, min_pairs=10, min_kappa=-1)
        admin.goto(f"{live_server.url}/judges/{judge.pk}/calibration/?evaluation={evaluation.pk}")
        admin.get_by_role("button", name="Let this judge's grades count").click()
        expect(admin.get_by_test_id("counts-state")).to_contain_text("its grades count")

        # The lead has it grade what is ungraded; the metrics follow its grades.
        before = metric_state(evaluation)
        lead.goto(f"{live_server.url}/evaluations/{evaluation.pk}/")
        panel = lead.get_by_test_id("judge-runs")
        panel.get_by_label("Mode").select_option(JudgeRun.Mode.UNGRADED)
        panel.get_by_role("button", name="Start").click()
        expect(lead.get_by_test_id("run-status")).to_have_text("Done", timeout=60_000)

    counting = JudgeRun.objects.get(judge=judge, mode=JudgeRun.Mode.UNGRADED)
    assert (counting.done_count, counting.failed_count) == (pairs - 10, 0)
    judged = FeedbackSlot.objects.filter(evaluation=evaluation, user=judge.user)
    assert judged.count() == pairs - 10
    assert all(slot.grade == grade_of(slot.snapshot.doc_id) and slot.reason
               for slot in judged.select_related("snapshot"))
    after = metric_state(evaluation)
    assert after != before
    call_command("recompute_metrics", "--evaluation", str(evaluation.pk), "--quiet")
    assert metric_state(evaluation) == after

    # The keyword page shows the judge's grade and reason beside people's.
    slot = judged.select_related("snapshot").first()
    lead.goto(f"{live_server.url}/keywords/{slot.keyword_id}/")
    expect(lead.locator("body")).to_contain_text(slot.reason)
    lead.screenshot(path=str(ARTIFACTS / "judge-keyword.png"), full_page=True)
    assert not errors, errors
