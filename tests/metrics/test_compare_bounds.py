"""Decided verdicts in compare: each side's mean bounds over the shared keywords, from the
stored keyword bounds, and how many grades at most stand between now and a decision."""

import pytest
from django.urls import reverse

from evaluations.models import Keyword
from metrics.models import KeywordMetricValue
from metrics.recompute.means import evaluation_means_refresh
from metrics.reports import comparisons
from metrics.tasks import mark_fetched_dirty
from tests.metrics.builders import build_evaluation, set_grades, slot
from tests.searchtweak.factories import UserFactory

pytestmark = pytest.mark.django_db

P2 = ("precision", 2, {})


@pytest.fixture
def pair(personas, django_capture_on_commit_callbacks):
    """Binary, one slot, P@2 (relevant over judged results in the top 2). A and B share
    k1 and k2. A: k1 [0, 0], k2 [0, null]. B: k1 [1, 1], k2 [null, null]."""
    a = build_evaluation(team=personas.team, scale="binary",
                         keywords={"k1": ["d1", "d2"], "k2": ["d1", "d2"]}, metrics=[P2])
    b = build_evaluation(team=personas.team, scale="binary",
                         keywords={"k1": ["d3", "d4"], "k2": ["d3", "d4"]}, metrics=[P2])
    grader = UserFactory(username="bounds-grader")
    with django_capture_on_commit_callbacks(execute=True):
        for evaluation in (a, b):  # what each keyword's fetch announces
            for keyword in Keyword.objects.filter(evaluation=evaluation):
                mark_fetched_dirty(keyword.pk, evaluation.pk, True)
        set_grades([grader], [(slot(a, "k1", 1), 0), (slot(a, "k1", 2), 0),
                              (slot(a, "k2", 1), 0),
                              (slot(b, "k1", 1), 1), (slot(b, "k1", 2), 1)])
    return a, b, grader


def test_bounds_decide_b_whatever_the_ungraded_results_are(pair):
    a, b, _ = pair
    decision = comparisons.evaluation_comparison(a=a, b=b).metrics[0].decision
    # A: k1 P 0 (closed), k2 0/2 or 1/2 → mean bounds (0 + 0) / 2 .. (0 + 0.5) / 2 = 0 .. 0.25.
    # B: k1 1 (closed), k2 0/2 .. 2/2 → (1 + 0) / 2 .. (1 + 1) / 2 = 0.5 .. 1. 0.5 - 0.25 > 0.
    assert (decision.a.lower, decision.a.upper) == (0.0, 0.25)
    assert (decision.b.lower, decision.b.upper) == (0.5, 1.0)
    assert decision.winner == 1 and not decision.pending
    # A's k2 position 2 and B's k2 positions 1 and 2 are ungraded.
    assert decision.open_slot_count == 3
    assert decision.text == ("Decided: B is better than A whatever the 3 ungraded results "
                             "turn out to be.")


def test_overlapping_bounds_say_how_many_grades_at_most_remain(
        pair, django_capture_on_commit_callbacks):
    a, b, grader = pair
    with django_capture_on_commit_callbacks(execute=True):
        set_grades([grader], [(slot(b, "k1", 1), 0), (slot(b, "k1", 2), 0)])
    decision = comparisons.evaluation_comparison(a=a, b=b).metrics[0].decision
    # B: k1 0, k2 0 .. 1 → 0 .. 0.5, which overlaps A's 0 .. 0.25.
    assert (decision.b.lower, decision.b.upper) == (0.0, 0.5)
    assert decision.winner == 0
    assert decision.text == "Not decided: at most 3 more grades to a decision."


def test_a_keyword_without_bounds_yet_never_decides(pair):
    a, b, _ = pair
    KeywordMetricValue.objects.filter(keyword__evaluation=b, keyword__text="k2").delete()
    decision = comparisons.evaluation_comparison(a=a, b=b).metrics[0].decision
    assert decision.pending and decision.winner == 0
    assert "still being computed" in decision.text


