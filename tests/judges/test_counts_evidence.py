"""A judge counts on evidence: enough pairs with the people and enough agreement (the
team's bar), or an admin's override with a reason kept beside the judge. Pages and API
alike. The example's figures (6 pairs, quadratic κ 20/23 = 0.870) are worked out in
tests/judges/test_calibration.py."""

import math
import re
from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError
from django.test import Client
from rest_framework.test import APIClient

from judges.models import Judge, JudgeTrustPolicy
from judges.trust import judge_mark_counts
from searchtweak.services import api_token_create
from tests.judges.calibration_data import (
    bar,
    graded_example,
    half_kappa_example,
    make_judge,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def example(personas):
    return graded_example(personas.team, personas.lead, personas.grader)


def page_client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def api_client(user) -> APIClient:
    _, key = api_token_create(user=user, name="tests")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def stored(judge: Judge) -> tuple:
    judge = Judge.objects.get(pk=judge.pk)
    return (judge.counts, judge.counts_granted_by_id, judge.counts_override_reason,
            judge.counts_evidence)


# --- the service ---


def test_by_default_six_pairs_are_too_few_and_nothing_changes(example, personas):
    with pytest.raises(ValidationError) as refused:
        judge_mark_counts(judge=example.judge, counts=True, by=personas.admin)
    message = refused.value.message_dict["override_reason"][0]
    assert "Only 6 pairs" in message and "at least 30" in message
    assert "κ" not in message  # 0.870 clears the default 0.40
    assert stored(example.judge) == (False, None, "", {})


def test_a_kappa_below_the_bar_is_refused_with_the_figure(example, personas):
    bar(personas.team, min_pairs=6, min_kappa=0.9)
    with pytest.raises(ValidationError) as refused:
        judge_mark_counts(judge=example.judge, counts=True, by=personas.admin)
    message = refused.value.message_dict["override_reason"][0]
    assert "κ on Evaluation" in message and "is 0.870" in message and "0.90" in message
    assert "pairs" not in message.split("κ")[0]
    assert Judge.objects.get(pk=example.judge.pk).counts is False


def test_figures_that_clear_the_bar_count_and_are_kept(example, personas):
    bar(personas.team, min_pairs=6, min_kappa=0.8)
    judge = judge_mark_counts(judge=example.judge, counts=True, by=personas.admin)
    counts, by, reason, evidence = stored(judge)
    assert (counts, by, reason) == (True, personas.admin.pk, "")
    assert evidence["evaluation_id"] == example.evaluation.pk
    assert (evidence["pair_count"], evidence["min_pairs"], evidence["min_kappa"]) == (6, 6, 0.8)
    assert evidence["kappa"] == pytest.approx(20 / 23)
    assert evidence["exact_match_rate"] == pytest.approx(4 / 6)
    assert evidence["shortfalls"] == []


def half_kappa_judge(personas) -> Judge:
    return half_kappa_example(personas.team, personas.grader)[0]


def test_a_kappa_exactly_at_the_bar_counts_without_override(personas):
    # "A weighted κ of at least min_kappa": the bar itself clears it.
    bar(personas.team, min_pairs=4, min_kappa=0.5)
    judge = judge_mark_counts(judge=half_kappa_judge(personas), counts=True, by=personas.admin)
    counts, _, reason, evidence = stored(judge)
    assert (counts, reason, evidence["kappa"], evidence["shortfalls"]) == (True, "", 0.5, [])


def test_a_kappa_just_below_the_bar_needs_an_override(personas):
    bar(personas.team, min_pairs=4, min_kappa=math.nextafter(0.5, 1))
    judge = half_kappa_judge(personas)
    with pytest.raises(ValidationError) as refused:
        judge_mark_counts(judge=judge, counts=True, by=personas.admin)
    assert "is 0.500" in refused.value.message_dict["override_reason"][0]
    assert stored(judge) == (False, None, "", {})


def test_the_api_lets_a_kappa_at_the_bar_count_without_override(personas):
    bar(personas.team, min_pairs=4, min_kappa=0.5)
    judge = half_kappa_judge(personas)
    response = api_client(personas.admin).post(f"/api/v1/judges/{judge.pk}/counts/",
                                               {"counts": True}, format="json")
    assert response.status_code == 200
    body = response.json()
    assert (body["counts"], body["counts_override_reason"]) == (True, "")
    assert body["counts_evidence"]["shortfalls"] == []


def test_an_override_needs_a_reason_and_keeps_it_with_the_figures(example, personas):
    with pytest.raises(ValidationError):
        judge_mark_counts(judge=example.judge, counts=True, by=personas.admin,
                          override_reason="   ")
    judge = judge_mark_counts(judge=example.judge, counts=True, by=personas.owner,
                              override_reason="  pilot on shoes  ")
    counts, by, reason, evidence = stored(judge)
    assert (counts, by, reason, evidence["pair_count"]) == (True, personas.owner.pk,
                                                            "pilot on shoes", 6)
    assert evidence["shortfalls"] == [
        f"Only 6 pairs of the judge's and the people's grades on {example.evaluation.name}; "
        "the team asks for at least 30."]
    assert judge.counts_granted_at is not None


def test_an_override_cannot_stand_in_for_a_shadow_run(personas):
    judge = make_judge(personas.team)
    with pytest.raises(ValidationError) as refused:
        judge_mark_counts(judge=judge, counts=True, by=personas.admin, override_reason="trust me")
    assert "shadow" in refused.value.message_dict["counts"][0]
    assert Judge.objects.get(pk=judge.pk).counts is False


def test_taking_trust_back_clears_the_record(example, personas):
    judge_mark_counts(judge=example.judge, counts=True, by=personas.admin,
                      override_reason="pilot")
    judge = judge_mark_counts(judge=example.judge, counts=False, by=personas.admin)
    assert stored(judge) == (False, None, "", {})


# --- the pages ---


def test_the_page_says_why_it_cannot_count_and_offers_the_override(example, personas):
    html = page_client(personas.admin).get(
        f"/judges/{example.judge.pk}/calibration/").content.decode()
    shortfalls = re.search(r'data-testid="counts-shortfalls">(.*?)</div>', html, re.S).group(1)
    assert "Only 6 pairs" in shortfalls and "at least 30" in shortfalls
    assert 'name="override_reason"' in html
    assert not re.search(r'class="primary">Let this judge', html)


def test_a_page_override_without_a_reason_changes_nothing(example, personas):
    response = page_client(personas.admin).post(
        f"/judges/{example.judge.pk}/counts/", {"counts": "true"}, follow=True)
    assert "Only 6 pairs" in response.content.decode()
    assert stored(example.judge) == (False, None, "", {})


def test_the_override_is_shown_beside_the_judge_on_the_list_and_calibration(example, personas):
    response = page_client(personas.admin).post(
        f"/judges/{example.judge.pk}/counts/",
        {"counts": "true", "override_reason": "pilot <b>on</b> shoes",
         "evaluation": example.evaluation.pk})
    assert response.status_code == 302
    for url in ("/judges/", f"/judges/{example.judge.pk}/calibration/"):
        html = page_client(personas.lead).get(url).content.decode()
        record = re.search(rf'data-testid="counts-record-{example.judge.pk}">(.*?)</div>',
                           html, re.S).group(1)
        assert "Counts by override" in record and "admin" in record
        assert "pilot &lt;b&gt;on&lt;/b&gt; shoes" in record
        assert "6 pairs, κ 0.870, exact match 0.667" in record
        assert "the bar: 30 pairs, κ ≥ 0.40" in record


def test_admins_change_the_bar_on_the_judges_page(personas):
    client = page_client(personas.admin)
    response = client.post("/judges/trust-policy/", {"min_pairs": "12", "min_kappa": "0.6",
                                                     "monthly_budget": "250",
                                                     "monthly_budget_currency": "eur"})
    assert response.status_code == 302
    policy = JudgeTrustPolicy.objects.get(team=personas.team)
    assert (policy.min_pairs, policy.min_kappa, policy.updated_by, policy.monthly_budget,
            policy.monthly_budget_currency) == (12, 0.6, personas.admin, Decimal("250"), "EUR")
    html = client.get("/judges/").content.decode()
    assert re.search(r'data-testid="policy-pairs">12<', html)
    assert re.search(r'data-testid="policy-kappa">0.60<', html)


def test_a_bad_bar_is_refused_naming_the_field_and_nothing_is_saved(personas):
    response = page_client(personas.admin).post(
        "/judges/trust-policy/", {"min_pairs": "0", "min_kappa": "1.5"})
    assert response.status_code == 400
    html = response.content.decode()
    assert html.count('class="error" role="alert"') == 2
    assert not JudgeTrustPolicy.objects.exists()


@pytest.mark.parametrize("who", ["lead", "grader"])
def test_only_admins_change_the_bar(personas, who):
    # The page works on the caller's current team: an outsider can only reach their own.
    response = page_client(getattr(personas, who)).post(
        "/judges/trust-policy/", {"min_pairs": "1", "min_kappa": "0"})
    assert response.status_code == 403
    assert not JudgeTrustPolicy.objects.exists()


def test_the_bar_page_answers_post_only(personas):
    assert page_client(personas.admin).get("/judges/trust-policy/").status_code == 405


# --- the API enforces the same ---


def test_the_api_refuses_below_the_bar_and_takes_an_override(example, personas):
    client = api_client(personas.admin)
    url = f"/api/v1/judges/{example.judge.pk}/counts/"
    refused = client.post(url, {"counts": True, "evaluation": example.evaluation.pk},
                          format="json")
    assert refused.status_code == 400
    assert "Only 6 pairs" in refused.json()["override_reason"][0]
    assert Judge.objects.get(pk=example.judge.pk).counts is False
    allowed = client.post(url, {"counts": True, "override_reason": "pilot"}, format="json")
    assert allowed.status_code == 200
    body = allowed.json()
    assert (body["counts"], body["counts_granted_by"], body["counts_override_reason"]) == (
        True, "admin", "pilot")
    assert body["counts_evidence"]["kappa"] == pytest.approx(20 / 23)
    listed = client.get("/api/v1/judges/").json()["results"]
    assert [(row["counts_override_reason"], row["counts_granted_by"]) for row in listed
            if row["id"] == example.judge.pk] == [("pilot", "admin")]


def test_the_api_reads_and_changes_the_bar(personas):
    assert api_client(personas.lead).get("/api/v1/judges/trust-policy/").json() == {
        "team": personas.team.pk, "min_pairs": 30, "min_kappa": 0.4, "monthly_budget": None,
        "monthly_budget_currency": "USD"}
    url = "/api/v1/judges/trust-policy/"
    assert api_client(personas.lead).put(url, {"min_pairs": 5, "min_kappa": 0.5},
                                         format="json").status_code == 403
    bad = api_client(personas.admin).put(url, {"min_pairs": 5, "min_kappa": 2}, format="json")
    assert bad.status_code == 400 and set(bad.json()) == {"min_kappa"}
    changed = api_client(personas.admin).put(url, {"min_pairs": 5, "min_kappa": 0.5},
                                             format="json")
    assert changed.json() == {"team": personas.team.pk, "min_pairs": 5, "min_kappa": 0.5,
                              "monthly_budget": None, "monthly_budget_currency": "USD"}
    capped = api_client(personas.admin).put(
        url, {"min_pairs": 5, "min_kappa": 0.5, "monthly_budget": "120.5"}, format="json")
    assert capped.json()["monthly_budget"] == "120.5000"
    assert JudgeTrustPolicy.objects.get(team=personas.team).monthly_budget == Decimal("120.5")
    negative = api_client(personas.admin).put(
        url, {"min_pairs": 5, "min_kappa": 0.5, "monthly_budget": "-1"}, format="json")
    assert negative.status_code == 400 and set(negative.json()) == {"monthly_budget"}
    euros = api_client(personas.admin).put(
        url, {"min_pairs": 5, "min_kappa": 0.5, "monthly_budget": "80",
              "monthly_budget_currency": "eur"}, format="json")
    assert euros.json()["monthly_budget_currency"] == "EUR"
    unknown = api_client(personas.admin).put(
        url, {"min_pairs": 5, "min_kappa": 0.5, "monthly_budget_currency": "E1"}, format="json")
    assert unknown.status_code == 400 and set(unknown.json()) == {"monthly_budget_currency"}
    assert api_client(personas.outsider).get(
        f"{url}?team={personas.team.pk}").status_code == 404
