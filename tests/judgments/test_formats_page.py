"""The pool import page and API with other tools' files: the preview names the format and
why, how ratings became grades, what was skipped; a bad file stores nothing."""

import io
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from judgments.models import PoolJudgment
from tests.metrics.builders import build_evaluation

pytestmark = pytest.mark.django_db
URL = "/pool/import/"
FILES = Path(__file__).parent / "files"


def client_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def _post(client, name: str, content: bytes, **extra):
    return client.post(URL, {"scale": "graded", "format": "auto",
                             "file": SimpleUploadedFile(name, content), **extra})


def test_the_preview_names_the_format_the_rule_and_its_table(client, personas):
    client.force_login(personas.lead)
    response = _post(client, "srw.json", (FILES / "workbench_judgments.json").read_bytes(),
                     preview="1")
    assert response.status_code == 200
    page = response.content.decode()
    assert ("Read as <strong>OpenSearch Workbench judgments JSON</strong>: a JSON object with "
            "judgmentRatings.") in page
    assert ("Ratings are 0..1, spread over the Graded scale 0..3: grade = 0 + round(rating * "
            "3), halves up.") in page
    assert "<tr><td>0.700</td><td>2</td></tr>" in page
    assert "<tr><td>1.000</td><td>3</td></tr>" in page
    assert "5 judgments for 2 keywords can be imported" in page
    assert not PoolJudgment.objects.exists()


def test_the_preview_says_how_many_unrated_queries_are_skipped(client, personas):
    client.force_login(personas.lead)
    response = _post(client, "basic.csv", (FILES / "quepid_basic.csv").read_bytes(),
                     preview="1")
    page = response.content.decode()
    assert "Read as <strong>Quepid basic CSV</strong>: header query,docid,rating." in page
    assert "1 query has no rating (rows `query,,`): skipped." in page
    assert ("Ratings are whole grades, kept as they are on the Graded scale 0..3 (one outside "
            "it is an error).") in page
    assert "<th>Rating</th>" not in page


def test_an_import_stores_the_recognised_file_and_names_its_format(client, personas):
    client.force_login(personas.lead)
    response = _post(client, "ltr.txt", (FILES / "quepid_ltr.txt").read_bytes(),
                     **{"import": "1"})
    assert response.status_code == 302
    assert sorted(PoolJudgment.objects.values_list("text", "doc_id", "grade", "source")) == [
        ("star wars", "11", 3, "ltr: ltr.txt"), ("star wars", "12180", 0, "ltr: ltr.txt"),
        ("star wars", "1891", 2, "ltr: ltr.txt"), ("the matrix", "603", 1, "ltr: ltr.txt")]


@pytest.mark.parametrize(("name", "content", "error"), [
    ("odd.csv", b"query,doc,grade\nq,d,1\n",
     "the format is not recognised: a CSV header &#x27;query,doc,grade&#x27; of no known "
     "format"),
    ("srw.json", b'{"judgmentRatings": [{"query": "q", "ratings": [{"docId": "a", "rating": '
     b'"4.5"}]}]}', "judgmentRatings[0].ratings[0].rating: rating 4.5 is neither a whole "
     "grade of the Graded scale 0..3 nor within 0..1"),
    ("ids.qrels", b"1 0 d1 2\n", "TREC qrels need the mapping file"),
])
def test_a_bad_file_is_refused_with_the_reason_and_stores_nothing(client, personas, name,
                                                                    content, error):
    client.force_login(personas.lead)
    for action in ("preview", "import"):
        response = _post(client, name, content, **{action: "1"})
        assert response.status_code == 400
        assert error in response.content.decode()
    assert not PoolJudgment.objects.exists()


def test_the_api_dry_run_names_the_format_and_the_rule(personas):
    evaluation = build_evaluation(team=personas.team, keywords={"red dress": ["d1"]},
                                  metrics=[("ndcg", 2, {})])
    upload = io.BytesIO((FILES / "workbench_judgments.json").read_bytes())
    upload.name = "srw.json"
    response = client_for(personas.lead).post(
        f"/api/v1/evaluations/{evaluation.pk}/judgments/?dry_run=true", {"file": upload},
        format="multipart")
    assert response.status_code == 200, response.json()
    body = response.json()
    assert (body["format"], body["format_reason"]) == ("OpenSearch Workbench judgments JSON",
                                                       "a JSON object with judgmentRatings")
    assert body["grade_table"][3] == {"rating": "0.700", "grade": 2}
    assert body["would_import"] == 5 and not PoolJudgment.objects.exists()
