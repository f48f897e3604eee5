"""Who sees whose grades (searchtweak.access.grade_visibility), surface by surface: a grader
sees their own grades only and nothing of another's on a result they may still grade; a
lead and above see every grade. The access matrix checks every URL for the markers too
(tests/searchtweak/test_access_matrix.py)."""

import re

import pytest
from django.test import Client
from django.urls import reverse

from judgments.models import FeedbackSlot
from searchtweak import access
from tests.judgments.visibility_data import (
    JUDGE_REASON,
    KEYWORD,
    SECOND_GRADER,
    SECOND_NOTE,
    VIEWER_NOTE,
    independent_grading,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def graded(personas):
    return independent_grading(personas.team, personas.grader)


def logged_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def chips(html: str) -> dict[int, list[tuple[str, str]]]:
    """The slot chips of each result (by position) of one keyword: (title, text)."""
    return {int(position): re.findall(r'<span class="slot ?(?:empty)?" title="([^"]*)">'
                                      r"([^<]*)</span>", item)
            for position, item in re.findall(r'<li value="(\d+)">(.*?)</li>', html, re.S)}


# --- the rule ------------------------------------------------------------------------------


def test_the_rule_lets_leads_and_above_see_everyone_and_a_grader_their_own(personas, graded):
    team_id = personas.team.pk
    for user in (personas.owner, personas.admin, personas.lead):
        visibility = access.grade_visibility(user=user)
        assert visibility.sees_everyone(team_id)
        assert FeedbackSlot.objects.filter(visibility.slots(),
                                           evaluation=graded.evaluation).count() == 6
    mine = access.grade_visibility(user=personas.grader)
    assert not mine.sees_everyone(team_id)
    assert set(FeedbackSlot.objects.filter(mine.slots(), evaluation=graded.evaluation)) == {
        graded.open_slot, graded.own_slot}
    # Another team's owner sees everyone's grades in their own team only.
    outsider = access.grade_visibility(user=personas.outsider)
    assert not outsider.sees_everyone(team_id)
    assert not FeedbackSlot.objects.filter(outsider.slots(), evaluation=graded.evaluation)


def test_the_rule_shows_an_anonymous_visitor_nothing(graded):
    from django.contrib.auth.models import AnonymousUser

    nobody = access.grade_visibility(user=AnonymousUser())
    assert not FeedbackSlot.objects.filter(nobody.slots(), evaluation=graded.evaluation)
    # Slots with no grader (free, or copied from imported judgments) are not "theirs".
    assert FeedbackSlot.objects.filter(evaluation=graded.evaluation, user=None).exists()


# --- the dashboard's keyword table (page and fragment) -------------------------------------


@pytest.mark.parametrize("name", ["metrics:evaluation_dashboard",
                                  "metrics:evaluation_dashboard_table"])
def test_the_keyword_table_shows_a_grader_their_own_chips_only(personas, graded, name):
    html = logged_in(personas.grader).get(
        reverse(name, args=[graded.evaluation.pk])).content.decode()
    assert f'data-keyword="{KEYWORD}"' in html
    # Result 1: only the viewer's open slot; result 2: only the viewer's 2.
    assert chips(html) == {1: [("grader", "·")], 2: [("grader", "2?")]}
    assert SECOND_GRADER not in html and f'title="{graded.judge_username}"' not in html
    assert 'data-testid="own-grades-only"' in html


def test_the_keyword_table_shows_a_lead_every_grade(personas, graded):
    html = logged_in(personas.lead).get(
        reverse("metrics:evaluation_dashboard", args=[graded.evaluation.pk])).content.decode()
    assert chips(html) == {
        1: [(SECOND_GRADER, "3?"), ("grader", "·"), (graded.judge_username, "1")],
        2: [("grader", "2?"), (SECOND_GRADER, "0?"), ("unassigned", "·")]}
    assert 'data-testid="own-grades-only"' not in html


# --- the side-by-side comparison -----------------------------------------------------------


def test_the_side_by_side_view_shows_a_grader_their_own_grades_only(personas, graded):
    other = independent_grading(personas.team, personas.grader, second=graded.second,
                                judge_name="Echo two")
    html = logged_in(personas.grader).get(reverse("metrics:compare_keyword"), {
        "a": graded.evaluation.pk, "b": other.evaluation.pk, "keyword": KEYWORD,
    }).content.decode()
    cells = re.findall(r'<td class="[^"]*">(.*?)</td>', html, re.S)
    found = [re.findall(r'title="([^"]*)">([^<]*)</span>', cell) for cell in cells]
    assert found == [[("grader", "·")], [("grader", "·")], [("grader", "2")], [("grader", "2")]]
    assert SECOND_GRADER not in html and "your own grades only" in html


# --- the grading API's snapshot list -------------------------------------------------------


def test_the_snapshot_list_api_answers_a_grader_their_own_slots_only(personas, graded):
    response = logged_in(personas.grader).get(
        reverse("judgments_api:snapshots", args=[graded.evaluation.pk]))
    assert response.status_code == 200
    results = response.json()["results"]
    assert [[(s["user"], s["grade"], s["note"]) for s in r["slots"]] for r in results] == [
        [("grader", None, "")], [("grader", 2, VIEWER_NOTE)]]
    body = response.content.decode()
    assert SECOND_GRADER not in body and SECOND_NOTE not in body


def test_the_snapshot_list_api_answers_a_lead_every_slot(personas, graded):
    response = logged_in(personas.lead).get(
        reverse("judgments_api:snapshots", args=[graded.evaluation.pk]))
    results = response.json()["results"]
    assert [[(s["user"], s["grade"]) for s in r["slots"]][:2] for r in results] == [
        [(SECOND_GRADER, 3), ("grader", None)], [("grader", 2), (SECOND_GRADER, 0)]]
    assert SECOND_NOTE in response.content.decode()


# --- the keyword page ----------------------------------------------------------------------


def test_the_keyword_page_shows_a_grader_their_own_grade_only(personas, graded):
    html = logged_in(personas.grader).get(
        reverse("evaluations:keyword_detail", args=[graded.own_slot.keyword_id])
    ).content.decode()
    cells = re.findall(r'<td data-testid="grades">(.*?)</td>', html, re.S)
    assert "not graded by you" in cells[0] and "slot-grade" not in cells[0]
    assert re.search(r"<strong>2</strong>\s*grader", cells[1])
    assert cells[1].count("slot-grade") == 1
    assert SECOND_GRADER not in html and JUDGE_REASON not in html


def test_the_keyword_page_shows_a_lead_every_grade_and_the_judges_reason(personas, graded):
    html = logged_in(personas.lead).get(
        reverse("evaluations:keyword_detail", args=[graded.own_slot.keyword_id])
    ).content.decode()
    assert html.count(SECOND_GRADER) == 2 and JUDGE_REASON in html


# --- the pages and exports of every grade: leads and above ---------------------------------


@pytest.mark.parametrize("url", ["judgments:feedback", "judgments_api:judgments"])
def test_every_grade_of_an_evaluation_is_refused_to_a_grader(personas, graded, url):
    path = reverse(url, args=[graded.evaluation.pk])
    refused = logged_in(personas.grader).get(path)
    assert refused.status_code == 403
    assert SECOND_GRADER not in refused.content.decode()
    assert SECOND_GRADER in logged_in(personas.lead).get(path).content.decode()


@pytest.mark.parametrize("query", ["?format=jsonl", "?format=csv&per_grader=true",
                                   "?format=json&download=1"])
def test_every_export_that_names_graders_is_refused_to_a_grader(personas, graded, query):
    path = reverse("judgments_api:judgments", args=[graded.evaluation.pk]) + query
    refused = logged_in(personas.grader).get(path)
    assert refused.status_code == 403
    assert SECOND_GRADER not in refused.content.decode()
    shown = logged_in(personas.lead).get(path)
    assert shown.status_code == 200 and SECOND_GRADER in shown.content.decode()
