"""One decision rule and one delta for a pair, on every surface: the stored verdict (a
schedule's run), the gate API, the two-way compare (page and API), the N-way compare
(selector and API), the dashboard's card and the schedule's run list (page and API).

The pair, by hand (binary scale, one slot per result, P@2 = relevant over judged results
in the top 2; docs/METRICS.md):

    baseline A: k1..k10 return [a1, a2], both graded 1: P@2 = 1, final (bounds 1..1);
                k12 (A only) returns [a1, a2] graded 0, 0: P@2 = 0.
    run B:      k1..k8 return [b1, b2] graded 0, 1: P@2 = 1/2, final;
                k9, k10 return [b1, b2], ungraded: no value, bounds 0..1;
                k11 (B only) returns [b1, b2] graded 1, 1: P@2 = 1.

Coverage of B: 9 of its 11 keywords have a value, 82 % < the rule's 90 %: the statistics
cannot decide. The bounds over the ten keywords both have: A 1..1; B lower
(8 x 1/2 + 0 + 0) / 10 = 0.4, upper (8 x 1/2 + 1 + 1) / 10 = 0.6; the mean change can only
end in [0.4 - 1, 0.6 - 1] = [-0.6, -0.4]: B is worse whatever the ungraded results turn out
to be, so *regressed*, at any coverage.

The delta, over the 8 keywords both have a value for: (1/2 - 1) x 8 / 8 = -0.5. (Over all
keywords it would be mean(B) - mean(A) = (8 x 1/2 + 1) / 9 - 10 / 11 = 5/9 - 10/11
= -0.3535..., the number the dashboard's card used to show.)
"""

import html
import re
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from evaluations.models import Evaluation, Keyword
from metrics.models import RegressionVerdict, TeamBaseline
from metrics.reports import compare_many, comparisons
from metrics.reports.cards import evaluation_reference, metric_cards
from metrics.reports.verdicts import standing_regression_verdict
from metrics.tasks import mark_fetched_dirty
from schedules.models import Schedule, ScheduleRun
from schedules.selectors import schedule_runs, with_latest_verdicts
from schedules.verdicts import schedule_run_verdict_on_finish
from searchtweak.services import api_token_create
from tests.metrics.builders import build_evaluation, set_grades, slot
from tests.schedules.builders import schedule_of
from tests.searchtweak.factories import UserFactory

pytestmark = pytest.mark.django_db

P2 = ("precision", 2, {})
SHARED = [f"k{n}" for n in range(1, 11)]
DELTA = -0.5


def _dirty_all(evaluation) -> None:
    # What each keyword's fetch announces: its first recompute stores values and bounds.
    for keyword in Keyword.objects.filter(evaluation=evaluation):
        mark_fetched_dirty(keyword.pk, evaluation.pk, True)


@pytest.fixture
def pair(personas, django_capture_on_commit_callbacks):
    finished = Evaluation.Status.FINISHED
    a = build_evaluation(team=personas.team, scale="binary", status=finished, metrics=[P2],
                         keywords={**{t: ["a1", "a2"] for t in SHARED}, "k12": ["a1", "a2"]})
    b = build_evaluation(team=personas.team, scale="binary", status=finished, metrics=[P2],
                         keywords={**{t: ["b1", "b2"] for t in SHARED}, "k11": ["b1", "b2"]})
    grader = UserFactory(username="rule-grader")
    grades = [(slot(a, t, p), 1) for t in SHARED for p in (1, 2)]
    grades += [(slot(a, "k12", 1), 0), (slot(a, "k12", 2), 0)]
    grades += [(slot(b, t, p), p - 1) for t in SHARED[:8] for p in (1, 2)]
    grades += [(slot(b, "k11", 1), 1), (slot(b, "k11", 2), 1)]
    with django_capture_on_commit_callbacks(execute=True):
        _dirty_all(a)
        _dirty_all(b)
        set_grades([grader], grades)
    TeamBaseline.objects.create(team=personas.team, evaluation=a)
    # B is a schedule's run whose rule is the team's default (90 %, any change) against the
    # team's baseline.
    schedule = schedule_of(personas.team, personas.lead, baseline=Schedule.Baseline.TEAM,
                           min_coverage=0.9, scale="binary",
                           metrics=[{"code": "precision", "k": 2, "params": {}}])
    due_at = timezone.now() - timedelta(hours=1)
    ScheduleRun.objects.create(schedule=schedule, evaluation=b, due_at=due_at,
                               deadline_at=due_at + timedelta(hours=24))
    return a, b, schedule


