"""Evaluations with no keyword in common: the N-way compare says so, on the page (400 with
the message), through the API (400 on `evaluations`) and as the CSV's 400, never a 500."""

import pytest
from django.core.exceptions import ValidationError
from rest_framework.test import APIClient

from metrics.reports import compare_many
from tests.metrics.builders import build_evaluation

pytestmark = pytest.mark.django_db

P2 = ("precision", 2, {})
MESSAGE = ("These evaluations have no keyword in common: a comparison is made over the "
           "keywords all of them have. Pick evaluations of the same keywords (or query set).")


@pytest.fixture
def disjoint(personas):
    a = build_evaluation(team=personas.team, scale="binary", metrics=[P2],
                         keywords={"boots": ["d1", "d2"]})
    b = build_evaluation(team=personas.team, scale="binary", metrics=[P2],
                         keywords={"sandals": ["d1", "d2"]})
    return a, b


def test_the_selector_refuses_them_on_evaluations(disjoint):
    a, b = disjoint
    with pytest.raises(ValidationError) as excinfo:
        compare_many.evaluations_compare_many(evaluations=[a, b], reference=a)
    assert excinfo.value.message_dict == {"evaluations": [MESSAGE]}


def test_the_api_answers_400_naming_evaluations(personas, disjoint):
    a, b = disjoint
    client = APIClient()
    client.force_authenticate(personas.lead)
    response = client.get("/api/v1/compare/", {"evaluation": [a.pk, b.pk]})
    assert response.status_code == 400
    assert response.json() == {"evaluations": [MESSAGE]}


def test_the_page_and_the_csv_say_it(client, personas, disjoint):
    a, b = disjoint
    client.force_login(personas.lead)
    query = {"evaluation": [a.pk, b.pk]}
    page = client.get("/compare/many/", query)
    assert page.status_code == 400
    assert "no keyword in common" in page.content.decode()
    csv = client.get("/compare/many/csv/", query)
    assert csv.status_code == 400
    assert csv.content.decode() == f"evaluations: {MESSAGE}"
