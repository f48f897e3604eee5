"""The evaluation's run form fits the judge picked: an LLM judge's has its cache and
budget, a clicks grader's shows what it learns from instead, says plainly that it costs
nothing, and a cache or budget sent for one is refused with nothing stored."""

import re
from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError
from rest_framework.test import APIClient

from audit.models import AuditEvent
from behaviour import learning
from behaviour.models import BehaviourCount
from judges import runs
from judges.models import JudgeRun, JudgeRunItem
from tests.behaviour.clicks_data import evaluation_of, simulated_source
from tests.judges.run_builders import judge_of

pytestmark = pytest.mark.django_db

BLOCK = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "judge-run-start"}
ESTIMATE = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "run-estimate"}


@pytest.fixture
def setup(personas):
    simulated = simulated_source(personas.team)
    grader = learning.click_grader_create(team=personas.team, by=personas.admin,
                                          name="Clicks PBM", click_model="pbm",
                                          source=simulated.source, min_impressions=25)
    sage = judge_of(personas.team, name="Sage")
    return evaluation_of(personas.team, simulated), grader.judge, sage


def _fields(html: str) -> set[str]:
    start = html.index('id="judge-run-start-form"')
    form = html[start:html.index("</form>", start)]
    return set(re.findall(r'name="(\w+)"', form))


def _options(html: str) -> list[str]:
    return re.findall(r"<option [^>]*>([^<]*)</option>", html.split('name="mode"')[0])


def test_the_picker_labels_each_judge_with_its_kind(client, personas, setup):
    evaluation, _clicks, _sage = setup
    client.force_login(personas.lead)
    html = client.get(f"/evaluations/{evaluation.pk}/judge-runs/").content.decode()
    assert _options(html) == ["Clicks PBM — clicks · PBM on simulated",
                              "Sage — LLM · openai fake-model"]


def test_a_clicks_grader_s_form_shows_what_it_learns_from_and_no_cache_or_budget(
        client, personas, setup):
    evaluation, clicks, _sage = setup
    client.force_login(personas.lead)
    # The first judge by name is the clicks grader: the panel's form is its form.
    for html in (client.get(f"/evaluations/{evaluation.pk}/judge-runs/").content.decode(),
                 client.get(f"/evaluations/{evaluation.pk}/judge-runs/estimate/",
                            {"judge": clicks.pk, "mode": "shadow"}, **BLOCK).content.decode()):
        assert _fields(html) == {"csrfmiddlewaretoken", "judge", "mode"}
        assert 'data-kind="clicks"' in html
        learns = dict(re.findall(r'data-testid="learns-([\w-]+)">([^<]*)<', html))
        assert learns == {"source": "simulated", "window": "all days",
                          "model": "Position-based model (EM)", "min-impressions": "25"}


def test_an_llm_judge_s_form_has_cache_and_budget_and_no_learning(client, personas, setup):
    evaluation, _clicks, sage = setup
    client.force_login(personas.lead)
    response = client.get(f"/evaluations/{evaluation.pk}/judge-runs/estimate/",
                          {"judge": sage.pk, "mode": "shadow"}, **BLOCK)
    html = response.content.decode()
    assert response.status_code == 200
    assert _fields(html) == {"csrfmiddlewaretoken", "judge", "mode", "refresh_cache", "budget"}
    assert 'data-kind="llm"' in html and "run-learns" not in html and "{#" not in html
    # The form's change asks for the whole block, the estimate's load for itself alone.
    assert 'hx-trigger="change"' in html and 'id="judge-run-start"' in html


@pytest.mark.parametrize("mode, says", [
    ("shadow", "36 pairs to grade in this mode; a shadow run keeps its grades on the run "
               "and fills no slot."),
    ("ungraded", "36 pairs to grade in this mode; it may fill up to 36 slots."),
])
def test_a_clicks_grader_s_estimate_is_a_plain_note_that_it_costs_nothing(
        client, personas, setup, mode, says):
    evaluation, clicks, _sage = setup
    client.force_login(personas.lead)
    response = client.get(f"/evaluations/{evaluation.pk}/judge-runs/estimate/",
                          {"judge": clicks.pk, "mode": mode}, **ESTIMATE)
    html = response.content.decode()
    assert response.status_code == 200 and "judge-run-start-form" not in html
    note = re.search(r'<p data-testid="estimate-local">(.*?)</p>', html, re.S).group(1)
    text = " ".join(re.sub(r"<[^>]+>", "", note).split())
    assert text == ("Costs nothing: it learns here from the clicks already stored and sends "
                    f"nothing outside. {says} 36 of them have enough impressions in the "
                    "grader's window to get a grade.")
    assert 'class="error"' not in html and "No estimate" not in html


