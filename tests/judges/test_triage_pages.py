"""The triage page, its Adjudicate action, and the triage API."""

import re

import pytest
from django.core.management import call_command
from django.test import Client
from rest_framework.test import APIClient

from judgments.models import AdjudicatedAnswer, FeedbackSlot
from metrics.models import KeywordMetricValue
from searchtweak.services import api_token_create
from tests.judges.calibration_data import make_judge, run_with_answers, slot_of
from tests.judges.triage_data import binary_example, graded_example

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


def _page(example) -> str:
    return f"/evaluations/{example.evaluation.pk}/triage/"


def _adjudicate(example, snapshot_id, api=False) -> str:
    prefix = "/api/v1" if api else ""
    return f"{prefix}/evaluations/{example.evaluation.pk}/triage/{snapshot_id}/adjudicate/"


def _cells(html: str, testid: str) -> list[str]:
    return [cell.strip() for cell in re.findall(rf'data-testid="{testid}"[^>]*>(.*?)</', html,
                                                re.S)]


def _slots() -> list[tuple]:
    return list(FeedbackSlot.objects.order_by("pk").values_list("pk", "user_id", "grade",
                                                                "graded_by_id"))


def _values(evaluation) -> dict[tuple[int, int], float | None]:
    return {(keyword_id, metric_id): value for keyword_id, metric_id, value in
            KeywordMetricValue.objects.filter(keyword__evaluation=evaluation)
            .values_list("keyword_id", "metric_id", "value")}


# --- the page ---


def test_the_lead_sees_the_disagreements_largest_impact_first(example, personas):
    response = page_client(personas.lead).get(_page(example))
    assert response.status_code == 200
    html = response.content.decode()
    assert _cells(html, "triage-metric") == ["CG@3"]
    assert _cells(html, "judge-grades") == ["3", "1", "0"]
    assert _cells(html, "people-grades") == ["0", "2, 3", "1"]
    assert _cells(html, "impact") == ["3.0000", "1.5000", "0.0000"]
    # The table scrolls inside its own box on a phone.
    # The table scrolls inside its own box, or is a card per row on a phone.
    assert '<div class="table-scroll">\n  <table class="table stack" data-testid="triage">' in html


def test_the_lead_sees_a_shadow_judges_disagreement_and_the_api_lists_it(example, personas):
    # Shade's shadow answer says 0 where the counting judge and the people agreed on 2:
    # hats 2 -> the judges' way mean(2, 0) = 1: CG@3 3 against the people's 4, impact 1.
    shade = make_judge(personas.team, "Shade")
    run_with_answers(shade, example.evaluation, {("hats", 2): 0})
    response = page_client(personas.lead).get(_page(example))
    assert response.status_code == 200
    html = response.content.decode()
    assert _cells(html, "shadow-grades") == ["", "", "Shade: 0", ""]
    assert _cells(html, "judge-grades") == ["3", "1", "2", "0"]
    assert _cells(html, "impact") == ["3.0000", "1.5000", "1.0000", "0.0000"]
    body = api_client(personas.lead).get(
        f"/api/v1/evaluations/{example.evaluation.pk}/triage/").json()
    assert [(row["keyword"], row["position"], row["shadow_grades"])
            for row in body["results"]] == [
        ("shoes", 2, []), ("hats", 1, []),
        ("hats", 2, [{"judge": shade.pk, "judge_name": "Shade", "grade": 0}]),
        ("shoes", 4, []),
    ]


def test_the_page_is_the_leads_a_grader_is_refused_and_an_outsider_finds_nothing(
        example, personas):
    # The guard: a grader must not read the other people's and the judge's grades here.
    assert page_client(personas.grader).get(_page(example)).status_code == 403
    assert page_client(personas.outsider).get(_page(example)).status_code == 404
    assert page_client(personas.admin).get(_page(example)).status_code == 200


def test_the_dashboard_links_leads_to_the_triage(example, personas):
    url = f"/dashboard/evaluations/{example.evaluation.pk}/"
    link = f'href="{_page(example)}"'
    assert link in page_client(personas.lead).get(url).content.decode()
    assert link not in page_client(personas.grader).get(url).content.decode()


def test_the_page_reads_in_a_fixed_number_of_queries(example, personas,
                                                     django_assert_max_num_queries):
    client = page_client(personas.lead)
    with django_assert_max_num_queries(20):
        assert client.get(_page(example)).status_code == 200


def test_adjudicating_on_the_page_settles_the_result_and_the_values_equal_a_recompute(
        example, personas, django_capture_on_commit_callbacks):
    evaluation = example.evaluation
    # The example's grades were stored without a recompute: start from consistent values.
    call_command("recompute_metrics", "--evaluation", str(evaluation.pk), "--quiet")
    target = slot_of(evaluation, "shoes", 2, 0).snapshot
    with django_capture_on_commit_callbacks(execute=True):
        response = page_client(personas.lead).post(_adjudicate(example, target.pk),
                                                   {"grade": "0", "gold": "on"})
    assert response.status_code == 302 and response["Location"] == _page(example)
    answer = AdjudicatedAnswer.objects.get()
    assert (answer.snapshot_id, answer.grade, answer.gold, answer.decided_by_id) == (
        target.pk, 0, True, personas.lead.pk)
    assert sorted(FeedbackSlot.objects.filter(snapshot=target, grade__isnull=False)
                  .values_list("grade", flat=True)) == [0, 0]
    stored = _values(evaluation)
    assert stored  # the eager recompute after commit stored the keyword values
    KeywordMetricValue.objects.filter(keyword__evaluation=evaluation).delete()
    call_command("recompute_metrics", "--evaluation", str(evaluation.pk), "--quiet")
    assert _values(evaluation) == pytest.approx(stored)
    html = page_client(personas.lead).get(_page(example)).content.decode()
    assert _cells(html, "judge-grades") == ["1", "0"]  # shoes 2 is settled


