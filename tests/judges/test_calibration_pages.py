"""The calibration page and API, and the "counts" switch (page and API)."""

import re

import pytest
from django.test import Client
from rest_framework.test import APIClient

from judges.models import Judge, JudgeRun
from searchtweak.models import Membership, Role
from searchtweak.services import api_token_create
from tests.judges.calibration_data import bar, graded_example, make_judge, run_with_answers
from tests.metrics.builders import build_evaluation

pytestmark = pytest.mark.django_db


def page_client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def api_client(user) -> APIClient:
    _, key = api_token_create(user=user, name="tests")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


@pytest.fixture
def example(personas):
    return graded_example(personas.team, personas.lead, personas.grader)


def _page(example, query=""):
    return f"/judges/{example.judge.pk}/calibration/{query}"


def _text(html: str, testid: str) -> str:
    found = re.search(rf'data-testid="{testid}"[^>]*>(.*?)</', html, re.S)
    assert found, testid
    return found.group(1).strip()


# --- the page ---


def test_the_lead_sees_the_figures_of_the_newest_calibrated_evaluation(example, personas):
    response = page_client(personas.lead).get(_page(example))
    assert response.status_code == 200
    html = response.content.decode()
    assert (_text(html, "pairs"), _text(html, "snapshots"), _text(html, "exact")) == (
        "6", "5", "0.667")
    assert _text(html, "kappa") == "0.870"  # 20/23
    assert _text(html, "unweighted-kappa") == "0.571"  # 4/7
    confusion = html[html.index('data-testid="confusion"'):]
    confusion = confusion[:confusion.index("</table>")]
    cells = [int(cell) for cell in re.findall(r'<td class="num">(\d+)</td>', confusion)]
    assert cells == [1, 1, 0, 0, 0, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0, 1]
    metrics = html[html.index('data-testid="metric-calibration"'):]
    cg_row = metrics[metrics.index("CG@3"):]
    cg_row = cg_row[:cg_row.index("</tr>")]
    assert re.findall(r'<td class="num">([^<]*)</td>', cg_row) == [
        "2.7500", "4.5000", "+1.7500", "1.000", "1.000", "2"]
    # Two keywords: both rank correlations carry the warning.
    warnings = re.findall(r'data-testid="correlation-warning">([^<]*)<', html)
    assert warnings == [
        "⚠ Over only 2 keywords (fewer than 5): Spearman and Kendall say little; "
        "chance alone often gives a high value.",
        "⚠ Over only 2 keywords (fewer than 5): Spearman and Kendall say little; "
        "chance alone often gives a high value."]
    # A lead reads; only an admin may change whether the judge counts.
    assert 'data-testid="counts"' not in html


def test_the_admin_sees_the_counts_button_disabled_with_the_reason_until_a_shadow_run(
        personas):
    judge = make_judge(personas.team)
    html = page_client(personas.admin).get(f"/judges/{judge.pk}/calibration/").content.decode()
    assert 'data-testid="no-runs"' in html
    assert "Run this judge in shadow mode" in _text(html, "counts-reason")
    assert re.search(r'<button type="submit" class="primary" disabled>Let this judge', html)


def test_the_admin_may_let_a_shadowed_judge_count(example, personas):
    bar(personas.team, min_pairs=6, min_kappa=0.8)  # its 6 pairs and κ 0.870 clear it
    html = page_client(personas.admin).get(_page(example)).content.decode()
    assert 'data-testid="counts-reason"' not in html
    assert re.search(r'<button type="submit" class="primary">Let this judge', html)


def test_the_chooser_picks_another_evaluation(example, personas):
    other = build_evaluation(team=personas.team, keywords={"q": ["a"]}, metrics=[])
    run_with_answers(example.judge, other, {("q", 1): 2})
    response = page_client(personas.lead).get(_page(example, f"?evaluation={other.pk}"))
    html = response.content.decode()
    assert _text(html, "pairs") == "0" and _text(html, "kappa") == "—"
    assert f'<option value="{example.evaluation.pk}" >' in html


def test_bad_evaluation_input_answers_400(example, personas):
    assert page_client(personas.lead).get(_page(example, "?evaluation=x")).status_code == 400


@pytest.mark.parametrize(("who", "status"), [("grader", 403), ("outsider", 404)])
def test_graders_and_outsiders_get_no_calibration(example, personas, who, status):
    assert page_client(getattr(personas, who)).get(_page(example)).status_code == status
    response = api_client(getattr(personas, who)).get(
        f"/api/v1/judges/{example.judge.pk}/calibration/?evaluation={example.evaluation.pk}")
    assert response.status_code == status


def test_an_evaluation_of_another_team_is_not_there_even_for_a_member_of_both(
        example, personas):
    Membership.objects.create(team=personas.other_team, user=personas.lead, role=Role.LEAD)
    elsewhere = build_evaluation(team=personas.other_team, keywords={"q": ["a"]}, metrics=[])
    response = page_client(personas.lead).get(_page(example, f"?evaluation={elsewhere.pk}"))
    assert response.status_code == 404


def test_the_page_answers_get_only(example, personas):
    assert page_client(personas.lead).post(_page(example)).status_code == 405