def test_the_page_and_the_api_show_the_decision(client, personas, pair):
    a, b, _ = pair
    client.force_login(personas.lead)
    page = client.get(reverse("metrics:compare"), {"a": a.pk, "b": b.pk})
    html = page.content.decode()
    assert page.status_code == 200
    assert "Decided: B is better than A whatever the 3 ungraded results turn out to be." in html
    assert "(0.000\u20130.250)" in html and "(0.500\u20131.000)" in html
    api = client.get(f"/api/v1/evaluations/{a.pk}/compare/{b.pk}/")
    assert api.status_code == 200
    bounds = api.json()["metrics"][0]["bounds"]
    assert bounds == {"lower_a": 0.0, "upper_a": 0.25, "lower_b": 0.5, "upper_b": 1.0,
                      "exact": True, "decided": "b", "open_slot_count": 3, "pending": False,
                      "text": bounds["text"], "same_results": False}
    # B has a value for 1 of its 2 keywords (50 %, below the team rule's 90 %), yet the
    # bounds decide: improved, by the same rule as its verdict and the gate.
    rule_verdict = api.json()["metrics"][0]["rule_verdict"]
    assert (rule_verdict["verdict"], rule_verdict["decided_by"]) == ("improved", "bounds")
    assert rule_verdict["reason"].endswith(
        "better whatever the ungraded results turn out to be, decided by the bounds: the mean "
        "change over the keywords both have can only end between +0.250 and +1.000.")
    assert api.json()["verdict"] == "improved"
    assert '<strong data-testid="rule-verdict">Improved</strong>' in html


def test_the_dashboard_cards_table_and_apis_carry_the_bounds(client, personas, pair):
    a, _, _ = pair
    client.force_login(personas.lead)
    live = client.get(reverse("metrics:evaluation_dashboard_live", args=[a.pk])).content.decode()
    # A's P@2 mean: value 0 over 2 keywords, bounds 0 .. 0.25 (see the first test).
    assert "Once every result is graded: <span" in live and "(0.0000\u20130.2500)</span>" in live
    table = client.get(reverse("metrics:evaluation_dashboard_table", args=[a.pk])).content
    # k1 is closed (no range shown); k2 can still go 0 .. 0.5.
    assert table.decode().count('data-testid="bounds"') == 1
    assert "(0.000\u20130.500)" in table.decode()
    keywords = client.get(f"/api/v1/evaluations/{a.pk}/keywords/").json()["results"]
    assert [(k["text"], k["metrics"][0]["lower"], k["metrics"][0]["upper"],
             k["metrics"][0]["bounds_exact"]) for k in keywords] == [
        ("k1", 0.0, 0.0, True), ("k2", 0.0, 0.5, True)]
    metric = client.get(f"/api/v1/evaluations/{a.pk}/").json()["metrics"][0]
    assert (metric["lower"], metric["upper"], metric["bounds_exact"]) == (0.0, 0.25, True)


def test_wider_bounds_are_labelled_or_narrower_on_every_page_that_shows_them(
        client, personas, pair):
    a, b, _ = pair
    # As the sound range (bounds path 3) stores A's k2: containing the exact 0 .. 0.5.
    KeywordMetricValue.objects.filter(keyword__evaluation=a, keyword__text="k2").update(
        bounds_exact=False)
    evaluation_means_refresh(evaluation_id=a.pk, rebuild=True)
    client.force_login(personas.lead)
    wider = ('<span class="bounds wider" data-testid="bounds" title="Exact bounds would cost '
             'too much to compute here: these contain them">({} or narrower)</span>')
    # A's mean is wider as soon as one keyword's is; B's (all exact) stays unlabelled.
    compare = client.get(reverse("metrics:compare"), {"a": a.pk, "b": b.pk}).content.decode()
    assert wider.format("0.000\u20130.250") in compare
    assert "(0.500\u20131.000)</span>" in compare
    assert compare.count(" or narrower)") == 1
    many = client.get(reverse("metrics:compare_many"),
                      {"evaluation": [a.pk, b.pk], "reference": a.pk}).content.decode()
    assert wider.format("0.000\u20130.250") in many and many.count(" or narrower)") == 1
    live = client.get(reverse("metrics:evaluation_dashboard_live", args=[a.pk])).content
    assert "Once every result is graded: " + wider.format("0.0000\u20130.2500") in (
        live.decode())
    table = client.get(reverse("metrics:evaluation_dashboard_table", args=[a.pk])).content
    assert wider.format("0.000\u20130.500") in table.decode()


