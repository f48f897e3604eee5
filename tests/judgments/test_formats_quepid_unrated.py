"""Quepid's basic CSV lists a query with no rated result as `query,,`: our export of an
evaluation writes such a row for each keyword with no graded result, the import skips them
and says how many, and the file read and written again is the same bytes."""

import pytest
from rest_framework.test import APIClient

from judgments.formats import quepid_csv, recognise
from judgments.scales import builtin_scale
from tests.metrics.builders import build_evaluation, set_grades, slot

GRADED = builtin_scale("graded")
# As Quepid's "Export ratings: basic" writes a case with an unrated query (rocky).
QUEPID_FILE = ("query,docid,rating\nstar wars,11,3\nstar wars,1891,2\nrocky,,\n"
               "\"batman, the dark knight\",155,3\nmatrix,,\n")


def test_the_import_skips_unrated_queries_and_says_how_many():
    parsed = recognise.parse_content(kind="auto", content=QUEPID_FILE.encode(), mapping=None,
                                     scale=GRADED)
    assert parsed.ok, parsed.errors
    assert [(item.line, item.text, item.doc_id, item.grade) for item in parsed.judgments] == [
        (2, "star wars", "11", 3), (3, "star wars", "1891", 2),
        (5, "batman, the dark knight", "155", 3)]
    assert parsed.skipped_count == 2
    assert parsed.skipped_note == "2 queries have no rating (rows `query,,`): skipped."
    assert parsed.unrated == [(4, "rocky"), (6, "matrix")]


def test_the_file_read_and_written_again_is_the_same_bytes():
    parsed = quepid_csv.parse_quepid_csv(QUEPID_FILE.encode(), scale=GRADED)
    again = "".join(quepid_csv.write_quepid_csv(quepid_csv.rows_in_file_order(parsed)))
    assert again == QUEPID_FILE


@pytest.mark.django_db
def test_an_evaluation_export_lists_keywords_with_no_graded_result(personas):
    evaluation = build_evaluation(
        team=personas.team, scale="graded", keywords={"Laptop": ["d1", "d2"], "rocky": ["r1"],
                                                      "phone": ["p1"], "matrix": []},
        metrics=[("ndcg", 2, {})])
    set_grades([personas.lead], [(slot(evaluation, "laptop", 1, 0), 3),
                                 (slot(evaluation, "laptop", 2, 0), 0),
                                 (slot(evaluation, "phone", 1, 0), 1)])
    client = APIClient()
    client.force_authenticate(personas.lead)
    response = client.get(f"/api/v1/evaluations/{evaluation.pk}/judgments/",
                          {"format": "quepid_csv"})
    exported = b"".join(response.streaming_content).decode()
    assert exported == ("query,docid,rating\nLaptop,d1,3\nLaptop,d2,0\nrocky,,\nphone,p1,1\n"
                        "matrix,,\n")
    parsed = quepid_csv.parse_quepid_csv(exported.encode(), scale=GRADED)
    assert parsed.skipped_count == 2
    assert "".join(quepid_csv.write_quepid_csv(quepid_csv.rows_in_file_order(parsed))) == exported
