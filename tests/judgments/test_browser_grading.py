"""A grader at work in a real Chromium: keyboard only, through the real login page."""

from base64 import b64encode
from pathlib import Path

import pytest
from playwright.sync_api import expect

from evaluations.models import Evaluation, Snapshot
from judgments import gold
from judgments.grader_tags import grader_tags_set
from judgments.models import FeedbackSlot, GoldItem, GoldProbe
from judgments.scale_writes import scale_create
from tests.judgments.builders import evaluation_with_slots
from tests.searchtweak.factories import PASSWORD

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def log_in(page, live_server, username: str) -> None:
    page.goto(f"{live_server.url}/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{live_server.url}/")


def keys_ready(page) -> None:
    page.wait_for_selector("html[data-grading-keys=on]", state="attached")


def press_and_wait(page, key: str, *, mine: int) -> None:
    page.keyboard.press(key)
    expect(page.get_by_test_id("mine-count")).to_have_text(str(mine))


def expect_document(page, keyword: int, position: int) -> None:
    expect(page.get_by_test_id("document-name")).to_have_text(
        f"Result {position} for query {keyword}")


@pytest.mark.slow_reason("grades, goes back and skips by keyboard in Chromium")
def test_a_grader_grades_by_keyboard_goes_back_and_skips(page, live_server, personas):
    evaluation = evaluation_with_slots(
        personas.team, keywords=2, positions=6, guidelines="Grade **3** for an exact match.")
    log_in(page, live_server, "grader")
    page.get_by_test_id("start-grading").click()
    keys_ready(page)
    expect_document(page, 1, 1)
    expect(page.get_by_test_id("guidelines")).to_contain_text("Grade 3 for an exact match.")

    # Keyword 1, positions 1..5 graded with the digit keys.
    for mine, key in enumerate(["2", "3", "1", "0", "2"], start=1):
        press_and_wait(page, key, mine=mine)
    expect_document(page, 1, 6)
    page.keyboard.press("s")  # skip position 6 for now
    expect_document(page, 2, 1)
    # Keyword 2, positions 1..4, then 5 with U (unsure) and a note.
    for mine, key in enumerate(["3", "3", "0", "1"], start=6):
        press_and_wait(page, key, mine=mine)
    page.keyboard.press("u")
    expect(page.locator("#note")).to_be_focused()
    page.keyboard.type("only the title matches")
    page.keyboard.press("Enter")
    press_and_wait(page, "2", mine=10)
    expect_document(page, 2, 6)

    # Backspace goes back to the previous result; a new digit changes its grade.
    page.keyboard.press("Backspace")
    expect(page.get_by_test_id("regrade")).to_be_visible()
    expect_document(page, 2, 5)
    page.keyboard.press("1")
    expect_document(page, 2, 6)
    expect(page.get_by_test_id("mine-count")).to_have_text("10")
    expect(page.get_by_test_id("graded-count")).to_have_text("10")
    expect(page.get_by_test_id("total-count")).to_have_text("12")

    # The rest, then the skipped one comes back last, then the thank-you.
    press_and_wait(page, "3", mine=11)
    expect_document(page, 1, 6)
    # The last grade finishes the evaluation: no progress line (it counts evaluations that
    # take grades), the thank-you says what was done.
    page.keyboard.press("0")
    expect(page.get_by_test_id("empty-queue")).to_contain_text("You graded 12 results")
    expect(page.get_by_test_id("progress")).to_have_count(0)

    grades = {
        (slot.keyword.position, slot.snapshot.position): (slot.grade, slot.unsure, slot.note)
        for slot in FeedbackSlot.objects.filter(evaluation=evaluation).select_related(
            "keyword", "snapshot")
    }
    assert [grades[(1, p)][0] for p in range(1, 7)] == [2, 3, 1, 0, 2, 0]
    assert [grades[(2, p)][0] for p in range(1, 7)] == [3, 3, 0, 1, 1, 3]
    # The re-grade form showed the earlier unsure note, so it stays with the new grade.
    assert grades[(2, 5)][1:] == (True, "only the title matches")
    assert set(FeedbackSlot.objects.values_list("user__username", flat=True)) == {"grader"}