# --- counts through the page ---


def _counts(judge: Judge) -> str:
    return f"/judges/{judge.pk}/counts/"


def test_counts_is_refused_without_a_finished_shadow_run_and_nothing_changes(personas):
    judge = make_judge(personas.team)
    evaluation = build_evaluation(team=personas.team, keywords={"q": ["a"]}, metrics=[])
    run_with_answers(judge, evaluation, {("q", 1): 1}, status=JudgeRun.Status.CANCELLED)
    response = page_client(personas.admin).post(_counts(judge), {"counts": "true"}, follow=True)
    assert "Run this judge in shadow mode" in response.content.decode()
    assert Judge.objects.get(pk=judge.pk).counts is False


def test_counts_is_allowed_after_a_shadow_run_and_goes_back_to_the_evaluation(
        example, personas):
    bar(personas.team, min_pairs=6, min_kappa=0.8)
    response = page_client(personas.admin).post(
        _counts(example.judge), {"counts": "true", "evaluation": example.evaluation.pk})
    assert response.status_code == 302
    assert response["Location"].endswith(_page(example, f"?evaluation={example.evaluation.pk}"))
    assert Judge.objects.get(pk=example.judge.pk).counts is True
    page_client(personas.admin).post(_counts(example.judge), {"counts": "false"})
    assert Judge.objects.get(pk=example.judge.pk).counts is False


def test_counts_with_bad_input_changes_nothing(example, personas):
    response = page_client(personas.admin).post(_counts(example.judge), {"counts": "maybe"})
    assert response.status_code == 302
    assert Judge.objects.get(pk=example.judge.pk).counts is False


@pytest.mark.parametrize(("who", "status"), [("lead", 403), ("grader", 403), ("outsider", 404)])
def test_only_admins_change_counts(example, personas, who, status):
    client = page_client(getattr(personas, who))
    assert client.post(_counts(example.judge), {"counts": "true"}).status_code == status
    response = api_client(getattr(personas, who)).post(
        f"/api/v1/judges/{example.judge.pk}/counts/", {"counts": True}, format="json")
    assert response.status_code == status
    assert Judge.objects.get(pk=example.judge.pk).counts is False


def test_counts_page_answers_post_only(example, personas):
    assert page_client(personas.admin).get(_counts(example.judge)).status_code == 405


# --- the API ---


def test_the_api_answers_the_same_figures(example, personas):
    response = api_client(personas.lead).get(
        f"/api/v1/judges/{example.judge.pk}/calibration/?evaluation={example.evaluation.pk}")
    assert response.status_code == 200
    body = response.json()
    assert (body["scale"], body["grades"], body["pair_count"], body["snapshot_count"]) == (
        "graded", [0, 1, 2, 3], 6, 5)
    assert body["kappa_weighting"] == "quadratic"
    assert body["kappa"] == pytest.approx(20 / 23)
    assert body["unweighted_kappa"] == pytest.approx(4 / 7)
    assert body["exact_match_rate"] == pytest.approx(2 / 3)
    assert body["confusion"] == [[1, 1, 0, 0], [0, 1, 0, 0], [0, 0, 1, 1], [0, 0, 0, 1]]
    cg, precision = body["metrics"]
    assert (cg["label"], cg["mean_delta"], cg["keyword_count"]) == ("CG@3", 1.75, 2)
    assert cg["correlation_warning"] == (
        "Over only 2 keywords (fewer than 5): Spearman and Kendall say little; chance alone "
        "often gives a high value.")
    assert precision["mean_delta"] == pytest.approx(0.25)


def test_the_api_needs_the_evaluation(example, personas):
    response = api_client(personas.lead).get(f"/api/v1/judges/{example.judge.pk}/calibration/")
    assert response.status_code == 400 and "evaluation" in response.json()


def test_the_api_sets_counts_only_after_a_shadow_run(personas):
    judge = make_judge(personas.team)
    client = api_client(personas.admin)
    refused = client.post(f"/api/v1/judges/{judge.pk}/counts/", {"counts": True}, format="json")
    assert refused.status_code == 400 and "counts" in refused.json()
    evaluation = build_evaluation(team=personas.team, keywords={"q": ["a"]}, metrics=[])
    run_with_answers(judge, evaluation, {("q", 1): 1})
    # Shadowed, but no person graded "q": no pair, so the bar needs an override.
    below = client.post(f"/api/v1/judges/{judge.pk}/counts/", {"counts": True}, format="json")
    assert below.status_code == 400
    assert "Only 0 pairs" in below.json()["override_reason"][0]
    allowed = client.post(f"/api/v1/judges/{judge.pk}/counts/",
                          {"counts": True, "override_reason": "pilot"}, format="json")
    assert allowed.status_code == 200
    body = allowed.json()
    assert (body["id"], body["counts"], body["counts_granted_by"],
            body["counts_override_reason"]) == (judge.pk, True, "admin", "pilot")
    assert body["counts_evidence"]["pair_count"] == 0
    missing = client.post(f"/api/v1/judges/{judge.pk}/counts/", {}, format="json")
    assert missing.status_code == 400 and "counts" in missing.json()
