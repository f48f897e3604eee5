"""Playwright opens every metrics page on the demo data and saves a screenshot."""

from pathlib import Path

import numpy as np
import pytest
from django.utils import timezone
from playwright.sync_api import expect

from evaluations.models import Evaluation, Keyword, Snapshot
from judgments.models import FeedbackSlot
from metrics.services import evaluation_metrics_recompute
from searchtweak.models import User
from tests.demo_seed import seeded_demo
from tests.metrics.builders import build_evaluation
from tests.table_copies import build_once

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _grade_all(evaluation: Evaluation, graders: list[User], *, seed: int, share: float) -> None:
    rng = np.random.default_rng(seed)
    now = timezone.now()
    slots = list(FeedbackSlot.objects.filter(evaluation=evaluation))
    for slot in slots:
        if rng.random() < share:
            slot.grade, slot.user, slot.graded_at = int(rng.integers(0, 4)), graders[
                slot.index], now
    FeedbackSlot.objects.bulk_update(slots, ["grade", "user", "graded_at"])
    evaluation_metrics_recompute(evaluation_id=evaluation.pk)


def _build_demo() -> tuple[int, int]:
    seeded_demo()
    current = Evaluation.objects.get(name="Demo: product search relevance")
    graders = [User.objects.get(username=f"grader{i}") for i in (1, 2, 3)]
    _grade_all(current, graders, seed=1, share=0.7)
    keywords = {
        keyword.text: list(Snapshot.objects.filter(keyword=keyword).order_by("-position")
                           .values_list("doc_id", flat=True))
        for keyword in Keyword.objects.filter(evaluation=current)
    }
    earlier = build_evaluation(team=current.team, scale="graded", strategy=3, keywords=keywords,
                               metrics=[("precision", 10, {}), ("ap", 10, {}),
                                        ("ndcg", 10, {})],
                               status=Evaluation.Status.FINISHED)
    Evaluation.objects.filter(pk=earlier.pk).update(
        model=current.model, name="Demo: last month", finished_at=timezone.now())
    _grade_all(earlier, graders, seed=2, share=1.0)
    return current.pk, earlier.pk


@pytest.fixture
def demo():
    """The demo evaluation mostly graded, and an earlier finished evaluation of the same
    model on the same keywords (results reversed) to compare it with; built once per test
    process (tests.table_copies)."""
    current, earlier = build_once("dashboard browser demo", _build_demo)
    return Evaluation.objects.get(pk=current), Evaluation.objects.get(pk=earlier)


def _login(page, live_server, username: str = "lead") -> None:
    page.goto(f"{live_server.url}/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill("demo")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{live_server.url}/")


def _shot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / name), full_page=True)


@pytest.mark.slow_reason("the graded demo's dashboard in Chromium, every row expanded")
def test_the_evaluation_dashboard_renders_cards_charts_and_expanding_rows(
        page, live_server, demo):
    current, _earlier = demo
    _login(page, live_server)
    page.goto(f"{live_server.url}/dashboard/evaluations/{current.pk}/")
    cards = page.get_by_test_id("metric-cards")
    # One recompute, one history point: each card says its value and nothing else.
    expect(cards.locator("svg")).to_have_count(0)
    expect(cards).not_to_contain_text("(1 point)")
    expect(page.locator("[data-testid=distribution] svg")).to_be_visible()
    expect(cards.get_by_text("vs previous Demo: last month").first).to_be_visible()
    expect(page.get_by_test_id("kappa-reading")).to_contain_text("Landis & Koch")
    # Sort by AP: click its header, and open the first keyword's results.
    page.get_by_role("link", name="AP@10").click()
    page.wait_for_url("**sort=m*")
    row = page.get_by_test_id("keyword-table").locator("tbody tr").first
    row.locator("summary").click()
    expect(row.locator(".snapshot-list li").first).to_be_visible()
    _shot(page, "metrics-evaluation-dashboard.png")
    # The live partial swaps in without a reload (the evaluation is active).
    page.wait_for_function(
        "document.querySelector('#live [data-live-state]') !== null", timeout=10_000)


