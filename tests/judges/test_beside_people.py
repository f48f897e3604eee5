"""Judges beside people: the grader leaderboard, the keyword and feedback pages, exports."""

import csv
import io
import re

import pytest
from django.test import Client

from judgments import exports, imports
from judgments.scales import scale_for_team
from metrics.reports import leaderboards
from tests.judges.calibration_data import graded_example, slot_of

pytestmark = pytest.mark.django_db


def page_client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def example(personas):
    # The judge "Sage" holds alpha 3 (grade 3, "looks perfect") and beta 3 (2, "fairly
    # good"); the judge "Other" gave beta 2 a 3. People: the lead (5 grades), the grader (1).
    return graded_example(personas.team, personas.lead, personas.grader)


def test_the_leaderboard_ranks_judges_beside_people_by_their_judge_name(example, personas):
    standings = {s.label: s for s in leaderboards.grader_leaderboard(team=personas.team)}
    assert (standings["Sage"].kind, standings["Sage"].grades_given) == ("judge", 2)
    assert (standings["Other"].kind, standings["Other"].grades_given) == ("judge", 1)
    assert (standings["lead"].kind, standings["lead"].grades_given) == ("person", 5)
    assert {s.kind for s in standings.values() if s.label in ("owner", "admin", "grader")} == {
        "person"}
    response = page_client(personas.grader).get("/leaderboards/")
    assert response.status_code == 200
    html = response.content.decode()
    board = html[html.index('data-testid="grader-leaderboard"'):]
    sage_row = board[board.index('<tr data-kind="judge"'):]
    assert "<td>Sage</td>" in sage_row[:sage_row.index("</tr>")]
    assert board.count('data-kind="judge"') == 2 and "<th>Kind</th>" in board


def test_the_leaderboard_does_not_list_another_teams_judges(example, personas):
    labels = {s.label for s in leaderboards.grader_leaderboard(team=personas.other_team)}
    assert "Sage" not in labels


def test_the_keyword_page_shows_the_lead_who_graded_and_the_judges_reason(example, personas):
    keyword_id = slot_of(example.evaluation, "alpha", 3, 0).keyword_id
    response = page_client(personas.lead).get(f"/keywords/{keyword_id}/")
    assert response.status_code == 200
    html = response.content.decode()
    third = html[html.index('<td data-testid="grades">', html.index("<td>3</td>")):]
    third = third[:third.index("</td>")]
    assert re.search(r'data-kind="judge"><strong>3</strong>\s*Sage <span class="badge">judge',
                     third)
    assert '<div class="help" data-testid="reason">looks perfect</div>' in third
    assert re.search(r'data-kind="person"><strong>0</strong>\s*lead', third)


def test_the_keyword_page_shows_a_grader_their_own_grades_only(example, personas):
    # alpha 1: the lead gave 3, the grader 2; alpha 3: the lead 0, the judge 3 with a reason.
    keyword_id = slot_of(example.evaluation, "alpha", 3, 0).keyword_id
    response = page_client(personas.grader).get(f"/keywords/{keyword_id}/")
    assert response.status_code == 200
    html = response.content.decode()
    cells = re.findall(r'<td data-testid="grades">(.*?)</td>', html, re.S)
    assert len(cells) == 3
    assert re.search(r'data-kind="person"><strong>2</strong>\s*grader\b', cells[0])
    assert cells[0].count('class="slot-grade"') == 1
    assert all("not graded by you" in cell for cell in cells[1:])
    assert "lead" not in "".join(cells) and "Sage" not in html and "looks perfect" not in html
    assert 'data-testid="own-grades-only"' in html


def test_the_keyword_page_reads_grades_in_a_fixed_number_of_queries(
        example, personas, django_assert_max_num_queries):
    keyword_id = slot_of(example.evaluation, "alpha", 3, 0).keyword_id
    client = page_client(personas.lead)
    assert client.get(f"/keywords/{keyword_id}/").status_code == 200
    with django_assert_max_num_queries(12):
        response = client.get(f"/keywords/{keyword_id}/")
    assert response.status_code == 200


def test_the_feedback_list_marks_a_judges_grade_and_shows_its_reason(example, personas):
    judge_slot = slot_of(example.evaluation, "alpha", 3, 1)
    response = page_client(personas.lead).get(f"/feedback/evaluations/{example.evaluation.pk}/")
    assert response.status_code == 200
    html = response.content.decode()
    row = html[html.index(f'data-slot-id="{judge_slot.pk}"'):]
    row = row[:row.index("</tr>")]
    assert "<td>Sage" in row
    assert '3 <span class="badge" data-testid="judge">judge</span>' in row
    assert 'data-testid="reason" title="looks perfect">looks perfect' in row
    person_slot = slot_of(example.evaluation, "alpha", 3, 0)
    person_row = html[html.index(f'data-slot-id="{person_slot.pk}"'):]
    assert 'data-testid="judge"' not in person_row[:person_row.index("</tr>")]


def test_exports_append_the_grader_kind_and_the_reason(example):
    judgments = exports.judgments_json(example.evaluation)["judgments"]
    by_grader = {(j["doc_id"], j["grader"]): j for j in judgments}
    judged = by_grader[("a3", example.judge.user.username)]
    assert (judged["grader_kind"], judged["reason"]) == ("judge", "looks perfect")
    assert (by_grader[("a3", "lead")]["grader_kind"], by_grader[("a3", "lead")]["reason"]) == (
        "person", "")
    assert list(judgments[0])[-2:] == ["grader_kind", "reason"]
    assert {j["grader_kind"] for j in judgments if j["grader"] is None} == {None}

    # The per-slot columns (unsure, note, position, graded_at) follow these six.
    rows = [row[:6] for row in
            csv.reader(io.StringIO(exports.judgments_csv_per_grader(example.evaluation)))]
    assert rows[0] == ["keyword", "doc_id", "grade", "grader", "grader_kind", "reason"]
    assert ["alpha", "a3", "3", example.judge.user.username, "judge", "looks perfect"] in rows
    assert ["alpha", "a3", "0", "lead", "person", ""] in rows


def test_a_per_grader_export_imports_back_into_the_pool(example, personas):
    text = exports.judgments_csv_per_grader(example.evaluation)
    scale = scale_for_team(team_id=personas.team.pk, code="graded")
    parsed = imports.parse_csv(text.encode(), scale=scale)
    assert parsed.ok
    assert len(parsed.judgments) == len(text.splitlines()) - 1
