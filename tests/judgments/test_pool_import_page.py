"""The team-level page that imports judgments into the pool, and the feedback page links."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from judgments.models import PoolJudgment
from tests.metrics.builders import build_evaluation

pytestmark = pytest.mark.django_db
URL = "/pool/import/"


def _post(client, content: bytes, **extra):
    data = {"scale": "graded", "format": "csv",
            "file": SimpleUploadedFile("j.csv", content), **extra}
    return client.post(URL, data)


def test_preview_shows_rows_and_stores_nothing(client, personas):
    client.force_login(personas.lead)
    response = _post(client, b"laptop,d1,3\nlaptop,d2,0\n", preview="1")
    assert response.status_code == 200
    assert response.context["preview"]["would_import"] == 2
    assert "2 judgments for 1 keyword can be imported" in response.content.decode()
    assert not PoolJudgment.objects.exists()


def test_import_stores_the_team_pool(client, personas):
    client.force_login(personas.lead)
    response = _post(client, b"laptop,d1,3\nlaptop,d2,0\n", **{"import": "1"})
    assert response.status_code == 302
    assert sorted(PoolJudgment.objects.values_list("team_id", "doc_id", "grade")) == [
        (personas.team.pk, "d1", 3), (personas.team.pk, "d2", 0)]


def test_a_bad_line_imports_nothing_and_names_the_line(client, personas):
    client.force_login(personas.lead)
    response = _post(client, b"laptop,d1,3\nlaptop,d2,9\n", **{"import": "1"})
    assert response.status_code == 400
    assert "line 2: grade 9 is outside the Graded scale 0..3" in response.content.decode()
    assert not PoolJudgment.objects.exists()


def test_graders_and_wrong_methods_are_refused_and_outsiders_use_their_own_team(client, personas):
    client.force_login(personas.grader)
    # A member below the role is told why (403), as on every other page.
    assert _post(client, b"a,b,1\n", **{"import": "1"}).status_code == 403
    assert client.get(URL).status_code == 403
    assert not PoolJudgment.objects.exists()
    client.force_login(personas.lead)
    assert client.put(URL).status_code == 405
    client.force_login(personas.outsider)
    assert client.get(URL).status_code == 200  # their own team's page
    _post(client, b"a,b,1\n", **{"import": "1"})
    assert list(PoolJudgment.objects.values_list("team_id", flat=True)) == [
        personas.other_team.pk]


def test_the_feedback_page_links_every_export(client, personas):
    evaluation = build_evaluation(team=personas.team, keywords={"q": ["d"]},
                                  metrics=[("ndcg", 1, {})])
    client.force_login(personas.lead)
    page = client.get(reverse("judgments:feedback", args=[evaluation.pk])).content.decode()
    base = f"/api/v1/evaluations/{evaluation.pk}/judgments/?format="
    for suffix in ("json&amp;download=1", "csv", "csv&amp;per_grader=true", "trec", "trec_mapping",
                   "trec_run"):
        assert f'href="{base}{suffix}"' in page
    assert f'href="/api/v1/evaluations/{evaluation.pk}/metric-table/"' in page
    assert f'href="/api/v1/evaluations/{evaluation.pk}/metric-table/?bounds=true"' in page
    assert "(partial: the evaluation is not finished)" in page


def test_reached_from_an_evaluation_the_scale_is_that_evaluations(client, personas):
    evaluation = build_evaluation(team=personas.team, scale="binary", keywords={"q": ["d"]},
                                  metrics=[("precision", 1, {})])
    client.force_login(personas.lead)
    feedback = client.get(reverse("judgments:feedback", args=[evaluation.pk])).content.decode()
    assert f'href="{URL}?evaluation={evaluation.pk}"' in feedback
    response = client.get(URL, {"evaluation": evaluation.pk})
    assert response.status_code == 200
    assert response.context["form"]["scale"].value() == "binary"
    assert '<option value="binary" selected>' in response.content.decode()
    # Without it, or for an evaluation the user may not open, the form starts as before.
    assert client.get(URL).context["form"]["scale"].value() is None
    client.force_login(personas.outsider)
    assert client.get(URL, {"evaluation": evaluation.pk}).status_code == 404


def test_a_failed_preview_keeps_the_file_for_another_try(client, personas):
    client.force_login(personas.lead)
    # Grade 9 is not on the graded scale (0..3); the file is right on "detail".
    response = _post(client, b"laptop,d1,3\nlaptop,d2,9\n", preview="1")
    assert response.status_code == 400
    html = response.content.decode()
    assert "line 2: grade 9 is outside the Graded scale 0..3" in html
    assert 'data-testid="pool-kept">Previewed file kept: <strong>j.csv</strong>.' in html
    assert "change the choices above and “Preview” it again" in html
    token = response.context["upload_token"]
    assert token
    # The same file, not chosen again, previewed on another scale, then imported.
    again = client.post(URL, {"scale": "detail", "format": "csv", "upload": token,
                              "preview": "1"})
    assert again.status_code == 200
    assert again.context["preview"]["would_import"] == 2
    done = client.post(URL, {"scale": "detail", "format": "csv", "upload": token,
                             "import": "1"})
    assert done.status_code == 302
    assert sorted(PoolJudgment.objects.values_list("doc_id", "grade")) == [("d1", 3), ("d2", 9)]