@pytest.mark.slow_reason("the graded demo's dashboards in Chromium")
def test_team_dashboard_model_history_and_leaderboards_render(page, live_server, demo):
    current, _ = demo
    _login(page, live_server)
    page.get_by_role("link", name="Dashboard").click()
    expect(page.get_by_test_id("queue-size")).to_be_visible()
    expect(page.locator("[data-testid=activity-chart] svg")).to_be_visible()
    ticks = page.locator("[data-testid=activity-chart] svg text.tick").all_text_contents()
    assert ticks and all(tick.isdigit() for tick in ticks), ticks  # counts: whole numbers
    expect(page.get_by_test_id("active-evaluations").get_by_text(current.name)).to_be_visible()
    _shot(page, "metrics-team-dashboard.png")
    page.goto(f"{live_server.url}/models/{current.model_id}/history/")
    expect(page.locator("svg.line-chart").first).to_be_visible()
    _shot(page, "metrics-model-history.png")
    page.goto(f"{live_server.url}/leaderboards/")
    expect(page.get_by_test_id("model-leaderboard").get_by_text("Demo BM25")).to_be_visible()
    expect(page.get_by_test_id("grader-leaderboard").get_by_text("grader1")).to_be_visible()
    _shot(page, "metrics-leaderboards.png")


@pytest.mark.slow_reason("the graded demo and its comparison in Chromium")
def test_compare_two_evaluations_and_open_one_keyword_side_by_side(page, live_server, demo):
    current, earlier = demo
    _login(page, live_server)
    page.get_by_role("link", name="Compare").click()
    page.locator("#id_a").select_option(str(earlier.pk))
    page.locator("#id_b").select_option(str(current.pk))
    page.get_by_role("button", name="Compare").click()
    expect(page.get_by_test_id("shared")).to_contain_text("50 shared keywords")
    expect(page.get_by_test_id("metric-comparison").locator("tbody tr")).to_have_count(3)
    _shot(page, "metrics-compare.png")
    page.get_by_test_id("keyword-comparison").locator("tbody tr a").first.click()
    table = page.get_by_test_id("side-by-side")
    expect(table.locator("tbody tr").first).to_be_visible()
    _shot(page, "metrics-compare-keyword.png")


@pytest.mark.slow_reason("the graded demo and its comparison in Chromium")
def test_compare_warns_when_only_the_grades_differ(page, live_server, demo):
    current, _ = demo
    graders = [User.objects.get(username=f"grader{i}") for i in (1, 2, 3)]
    same_lists = {
        keyword.text: list(Snapshot.objects.filter(keyword=keyword).order_by("position")
                           .values_list("doc_id", flat=True))
        for keyword in Keyword.objects.filter(evaluation=current)
    }
    regraded = build_evaluation(team=current.team, scale="graded", strategy=3,
                                keywords=same_lists,
                                metrics=[("precision", 10, {}), ("ap", 10, {}),
                                         ("ndcg", 10, {})],
                                status=Evaluation.Status.FINISHED)
    Evaluation.objects.filter(pk=regraded.pk).update(name="Demo: regraded")
    _grade_all(regraded, graders, seed=3, share=1.0)
    _login(page, live_server)
    page.goto(f"{live_server.url}/compare/?a={current.pk}&b={regraded.pk}")
    notes = page.get_by_test_id("ranking-note")
    expect(notes.first).to_contain_text("The rankings are identical (RBO 1)")
    expect(notes.first).to_contain_text("a grading difference, not a ranking one")
    both = page.get_by_test_id("both-count").all_inner_texts()
    assert both and all(text.endswith("of 50") for text in both), both
    _shot(page, "metrics-compare-regraded.png")


def test_a_new_teams_dashboard_and_a_two_point_history_read_right(page, live_server, personas):
    from metrics.models import MetricHistoryPoint
    from tests.searchtweak.factories import PASSWORD

    evaluation = build_evaluation(team=personas.team, keywords={"boots": ["a", "b"]},
                                  metrics=[("precision", 2, {}), ("cg", 2, {})])
    for config, values in zip(evaluation.metric_configs.order_by("position"),
                              ([0.5, 0.75], [None]), strict=True):
        for value in values:
            MetricHistoryPoint.objects.create(metric=config, value=value, keyword_count=1,
                                              recorded_at=timezone.now())
    page.goto(f"{live_server.url}/login/")
    page.get_by_label("Username").fill(personas.lead.username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{live_server.url}/")
    page.goto(f"{live_server.url}/dashboard/")
    # No grade yet: the activity chart counts from 0 to 1, nothing below 0.
    ticks = page.locator("[data-testid=activity-chart] svg text.tick")
    expect(ticks).to_have_text(["0", "1"])
    _shot(page, "metrics-team-dashboard-empty.png")
    page.goto(f"{live_server.url}/dashboard/evaluations/{evaluation.pk}/")
    cards = page.get_by_test_id("metric-cards")
    expect(cards.locator("svg.sparkline polyline")).to_have_count(1)  # P@2: two points
    expect(cards).not_to_contain_text("(1 point)")
    _shot(page, "metrics-evaluation-dashboard-two-points.png")
