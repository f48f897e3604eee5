"""Judgments exported in other tools' formats: an evaluation's through the API (one grade a
keyword and document, the aggregate rounded half up) and the pool's from its page (one
imported row an entry), each byte checked by hand."""

import json

import pytest
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from judgments.pool import pool_judgments_import
from tests.metrics.builders import build_evaluation, set_grades, slot

pytestmark = pytest.mark.django_db


def client_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def graded(personas):
    """laptop d1 grades 3,3,2 (mean 2.6667 → 3), d2 0,1 (0.5 → 1), d3 none; phone p1 1,1,1."""
    evaluation = build_evaluation(
        team=personas.team, scale="graded", strategy=3,
        keywords={"Laptop": ["d1", "d2", "d3"], "phone": ["p1"]}, metrics=[("ndcg", 3, {})])
    evaluation.name = "Shoes Q3"
    evaluation.save(update_fields=["name"])
    set_grades([personas.owner, personas.lead, personas.grader], [
        (slot(evaluation, "laptop", 1, 0), 3), (slot(evaluation, "laptop", 1, 1), 3),
        (slot(evaluation, "laptop", 1, 2), 2), (slot(evaluation, "laptop", 2, 0), 0),
        (slot(evaluation, "laptop", 2, 1), 1), (slot(evaluation, "phone", 1, 0), 1),
        (slot(evaluation, "phone", 1, 1), 1), (slot(evaluation, "phone", 1, 2), 1),
    ])
    return evaluation


def _export(user, evaluation, kind: str):
    return client_for(user).get(f"/api/v1/evaluations/{evaluation.pk}/judgments/",
                                {"format": kind})


EXPECTED = {
    "quepid_csv": ("text/csv", "query,docid,rating\nLaptop,d1,3\nLaptop,d2,1\nphone,p1,1\n"),
    "ltr": ("text/plain", "3 qid:1 # d1 Laptop\n1 qid:1 # d2 Laptop\n1 qid:2 # p1 phone\n"),
    "rre": ("application/json",
            '{"index":"Shoes Q3","id_field":"id","queries":[\n'
            '{"placeholders":{"$query":"Laptop"},"relevant_documents":{"3":["d1"],"1":["d2"]}}\n'
            ',{"placeholders":{"$query":"phone"},"relevant_documents":{"1":["p1"]}}\n'
            "]}\n"),
    "workbench": ("application/json",
                  '{"name":"Shoes Q3","description":"Exported from SearchTweak",'
                  '"type":"IMPORT_JUDGMENT","judgmentRatings":[\n'
                  '{"query":"Laptop","ratings":[{"docId":"d1","rating":"3.000"},'
                  '{"docId":"d2","rating":"1.000"}]}\n'
                  ',{"query":"phone","ratings":[{"docId":"p1","rating":"1.000"}]}\n'
                  "]}\n"),
}


@pytest.mark.parametrize("kind", list(EXPECTED))
def test_an_evaluation_exports_in_each_tool_format(personas, graded, kind):
    content_type, body = EXPECTED[kind]
    response = _export(personas.lead, graded, kind)
    assert response.status_code == 200
    assert response["Content-Type"].startswith(content_type)
    assert b"".join(response.streaming_content).decode() == body
    if content_type == "application/json":
        json.loads(body)  # the pieces make one JSON document


@pytest.mark.parametrize(("kind", "name"), [
    ("quepid_csv", "quepid-ratings-{day}.csv"), ("rre", "rre-ratings-{day}.json"),
    ("ltr", "ltr-judgments-{day}.txt"), ("workbench", "workbench-judgments-{day}.json")])
def test_each_tool_export_is_named_for_its_format(personas, graded, kind, name):
    day = timezone.localdate().strftime("%Y%m%d")
    response = _export(personas.lead, graded, kind)
    assert response["Content-Disposition"] == (
        f'attachment; filename="searchtweak-shoes-q3-{name.format(day=day)}"')


def test_a_grader_may_not_export_and_an_unknown_format_is_named(personas, graded):
    assert _export(personas.grader, graded, "rre").status_code == 403
    response = _export(personas.lead, graded, "quepid")
    assert response.status_code == 400 and "format" in response.json()


def test_the_feedback_page_links_the_tool_exports(client, personas, graded):
    client.force_login(personas.lead)
    page = client.get(reverse("judgments:feedback", args=[graded.pk])).content.decode()
    for kind in EXPECTED:
        assert f'href="/api/v1/evaluations/{graded.pk}/judgments/?format={kind}"' in page


def _pool(personas, rows):
    class Row:
        def __init__(self, text, doc_id, grade):
            self.text, self.doc_id, self.grade = text, doc_id, grade
            self.grader = self.grader_kind = self.note = self.reason = ""
            self.unsure, self.position, self.graded_at = False, None, None

    pool_judgments_import(team=personas.team, scale="graded", source="test",
                          user=personas.lead, judgments=[Row(*row) for row in rows])


def test_the_pool_exports_each_imported_row_in_import_order(client, personas):
    _pool(personas, [("red dress", "a", 3), ("jeans", "j", 0), ("red dress", "b", 2),
                     ("red dress", "a", 1)])
    client.force_login(personas.lead)
    got = client.get("/pool/export/", {"scale": "graded", "format": "quepid_csv"})
    assert got.status_code == 200 and got["Content-Type"].startswith("text/csv")
    # The same pair twice is two grades (two graders'), both written.
    assert got.content.decode() == ("query,docid,rating\nred dress,a,3\njeans,j,0\n"
                                    "red dress,b,2\nred dress,a,1\n")
    ltr = client.get("/pool/export/", {"scale": "graded", "format": "ltr"}).content.decode()
    assert ltr == ("3 qid:1 # a red dress\n0 qid:2 # j jeans\n2 qid:1 # b red dress\n"
                   "1 qid:1 # a red dress\n")
    rre = client.get("/pool/export/", {"scale": "graded", "format": "rre"})
    day = timezone.localdate().strftime("%Y%m%d")
    assert rre["Content-Disposition"] == (
        f'attachment; filename="searchtweak-pool-{personas.team.name.lower()}-graded-'
        f'rre-ratings-{day}.json"')
    assert json.loads(rre.content)["queries"] == [
        {"placeholders": {"$query": "red dress"}, "relevant_documents": {"3": ["a"]}},
        {"placeholders": {"$query": "jeans"}, "relevant_documents": {"0": ["j"]}},
        {"placeholders": {"$query": "red dress"}, "relevant_documents": {"2": ["b"], "1": ["a"]}}]
    assert json.loads(rre.content)["index"] == f"{personas.team.name} pool (graded)"


def test_the_pool_page_links_the_tool_exports_and_refuses_an_unknown_one(client, personas):
    _pool(personas, [("q", "d", 1)])
    client.force_login(personas.lead)
    page = client.get("/pool/import/").content.decode()
    for kind in EXPECTED:
        assert f'href="/pool/export/?scale=graded&amp;format={kind}"' in page
    assert client.get("/pool/export/", {"scale": "graded", "format": "xml"}).status_code == 404