def test_unsure_with_a_note_is_stored(page, live_server, personas):
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=2)
    log_in(page, live_server, "grader")
    page.goto(f"{live_server.url}/grade/evaluations/{evaluation.pk}/")
    keys_ready(page)
    page.keyboard.press("u")
    page.keyboard.type("ambiguous query")
    page.keyboard.press("Escape")
    press_and_wait(page, "1", mine=1)
    slot = FeedbackSlot.objects.get(evaluation=evaluation, grade__isnull=False)
    assert (slot.grade, slot.unsure, slot.note) == (1, True, "ambiguous query")


def test_a_gold_probe_is_graded_by_keyboard_like_any_result(page, live_server, personas):
    source = evaluation_with_slots(personas.team, keywords=1, positions=1, texts=["ducks"])
    gold_snapshot = Snapshot.objects.get(keyword__evaluation=source)
    GoldItem.objects.create(team=personas.team, scale="graded", snapshot=gold_snapshot,
                            grade=2, source="page")
    Evaluation.objects.filter(pk=source.pk).update(status=Evaluation.Status.FINISHED)
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=12, gold_rate=0.5)
    # The claim that shows the one gold item, as the rule (judgments.gold.probe_due) says.
    grader = personas.grader
    claim = next(n for n in range(12) if gold.probe_due(
        user_id=grader.pk, evaluation_id=evaluation.pk, claim_number=n, rate=0.5))
    log_in(page, live_server, "grader")
    page.goto(f"{live_server.url}/grade/evaluations/{evaluation.pk}/")
    keys_ready(page)
    for mine in range(1, claim + 1):
        press_and_wait(page, "1", mine=mine)
    expect(page.get_by_test_id("document-name")).to_have_text(gold_snapshot.name)
    # The queue's address on a first load, else the opaque one slots have too.
    assert "gold" not in page.url and "probe" not in page.url
    # U and a note, then a grade key: stored on the probe; "you graded" moves as for a slot.
    page.keyboard.press("u")
    page.keyboard.type("looks odd")
    page.keyboard.press("Enter")
    press_and_wait(page, "3", mine=claim + 1)
    expect(page.get_by_test_id("document-name")).not_to_have_text(gold_snapshot.name)
    probe = GoldProbe.objects.get(user=grader)
    assert (probe.grade, probe.unsure, probe.note) == (3, True, "looks odd")
    assert not FeedbackSlot.objects.filter(grade=3).exists()


def test_the_page_works_without_javascript(browser, live_server, personas):
    evaluation_with_slots(personas.team, keywords=1, positions=2, scale="binary")
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    log_in(page, live_server, "grader")
    page.goto(f"{live_server.url}/grade/")
    page.locator('button[data-key="1"]').click()
    expect(page.get_by_test_id("mine-count")).to_have_text("1")
    expect(page.get_by_test_id("document-name")).to_have_text("Result 2 for query 1")
    assert FeedbackSlot.objects.filter(grade=1).count() == 1
    context.close()


STARS = {str(g): {"label": label, "color": color} for g, label, color in [
    (1, "Awful", "#b42318"), (2, "Weak", "#f79009"), (3, "Fine", "#fdb022"),
    (4, "Good", "#2e90fa"), (5, "Superb", "#079455")]}


@pytest.mark.parametrize("scale", ["binary", "graded", "detail", "stars"])
def test_screenshot_of_the_grading_page_on_each_scale(page, live_server, personas, scale):
    if scale == "stars":
        scale_create(team=personas.team, code="stars", name="Stars", lo=1, hi=5,
                     labels=STARS)
    evaluation = evaluation_with_slots(
        personas.team, keywords=1, positions=2, scale=scale, show_position=True,
        texts=["running shoes"],
        guidelines="- **Relevant**: the document answers the query.\n- Otherwise not.")
    snapshot = evaluation.keywords.get().snapshots.get(position=1)
    snapshot.name = "Trail running shoe, waterproof"
    snapshot.fields = {"Brand": "Acme", "Price": "89.00 EUR"}
    snapshot.save()
    log_in(page, live_server, "grader")
    page.goto(f"{live_server.url}/grade/")
    buttons = page.locator(".grade-button")
    expected = {"binary": 2, "graded": 4, "detail": 10, "stars": 5}[scale]
    expect(buttons).to_have_count(expected)
    if scale == "detail":
        expect(page.locator('button[data-key="0"]')).to_have_attribute("value", "10")
    if scale == "stars":
        expect(page.get_by_role("button", name="Superb")).to_be_visible()
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"grading-{scale}.png"), full_page=True)