@pytest.mark.parametrize("body", [{}, {"grade": "high"}, {"grade": "7"}])
def test_a_bad_grade_on_the_page_changes_nothing_and_says_why(example, personas, body):
    target = slot_of(example.evaluation, "shoes", 2, 0).snapshot
    before = _slots()
    response = page_client(personas.lead).post(_adjudicate(example, target.pk), body,
                                               follow=True)
    assert response.status_code == 200
    assert "grade" in response.content.decode().lower()
    assert _slots() == before and not AdjudicatedAnswer.objects.exists()


def test_adjudicate_refuses_a_grader_an_outsider_a_get_and_a_foreign_result(example, personas):
    target = slot_of(example.evaluation, "shoes", 2, 0).snapshot
    foreign = slot_of(binary_example(personas.team, personas.grader).evaluation,
                      "shoes", 2, 0).snapshot
    before = _slots()
    assert page_client(personas.grader).post(_adjudicate(example, target.pk),
                                             {"grade": "0"}).status_code == 403
    assert page_client(personas.outsider).post(_adjudicate(example, target.pk),
                                               {"grade": "0"}).status_code == 404
    assert page_client(personas.lead).get(_adjudicate(example, target.pk)).status_code == 405
    assert page_client(personas.lead).post(_adjudicate(example, foreign.pk),
                                           {"grade": "0"}).status_code == 404
    assert _slots() == before and not AdjudicatedAnswer.objects.exists()


# --- the API ---


def test_the_api_lists_the_disagreements(example, personas):
    response = api_client(personas.lead).get(f"/api/v1{_page(example)}")
    assert response.status_code == 200
    body = response.json()
    assert (body["evaluation"], body["metric"], body["metric_error"]) == (
        example.evaluation.pk, "CG@3", "")
    assert [(row["keyword"], row["position"], row["doc_id"], row["judge_grades"],
             row["people_grades"], row["impact"], row["adjudicated_grade"])
            for row in body["results"]] == [
        ("shoes", 2, "s2", [3], [0], 3.0, None),
        ("hats", 1, "h1", [1], [2, 3], 1.5, None),
        ("shoes", 4, "s4", [0], [1], 0.0, None),
    ]


def test_the_api_refuses_a_grader_and_an_outsider(example, personas):
    assert api_client(personas.grader).get(f"/api/v1{_page(example)}").status_code == 403
    assert api_client(personas.outsider).get(f"/api/v1{_page(example)}").status_code == 404


def test_the_api_adjudicates_and_the_values_equal_a_recompute(
        example, personas, django_capture_on_commit_callbacks):
    evaluation = example.evaluation
    call_command("recompute_metrics", "--evaluation", str(evaluation.pk), "--quiet")
    before = _values(evaluation)
    target = slot_of(evaluation, "hats", 1, 0).snapshot
    with django_capture_on_commit_callbacks(execute=True):
        response = api_client(personas.lead).post(_adjudicate(example, target.pk, api=True),
                                                  {"grade": 0}, format="json")
    assert response.status_code == 200
    body = response.json()
    assert (body["snapshot"], body["grade"], body["gold"], body["decided_by"]) == (
        target.pk, 0, False, "lead")
    stored = _values(evaluation)
    # hats CG@3 moved from mean(1, 2, 3) + 2 = 4 to 0 + 2 = 2.
    hats = slot_of(evaluation, "hats", 1, 0).keyword_id
    cg = evaluation.metric_configs.get(code="cg").pk
    assert (before[(hats, cg)], stored[(hats, cg)]) == (pytest.approx(4.0), pytest.approx(2.0))
    KeywordMetricValue.objects.filter(keyword__evaluation=evaluation).delete()
    call_command("recompute_metrics", "--evaluation", str(evaluation.pk), "--quiet")
    assert _values(evaluation) == pytest.approx(stored)
    assert stored.keys() == before.keys()


@pytest.mark.parametrize(("body", "field"), [
    ({}, "grade"), ({"grade": "high"}, "grade"), ({"grade": 9}, "grade"),
    ({"grade": 1, "gold": "perhaps"}, "gold"),
])
def test_the_api_answers_400_naming_the_field_and_changes_nothing(example, personas, body,
                                                                  field):
    target = slot_of(example.evaluation, "hats", 1, 0).snapshot
    before = _slots()
    response = api_client(personas.lead).post(_adjudicate(example, target.pk, api=True), body,
                                              format="json")
    assert response.status_code == 400
    assert field in str(response.json())
    assert _slots() == before and not AdjudicatedAnswer.objects.exists()


def test_the_api_answers_404_for_a_foreign_evaluation_or_result(example, personas):
    target = slot_of(example.evaluation, "hats", 1, 0).snapshot
    other = binary_example(personas.other_team, personas.outsider)
    foreign = slot_of(other.evaluation, "shoes", 2, 0).snapshot
    lead = api_client(personas.lead)
    assert lead.post(f"/api/v1/evaluations/{other.evaluation.pk}/triage/{foreign.pk}/"
                     "adjudicate/", {"grade": 1}, format="json").status_code == 404
    assert lead.get(f"/api/v1/evaluations/{other.evaluation.pk}/triage/").status_code == 404
    assert lead.post(_adjudicate(example, foreign.pk, api=True), {"grade": 1},
                     format="json").status_code == 404
    assert api_client(personas.outsider).post(_adjudicate(example, target.pk, api=True),
                                              {"grade": 1}, format="json").status_code == 404
    assert not AdjudicatedAnswer.objects.exists()
