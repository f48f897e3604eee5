"""Calibration's agreement by the people's shown position (position bias).

The graded example (tests/judges/calibration_data.graded_example) gives six judge x person
pairs (person, judge). Here each person's grade is given the position it was shown at:

    alpha 1 (first):  (3, 3) shown 2       alpha 1 (second): (2, 3) not recorded
    alpha 2 (first):  (1, 1) shown 1       alpha 3 (first):  (0, 1) shown 11
    beta 1 (first):   (2, 2) shown 1       beta 2 (first):   (0, 0) shown 12

By the person's shown position:
    1:            (1,1) (2,2)  2 pairs, 2 exact = 1.0,  mean(person - judge) = 0
    2:            (3,3)        1 pair,  1 exact = 1.0,  0
    11+:          (0,1) (0,0)  2 pairs, 1 exact = 0.5,  (-1 + 0) / 2 = -0.5
    not recorded: (2,3)        1 pair,  0 exact = 0.0,  -1
The judge's own slot (alpha 3, shown 5 if anything) and the other judge's grade take no part.
"""

import re

import pytest
from django.test import Client
from rest_framework.test import APIClient

import metrics_engine as core
from judges.calibration import PositionAgreement, judge_calibration, position_agreement
from judgments.models import FeedbackSlot
from tests.judges.calibration_data import graded_example, slot_of

pytestmark = pytest.mark.django_db

EXPECTED = [
    PositionAgreement(label="1", pair_count=2, exact_match_count=2, mean_difference=0.0),
    PositionAgreement(label="2", pair_count=1, exact_match_count=1, mean_difference=0.0),
    PositionAgreement(label="11+", pair_count=2, exact_match_count=1, mean_difference=-0.5),
    PositionAgreement(label="not recorded", pair_count=1, exact_match_count=0,
                      mean_difference=-1.0),
]


@pytest.fixture
def example(personas):
    example = graded_example(personas.team, personas.lead, personas.grader)
    for text, position, index, shown in [("alpha", 1, 0, 2), ("alpha", 2, 0, 1),
                                         ("alpha", 3, 0, 11), ("beta", 1, 0, 1),
                                         ("beta", 2, 0, 12), ("alpha", 3, 1, 5),
                                         ("beta", 2, 1, 1)]:
        FeedbackSlot.objects.filter(pk=slot_of(example.evaluation, text, position, index).pk
                                    ).update(shown_position=shown)
    return example


def test_it_groups_the_pairs_by_the_persons_shown_position(example):
    result = judge_calibration(judge=example.judge, evaluation=example.evaluation)
    assert result.by_position == EXPECTED
    assert [row.exact_match_rate for row in result.by_position] == [1.0, 1.0, 0.5, 0.0]
    assert sum(row.pair_count for row in result.by_position) == result.pair_count == 6


def test_positions_ten_and_eleven_fall_on_either_side_of_the_last_row():
    scale = core.SCALES["binary"]
    # Snapshot 1: judge 1; people 1 shown 10, 0 shown 11, 1 shown 40; snapshot 2: judge 7
    # (off the scale: no pairs); snapshot 3: a person's 5 (off the scale) shown 1.
    rows = position_agreement(
        {1: 1, 2: 7, 3: 0},
        {1: [(1, 10), (0, 11), (1, 40)], 2: [(1, 1)], 3: [(5, 1)]}, scale=scale)
    assert rows == [
        PositionAgreement(label="10", pair_count=1, exact_match_count=1, mean_difference=0.0),
        PositionAgreement(label="11+", pair_count=2, exact_match_count=1,
                          mean_difference=-0.5),
    ]
    assert position_agreement({}, {}, scale=scale) == []


def test_the_page_shows_the_table(example, personas):
    client = Client()
    client.force_login(personas.lead)
    html = client.get(f"/judges/{example.judge.pk}/calibration/").content.decode()
    table = html[html.index('data-testid="position-agreement"'):]
    table = table[:table.index("</table>")]
    rows = re.findall(r'<tr><th scope="row">([^<]*)</th><td class="num">(\d+)</td>'
                      r'<td class="num">([^<]*)</td><td class="num">([^<]*)</td></tr>', table)
    assert rows == [("1", "2", "1.000", "0.000"), ("2", "1", "1.000", "0.000"),
                    ("11+", "2", "0.500", "-0.500"), ("not recorded", "1", "0.000", "-1.000")]
    assert "this evaluation hands results out in the engine's order" in html


def test_the_api_answers_the_same_rows(example, personas):
    client = APIClient()
    client.force_authenticate(personas.lead)
    body = client.get(f"/api/v1/judges/{example.judge.pk}/calibration/"
                      f"?evaluation={example.evaluation.pk}").json()
    assert body["by_position"] == [
        {"label": "1", "pair_count": 2, "exact_match_count": 2, "exact_match_rate": 1.0,
         "mean_difference": 0.0},
        {"label": "2", "pair_count": 1, "exact_match_count": 1, "exact_match_rate": 1.0,
         "mean_difference": 0.0},
        {"label": "11+", "pair_count": 2, "exact_match_count": 1, "exact_match_rate": 0.5,
         "mean_difference": -0.5},
        {"label": "not recorded", "pair_count": 1, "exact_match_count": 0,
         "exact_match_rate": 0.0, "mean_difference": -1.0},
    ]