def svg_tile(color: str, text: str) -> str:
    svg = (f'<svg xmlns="http://www.w3.org/2000/svg" width="96" height="96">'
           f'<rect width="96" height="96" rx="14" fill="{color}"/>'
           f'<text x="48" y="58" font-family="sans-serif" font-size="30" fill="#fff" '
           f'text-anchor="middle">{text}</text></svg>')
    return "data:image/svg+xml;base64," + b64encode(svg.encode()).decode()


IMAGE_LOADED = """() => {
  const img = document.querySelector("[data-testid=document-image]");
  return img !== null && img.complete && img.naturalWidth > 0;
}"""


@pytest.mark.slow_reason("grades by keyboard in Chromium with images loaded")
def test_a_grader_sees_images_and_the_key_panel_and_grades_by_keyboard(
        page, live_server, personas):
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=4,
                                       show_position=True, texts=["running shoes"])
    colors = ["#2456d3", "#079455", "#b42318", "#f79009"]
    snapshots = evaluation.keywords.get().snapshots.order_by("position")
    for snapshot, color in zip(snapshots, colors, strict=True):
        snapshot.image = svg_tile(color, f"P{snapshot.position}")
        snapshot.save(update_fields=["image"])
    log_in(page, live_server, "grader")
    page.goto(f"{live_server.url}/grade/")
    keys_ready(page)
    ARTIFACTS.mkdir(exist_ok=True)

    page.wait_for_function(IMAGE_LOADED)
    assert page.get_by_test_id("document-image").evaluate("img => img.naturalWidth") == 96
    expect(page.get_by_test_id("position")).to_have_text("Position 1")
    expect(page.get_by_test_id("reservation")).to_contain_text(
        "Reserved for you for 5 more minutes")
    expect(page.get_by_role("button", name="? Keys")).to_be_visible()
    page.screenshot(path=str(ARTIFACTS / "grading-image.png"), full_page=True)

    # ? opens the key panel; while it is open a digit grades nothing; Esc closes it.
    page.keyboard.press("?")
    help_panel = page.get_by_test_id("key-help")
    expect(help_panel).to_be_visible()
    expect(help_panel).to_contain_text("Skip for now")
    expect(help_panel).to_contain_text("Grade 3 (Perfect)")
    page.screenshot(path=str(ARTIFACTS / "grading-keys.png"), full_page=True)
    page.keyboard.press("2")
    page.keyboard.press("Escape")
    expect(help_panel).to_be_hidden()
    expect(page.get_by_test_id("mine-count")).to_have_text("0")
    assert not FeedbackSlot.objects.filter(grade__isnull=False).exists()

    # Three results graded by keyboard only, each with its own image loaded.
    for mine, key in enumerate(["2", "3", "1"], start=1):
        press_and_wait(page, key, mine=mine)
        expect(page.get_by_test_id("position")).to_have_text(f"Position {mine + 1}")
        page.wait_for_function(IMAGE_LOADED)
    expect(page.get_by_test_id("document-image")).to_have_attribute(
        "src", svg_tile(colors[3], "P4"))
    grades = dict(FeedbackSlot.objects.filter(grade__isnull=False)
                  .values_list("snapshot__position", "grade"))
    assert grades == {1: 2, 2: 3, 3: 1}

    # The ? Keys button opens the same panel; ? closes it again.
    page.get_by_role("button", name="? Keys").click()
    expect(help_panel).to_be_visible()
    page.keyboard.press("?")
    expect(help_panel).to_be_hidden()


def test_screenshots_of_an_empty_queue_routed_to_other_tags(page, live_server, personas):
    grader_tags_set(team=personas.team, user=personas.grader, tags=["de"])
    evaluation = evaluation_with_slots(personas.team, keywords=3, positions=4,
                                       tags=["de", "fashion"], name="Shoes DE")
    log_in(page, live_server, "grader")
    page.goto(f"{live_server.url}/grade/")
    expect(page.get_by_test_id("empty-queue")).to_contain_text(
        "12 results wait for graders tagged de, fashion.")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "grading-empty-routed.png"), full_page=True)
    page.context.clear_cookies()
    log_in(page, live_server, "admin")
    page.goto(f"{live_server.url}/evaluations/{evaluation.pk}/")
    expect(page.get_by_test_id("routing-warning")).to_contain_text(
        "No grader carries all of the routing tags de, fashion: nobody will be handed these "
        "results.")
    page.screenshot(path=str(ARTIFACTS / "evaluation-routing-warning.png"), full_page=True)