def api_as(user) -> APIClient:
    _, key = api_token_create(user=user, name="tests")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def test_every_surface_says_regressed_by_the_bounds_with_one_delta(pair, personas, client):
    a, b, schedule = pair
    lead = api_as(personas.lead)

    # The stored verdict: the schedule's rule, on finish.
    stored = schedule_run_verdict_on_finish(evaluation_id=b.pk)
    assert (stored.source, stored.verdict) == ("schedule", "regressed")
    metric = stored.metrics[0]
    assert (metric["coverage"], metric["shared_count"]) == (pytest.approx(9 / 11), 8)
    assert (metric["decided_by"], metric["mean_delta"]) == ("bounds", DELTA)
    assert metric["delta_range"] == [pytest.approx(-0.6), pytest.approx(-0.4)]

    # The gate, with its default `undecided: pass`: fails.
    gate = lead.post(f"/api/v1/evaluations/{b.pk}/gate/", {}, format="json").json()
    assert (gate["verdict"], gate["passed"]) == ("regressed", False)
    assert gate["metrics"][0]["mean_delta"] == DELTA
    assert gate["reasons"] == stored.reasons

    # The two-way compare, B against A: selector, page and API.
    two_way = comparisons.evaluation_comparison(a=a, b=b)
    assert two_way.outcome.verdict == "regressed"
    assert two_way.outcome.reasons[:2] == stored.reasons[:2]
    assert (two_way.metrics[0].rule_verdict.verdict, two_way.metrics[0].result.mean_delta,
            two_way.metrics[0].both_count) == ("regressed", DELTA, 8)
    # The same seeded statistics as the stored verdict, to the bit.
    assert (two_way.metrics[0].result.randomization_p, two_way.metrics[0].ci) == (
        metric["p"], (metric["ci_low"], metric["ci_high"]))
    client.force_login(personas.lead)
    page = html.unescape(client.get(reverse("metrics:compare"),
                                    {"a": a.pk, "b": b.pk}).content.decode())
    assert '<strong data-testid="rule-verdict">Regressed</strong>' in page
    assert '<span data-testid="delta">-0.5000</span>' in page
    assert '<small class="help" data-testid="delta-label">Δ over 8 shared keywords</small>' in page
    api = lead.get(f"/api/v1/evaluations/{a.pk}/compare/{b.pk}/").json()
    assert (api["verdict"], api["metrics"][0]["rule_verdict"]["verdict"],
            api["metrics"][0]["delta"]) == ("regressed", "regressed", DELTA)

    # The N-way compare with A as the reference: selector and API.
    many = compare_many.evaluations_compare_many(evaluations=[a, b], reference=a)
    assert many.outcomes[1].verdict == "regressed"
    stat = many.metrics[0].stats[1]
    assert (stat.rule_verdict.verdict, stat.rule_verdict.measure.mean_delta) == (
        "regressed", DELTA)
    many_api = lead.get(f"/api/v1/compare/?evaluation={a.pk}&evaluation={b.pk}"
                        f"&reference={a.pk}").json()
    row = many_api["metrics"][0]["evaluations"][1]
    assert (row["rule_verdict"]["verdict"], row["delta"], row["paired_count"]) == (
        "regressed", DELTA, 8)

    # The dashboard's card against the team baseline, and the verdict on the page.
    reference = evaluation_reference(evaluation=b)
    assert reference.evaluation == a
    card = metric_cards(
        evaluation=b, reference=reference,
        verdict=standing_regression_verdict(evaluation=b))[0]
    assert (card.verdict, card.delta, card.shared_count) == ("regressed", DELTA, 8)
    dashboard = html.unescape(client.get(
        reverse("metrics:evaluation_dashboard", args=[b.pk])).content.decode())
    assert '<span class="verdict-badge" data-testid="verdict-badge">Regressed</span>' in dashboard
    assert '<span data-testid="delta-label">Δ over 8 shared keywords</span>' in dashboard
    assert re.search(r'data-testid="card-verdict"[^>]*><span class="verdict-badge '
                     r'verdict-regressed">Regressed</span> by the schedule\'s rule', dashboard)

    # The schedule's run list (selector, page, API): the schedule's verdict, not the gate's
    # stored after it.
    runs = with_latest_verdicts(list(schedule_runs(schedule_id=schedule.pk)))
    assert [(run.verdict.pk, run.verdict.verdict) for run in runs] == [
        (stored.pk, "regressed")]
    detail = client.get(reverse("schedules:schedule_detail", args=[schedule.pk]))
    assert 'class="verdict-regressed"' in detail.content.decode()
    runs_api = lead.get(f"/api/v1/schedules/{schedule.pk}/runs/").json()["results"]
    assert runs_api[0]["verdict"]["verdict"] == "regressed"


def test_a_gate_with_another_rule_does_not_replace_the_schedules_verdict(pair, personas,
                                                                         client):
    _, b, schedule = pair
    stored = schedule_run_verdict_on_finish(evaluation_id=b.pk)
    # A threshold of 0.6: the change [-0.6, -0.4] is within it, whatever the grades.
    gate = api_as(personas.lead).post(f"/api/v1/evaluations/{b.pk}/gate/",
                                      {"threshold": 0.6}, format="json").json()
    assert (gate["verdict"], gate["metrics"][0]["decided_by"]) == ("no_change", "bounds")
    assert (gate["standing"], gate["rule_text"]) == (
        False, "an ad-hoc gate call: coverage \u2265 90 %, \u2265 5 shared keywords, "
               "\u03b1 0.05, changes beyond 0.600")
    listed = api_as(personas.grader).get(
        f"/api/v1/evaluations/{b.pk}/verdicts/").json()["results"]
    assert [(row["source"], row["standing"]) for row in listed] == [
        ("gate", False), ("schedule", True)]
    assert standing_regression_verdict(evaluation=b) == stored
    runs = with_latest_verdicts(list(schedule_runs(schedule_id=schedule.pk)))
    assert runs[0].verdict == stored
    runs_api = api_as(personas.grader).get(
        f"/api/v1/schedules/{schedule.pk}/runs/").json()["results"]
    assert runs_api[0]["verdict"]["verdict"] == "regressed"
    assert runs_api[0]["verdict"]["rule"]["min_coverage"] == 0.9
    client.force_login(personas.grader)
    dashboard = html.unescape(client.get(
        reverse("metrics:evaluation_dashboard", args=[b.pk])).content.decode())
    assert '<span class="verdict-badge" data-testid="verdict-badge">Regressed</span>' in dashboard
    assert ("No change</span> against " in dashboard
            and "by an ad-hoc gate call: coverage \u2265 90 %, \u2265 5 shared keywords, "
                "\u03b1 0.05, changes beyond 0.600" in dashboard)
    assert RegressionVerdict.objects.filter(evaluation=b).count() == 2
