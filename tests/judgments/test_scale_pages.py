"""The admins' scale and transformer forms: help that renders, rows that follow the source."""

import re

import pytest
from django.test import Client

from judgments.models import Transformer
from judgments.scale_writes import scale_create, transformer_save

pytestmark = pytest.mark.django_db


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _rows(html: str) -> list[str]:
    """The source grades the transformer form shows a row for, in order."""
    return re.findall(r'<tr data-grade="(\d+)">', html)


def _picked(html: str) -> dict[str, str]:
    """Each row's selected target grade ("" when none is)."""
    picked = {}
    for name, options in re.findall(
            r'<select name="(grade_\d+)"[^>]*>(.*?)</select>', html, flags=re.S):
        chosen = re.search(r'<option value="(\d*)" selected>', options)
        picked[name] = chosen.group(1) if chosen else ""
    return picked


def test_the_scale_form_help_shows_its_example_as_code(personas):
    html = client_for(personas.admin).get("/scales/new/").content.decode()
    assert "<code>1 Bad #d92d20</code>" in html
    assert "&lt;code&gt;" not in html


def test_the_transformer_form_shows_one_row_per_grade_of_the_source(personas):
    client = client_for(personas.admin)
    html = client.get("/transformers/edit/?source=detail&target=graded").content.decode()
    assert _rows(html) == [str(grade) for grade in range(1, 11)]
    # The docs/METRICS.md default detail -> graded, prefilled.
    assert _picked(html) == {"grade_1": "0", "grade_2": "1", "grade_3": "1", "grade_4": "1",
                             "grade_5": "2", "grade_6": "2", "grade_7": "2", "grade_8": "3",
                             "grade_9": "3", "grade_10": "3"}
    html = client.get("/transformers/edit/?source=binary&target=graded").content.decode()
    assert _rows(html) == ["0", "1"]
    assert 'label for="id_grade_1">1 Relevant' in html


def test_rows_of_a_team_scale_start_unmapped_and_offer_the_target_grades(personas):
    scale_create(team=personas.team, code="stars", name="Stars", lo=1, hi=3, labels={
        "1": {"label": "Bad", "color": ""}, "2": {"label": "Okay", "color": ""},
        "3": {"label": "Great", "color": ""}})
    html = client_for(personas.admin).get(
        "/transformers/edit/?source=stars&target=binary").content.decode()
    assert _rows(html) == ["1", "2", "3"]
    assert _picked(html) == {"grade_1": "", "grade_2": "", "grade_3": ""}
    row = html[html.index('<select name="grade_1"'):]
    assert re.findall(r'<option value="(\d*)"', row[:row.index("</select>")]) == ["", "0", "1"]


def test_the_team_mapping_is_prefilled_over_the_default(personas):
    transformer_save(team=personas.team, source="graded", target="binary",
                     mapping={"0": 0, "1": 0, "2": 0, "3": 1})
    html = client_for(personas.admin).get(
        "/transformers/edit/?source=graded&target=binary").content.decode()
    assert _picked(html) == {"grade_0": "0", "grade_1": "0", "grade_2": "0", "grade_3": "1"}
    assert "&quot;graded-&gt;binary&quot;: {&quot;0&quot;: 0, &quot;1&quot;: 0, " \
           "&quot;2&quot;: 0, &quot;3&quot;: 1}" in html  # for transformer.js


def test_without_javascript_show_reloads_the_rows_and_saves_nothing(personas):
    response = client_for(personas.admin).post("/transformers/edit/", {
        "source": "binary", "target": "detail", "grade_0": "0", "grade_3": "1", "show": "1"})
    html = response.content.decode()
    assert response.status_code == 200
    assert _rows(html) == ["0", "1"]
    assert _picked(html) == {"grade_0": "1", "grade_1": "10"}  # the default binary -> detail
    assert not Transformer.objects.exists()


def test_rows_posted_for_another_pair_are_not_saved_under_the_new_one(personas):
    # Without JavaScript the source changed after the rows were drawn for graded -> binary,
    # then Save: graded's picks must not become detail's grades 0..3.
    response = client_for(personas.admin).post("/transformers/edit/", {
        "shown": "graded->binary", "source": "detail", "target": "binary",
        "grade_0": "0", "grade_1": "0", "grade_2": "1", "grade_3": "1"})
    html = response.content.decode()
    assert response.status_code == 400
    assert "The grades shown were for other scales; pick them for detail → binary and " \
           "save again." in html
    assert _rows(html) == [str(grade) for grade in range(1, 11)]
    # The default detail -> binary (docs/METRICS.md), not what was posted for graded.
    assert _picked(html) == {"grade_1": "0", **{f"grade_{g}": "1" for g in range(2, 11)}}
    assert 'name="shown" value="detail-&gt;binary"' in html
    assert not Transformer.objects.exists()


def test_rows_posted_for_a_team_scale_after_a_switch_start_unmapped(personas):
    scale_create(team=personas.team, code="stars", name="Stars", lo=1, hi=3, labels={
        "1": {"label": "Bad", "color": ""}, "2": {"label": "Okay", "color": ""},
        "3": {"label": "Great", "color": ""}})
    response = client_for(personas.admin).post("/transformers/edit/", {
        "shown": "graded->binary", "source": "stars", "target": "binary",
        "grade_0": "0", "grade_1": "0", "grade_2": "1", "grade_3": "1"})
    assert response.status_code == 400
    assert _picked(response.content.decode()) == {"grade_1": "", "grade_2": "", "grade_3": ""}
    assert not Transformer.objects.exists()


def test_a_transformer_onto_its_own_scale_is_refused(personas):
    response = client_for(personas.admin).post("/transformers/edit/", {
        "source": "binary", "target": "binary", "grade_0": "0", "grade_1": "1"})
    assert response.status_code == 400
    assert "Choose a scale other than the source." in response.content.decode()
    assert not Transformer.objects.exists()


def test_an_unknown_source_falls_back_to_graded(personas):
    html = client_for(personas.admin).get(
        "/transformers/edit/?source=nope&target=graded").content.decode()
    assert _rows(html) == ["0", "1", "2", "3"]
    assert re.search(r'<select name="target"[^>]*>.*?<option value="binary" selected>',
                     html, flags=re.S)


def test_the_transformer_form_needs_an_admin(personas):
    for user, status in ((personas.lead, 403), (personas.grader, 403), (personas.outsider, 200)):
        # The outsider is an owner of their own team: the form edits that team's transformers.
        assert client_for(user).get("/transformers/edit/?source=detail").status_code == status
    assert client_for(personas.admin).delete("/transformers/edit/").status_code == 405


def test_a_scale_of_the_team_is_403_below_admin_and_404_outside(personas):
    scale = scale_create(team=personas.team, code="stars", name="Stars", lo=1, hi=2,
                         labels={"1": {"label": "Bad"}, "2": {"label": "Good"}})
    assert client_for(personas.admin).get(f"/scales/{scale.pk}/").status_code == 200
    assert client_for(personas.grader).get(f"/scales/{scale.pk}/").status_code == 403
    assert client_for(personas.outsider).get(f"/scales/{scale.pk}/").status_code == 404
    assert client_for(personas.lead).post(f"/scales/{scale.pk}/delete/").status_code == 403
    assert client_for(personas.outsider).post(f"/scales/{scale.pk}/delete/").status_code == 404
    scale.refresh_from_db()