def test_the_estimate_api_says_a_clicks_grader_makes_no_calls(personas, setup):
    evaluation, clicks, sage = setup
    api = APIClient()
    api.force_authenticate(personas.lead)
    body = api.get(f"/api/v1/evaluations/{evaluation.pk}/judge-runs/estimate/",
                   {"judge": clicks.pk, "mode": "shadow"}).json()
    assert (body["makes_calls"], body["problem"], body["cost"], body["pair_count"],
            body["call_count"], body["gradable_count"]) == (False, "", "0.0000", 36, 0, 36)
    llm = api.get(f"/api/v1/evaluations/{evaluation.pk}/judge-runs/estimate/",
                  {"judge": sage.pk, "mode": "shadow"}).json()
    assert (llm["makes_calls"], llm["gradable_count"]) == (True, None)


@pytest.mark.parametrize("field, value", [("budget", "5.00"), ("refresh_cache", True)])
def test_the_api_refuses_a_budget_or_cache_for_a_clicks_grader_and_stores_nothing(
        personas, setup, field, value):
    evaluation, clicks, _sage = setup
    api = APIClient()
    api.force_authenticate(personas.lead)
    audits = AuditEvent.objects.count()
    response = api.post(f"/api/v1/evaluations/{evaluation.pk}/judge-runs/",
                        {"judge": clicks.pk, "mode": "shadow", field: value}, format="json")
    assert response.status_code == 400
    assert list(response.json()) == [field]
    assert "learns from clicks" in response.json()[field][0]
    assert (JudgeRun.objects.count(), JudgeRunItem.objects.count(),
            AuditEvent.objects.count()) == (0, 0, audits)


def test_the_api_takes_the_defaults_for_a_clicks_grader(personas, setup,
                                                        django_capture_on_commit_callbacks):
    evaluation, clicks, _sage = setup
    api = APIClient()
    api.force_authenticate(personas.lead)
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post(f"/api/v1/evaluations/{evaluation.pk}/judge-runs/",
                            {"judge": clicks.pk, "mode": "shadow", "budget": None,
                             "refresh_cache": False}, format="json")
    assert response.status_code == 201 and response.json()["budget"] is None


def test_the_service_refuses_both_at_once_naming_each(personas, setup):
    evaluation, clicks, _sage = setup
    with pytest.raises(ValidationError) as raised:
        runs.run_start(judge=clicks, evaluation=evaluation, mode="shadow",
                       started_by=personas.lead, refresh_cache=True, budget=Decimal("1"))
    assert sorted(raised.value.message_dict) == ["budget", "refresh_cache"]
    assert JudgeRun.objects.count() == 0


def test_the_page_ignores_a_leftover_budget_for_a_clicks_grader(
        client, personas, setup, django_capture_on_commit_callbacks):
    """The page's form for a clicks grader has no budget: one left from an LLM judge
    picked before (a browser without scripts keeps it) is not read."""
    evaluation, clicks, _sage = setup
    client.force_login(personas.lead)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(f"/evaluations/{evaluation.pk}/judge-runs/start/",
                               {"judge": clicks.pk, "mode": "shadow", "budget": "5",
                                "refresh_cache": "on"})
    run = JudgeRun.objects.get()
    assert response.status_code == 302
    assert (run.budget, run.refresh_cache, run.pair_count) == (None, False, 36)


def test_the_estimate_counts_the_pairs_with_enough_impressions_as_the_run_grades_them(
        client, personas, django_capture_on_commit_callbacks):
    """At the minimum exactly: a result shown exactly `min_impressions` (30) times is graded,
    one shown 29 times is not. The estimate's count before the run equals what the run then
    grades, and the rest fail as "few impressions", two of them results the log never
    showed."""
    simulated = simulated_source(personas.team)  # 36 results, each shown 4,000 times
    BehaviourCount.objects.bulk_create(
        BehaviourCount(source=simulated.source, keyword="query 1", doc_id=doc, position=6,
                       impressions=shown, clicks=3)
        for doc, shown in (("rare", 30), ("rarer", 29)))
    grader = learning.click_grader_create(team=personas.team, by=personas.admin,
                                          name="Clicks", click_model="pbm",
                                          source=simulated.source, min_impressions=30)
    evaluation = evaluation_of(personas.team, simulated,
                               extra_docs={"query 0": ["unseen-1", "unseen-2"],
                                           "query 1": ["rare", "rarer"]})
    client.force_login(personas.lead)
    html = client.get(f"/evaluations/{evaluation.pk}/judge-runs/estimate/",
                      {"judge": grader.judge.pk, "mode": "shadow"}, **ESTIMATE
                      ).content.decode()
    note = re.search(r'<span data-testid="estimate-gradable">(.*?)</span>', html, re.S)
    assert " ".join(re.sub(r"<[^>]+>", "", note.group(1)).split()) == (
        "37 of them have enough impressions in the grader's window to get a grade; the "
        "other 3 would fail as “few impressions”.")
    with django_capture_on_commit_callbacks(execute=True):
        run = runs.run_start(judge=grader.judge, evaluation=evaluation, mode="shadow",
                             started_by=personas.lead)
    items = JudgeRunItem.objects.filter(run=run)
    assert (items.filter(status="done").count(),
            sorted(items.filter(status="failed", failure="few_impressions")
                   .values_list("snapshot__doc_id", flat=True))) == (
        37, ["rarer", "unseen-1", "unseen-2"])
