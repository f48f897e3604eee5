"""A gold import whose CSV holds a cell beyond csv's field limit (128 KB), or a grade of
thousands of digits, is a 400 on `file` naming the line, never a server error; nothing is
stored."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from judgments.models import GoldItem
from tests.judgments.builders import evaluation_with_slots

pytestmark = pytest.mark.django_db


def upload(personas, evaluation, content: bytes):
    client = APIClient()
    client.force_authenticate(personas.lead)
    return client.post(f"/api/v1/evaluations/{evaluation.pk}/gold/import/",
                       {"file": SimpleUploadedFile("gold.csv", content, "text/csv")},
                       format="multipart")


def test_a_cell_beyond_the_csv_field_limit_is_a_400_naming_its_line(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=2, positions=2)
    content = (b"keyword,doc_id,grade\n"
               b"query 1,query 1-d1,3\n"
               b'query 2,"' + b"x" * 140_000 + b'",1\n')
    response = upload(personas, evaluation, content)
    assert response.status_code == 400
    assert response.json() == {"file": [
        "line 3: not a CSV row (field larger than field limit (131072))."]}
    assert not GoldItem.objects.exists()


def test_a_grade_of_thousands_of_digits_is_an_error_on_its_line(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=2, positions=2)
    content = b"query 1,query 1-d1," + b"9" * 5000 + b"\nquery 2,query 2-d2,1\n"
    response = upload(personas, evaluation, content)
    assert response.status_code == 400
    errors = response.json()["file"]
    assert len(errors) == 1 and errors[0].startswith("line 1: ") and len(errors[0]) < 200
    assert not GoldItem.objects.exists()


def test_a_row_after_a_quoted_cell_spanning_lines_is_numbered_by_its_line(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=2, positions=2)
    content = b'"query\n1",query 1-d1,3\nquery 2,nowhere,1\n'
    response = upload(personas, evaluation, content)
    assert response.status_code == 400
    assert [error.split(":")[0] for error in response.json()["file"]] == ["line 1", "line 3"]
