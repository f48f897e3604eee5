"""A team's scale is the one core Scale, wrapped with colours and keys for the pages."""

import metrics_engine as core
from judgments import scales
from judgments.models import Scale


def test_a_builtin_grade_scale_wraps_the_core_scale_itself():
    graded = scales.builtin_scale("graded")
    assert graded.scale is core.SCALES["graded"]
    assert (graded.code, graded.name, graded.lo, graded.hi) == ("graded", "Graded", 0, 3)
    assert [(g.value, g.label, g.key) for g in graded.grades] == [
        (0, "Poor", "0"), (1, "Fair", "1"), (2, "Good", "2"), (3, "Perfect", "3")]
    assert graded.describe() == "Graded (0..3)"
    assert graded.core_scale() is core.SCALES["graded"]
    assert scales.builtin_scale("stars") is None


def test_the_detail_scale_keys_its_grade_ten_as_zero():
    detail = scales.builtin_scale("detail")
    assert [g.key for g in detail.grades][-2:] == ["9", "0"]
    assert detail.label_of(10) == "Perfect" and detail.label_of(None) == ""


def test_the_detail_scale_grades_have_words_not_their_numbers_again():
    detail = scales.builtin_scale("detail")
    assert [g.label for g in detail.grades] == [
        "Useless", "Very poor", "Poor", "Weak", "Partial", "Fair", "Good", "Very good",
        "Excellent", "Perfect"]
    # The core scale (judges' prompts read it) is untouched.
    assert detail.scale is core.SCALES["detail"] and core.SCALES["detail"].labels == {}


def test_the_scale_list_shows_the_detail_labels(client, personas):
    client.force_login(personas.admin)
    html = client.get("/scales/").content.decode()
    assert ">1 Useless</span>" in html and ">10 Perfect</span>" in html
    assert ">1 1</span>" not in html


def test_a_team_scale_is_a_core_scale_with_the_rows_bounds_name_and_labels(personas):
    Scale.objects.create(team=personas.team, code="stars", name="Stars", lo=1, hi=3, labels={
        "1": {"label": "Bad", "color": "#111111"}, "2": {"label": ""}, "3": {"label": "Top"}})
    stars = scales.scale_for_team(team_id=personas.team.pk, code="stars")
    assert stars.scale == core.Scale("stars", 1, 3)
    assert stars.scale.name == "Stars" and stars.scale.labels == {1: "Bad", 2: "2", 3: "Top"}
    assert not stars.builtin and not stars.scale.is_builtin
    assert [(g.value, g.label, g.color) for g in stars.grades] == [
        (1, "Bad", "#111111"), (2, "2", "#5b6675"), (3, "Top", "#5b6675")]
    assert stars.contains(3) and not stars.contains(0) and not stars.contains(4)
    assert stars.describe() == "Stars (1..3)"
    assert scales.scale_for_team(team_id=personas.other_team.pk, code="stars") is None
