"""The triage API's grade is a JSON integer, as every grade the API takes: "2" (a string)
is refused naming the field and changes nothing; 2 is stored."""

import pytest

from judgments.models import AdjudicatedAnswer
from tests.judges.calibration_data import slot_of
from tests.judges.test_triage_pages import _adjudicate, api_client
from tests.judges.triage_data import graded_example

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("grade", ["2", "two", True, 2**70])
def test_a_grade_that_is_not_a_json_integer_is_a_400_naming_it(personas, grade):
    example = graded_example(personas.team, personas.lead, personas.grader)
    target = slot_of(example.evaluation, "hats", 1, 0).snapshot
    response = api_client(personas.lead).post(_adjudicate(example, target.pk, api=True),
                                              {"grade": grade}, format="json")
    assert response.status_code == 400
    assert list(response.json()) == ["grade"]
    assert not AdjudicatedAnswer.objects.exists()


def test_a_json_integer_grade_is_stored(personas):
    example = graded_example(personas.team, personas.lead, personas.grader)
    target = slot_of(example.evaluation, "hats", 1, 0).snapshot
    response = api_client(personas.lead).post(_adjudicate(example, target.pk, api=True),
                                              {"grade": 2}, format="json")
    assert response.status_code == 200, response.json()
    assert AdjudicatedAnswer.objects.get().grade == 2