def test_the_n_way_compare_decides_against_the_reference(client, personas, pair):
    from metrics.reports import compare_many

    a, b, _ = pair
    comparison = compare_many.evaluations_compare_many(evaluations=[a, b], reference=a)
    stat_a, stat_b = comparison.metrics[0].stats
    assert (stat_a.bounds.lower, stat_a.bounds.upper, stat_a.decision) == (0.0, 0.25, 0)
    assert (stat_b.bounds.lower, stat_b.bounds.upper, stat_b.decision) == (0.5, 1.0, 1)
    # With B as the reference, A is decided worse.
    flipped = compare_many.evaluations_compare_many(evaluations=[a, b], reference=b)
    assert [s.decision for s in flipped.metrics[0].stats] == [-1, 0]
    client.force_login(personas.lead)
    html = client.get(reverse("metrics:compare_many"),
                      {"evaluation": [a.pk, b.pk], "reference": a.pk}).content.decode()
    assert "Decided: better</span>" in html
    api = client.get(f"/api/v1/compare/?evaluation={a.pk}&evaluation={b.pk}"
                     f"&reference={a.pk}").json()
    rows = api["metrics"][0]["evaluations"]
    assert [(r["lower"], r["upper"], r["decided"]) for r in rows] == [
        (0.0, 0.25, None), (0.5, 1.0, "better")]


def test_identical_rankings_cannot_differ_however_many_grades_are_missing(
        personas, django_capture_on_commit_callbacks, client):
    """The same documents in the same order for every keyword, nothing graded: not "at most
    4 more grades to a decision" but same results, no change."""
    a = build_evaluation(team=personas.team, scale="binary",
                         keywords={"k1": ["d1", "d2"]}, metrics=[P2])
    b = build_evaluation(team=personas.team, scale="binary",
                         keywords={"k1": ["d1", "d2"]}, metrics=[P2])
    with django_capture_on_commit_callbacks(execute=True):
        for evaluation in (a, b):
            for keyword in Keyword.objects.filter(evaluation=evaluation):
                mark_fetched_dirty(keyword.pk, evaluation.pk, True)
    metric = comparisons.evaluation_comparison(a=a, b=b).metrics[0]
    assert metric.decision.open_slot_count == 4
    assert metric.decision.text == "Same results: cannot differ."
    assert (metric.rule_verdict.verdict, metric.rule_verdict.decided_by) == (
        "no_change", "same_results")
    client.force_login(personas.lead)
    html = client.get(reverse("metrics:compare"), {"a": a.pk, "b": b.pk}).content.decode()
    assert "Same results: cannot differ." in html and "more grades to a decision" not in html
    # The N-way compare, page and API, says the same.
    many = client.get(reverse("metrics:compare_many"),
                      {"evaluation": [a.pk, b.pk], "reference": a.pk}).content.decode()
    assert "Same results: cannot differ" in many
    row = client.get(f"/api/v1/compare/?evaluation={a.pk}&evaluation={b.pk}"
                     f"&reference={a.pk}").json()["metrics"][0]["evaluations"][1]
    assert (row["decided"], row["rule_verdict"]["verdict"],
            row["rule_verdict"]["decided_by"]) == (None, "no_change", "same_results")
