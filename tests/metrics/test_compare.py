"""Comparing two evaluations: numbers checked against a small case worked out by hand."""

import math

import pytest
from django.urls import reverse

from evaluations.models import EvaluationMetric
from metrics.models import KeywordMetricValue
from metrics.reports import comparisons
from searchtweak.access import grade_visibility
from searchtweak.models import ApiToken
from tests.metrics.builders import build_evaluation

pytestmark = pytest.mark.django_db

P2 = ("precision", 2, {})


@pytest.fixture
def pair(personas):
    """A: k1 [d1 d2], k2 [d1 d2], k3 [d1 d2], only-a.  B: " K1 " [d2 d1], k2 [d1 d2],
    k3 [d8 d9], only-b. Stored P@2 — A: .5, 1, 0; B: 1, 1, .5 (deltas .5, 0, .5)."""
    a = build_evaluation(team=personas.team, scale="binary", keywords={
        "k1": ["d1", "d2"], "k2": ["d1", "d2"], "k3": ["d1", "d2"], "only-a": ["x"]},
        metrics=[P2, ("ndcg", 10, {}), ("dcg", 10, {})])
    b = build_evaluation(team=personas.team, scale="binary", keywords={
        " K1 ": ["d2", "d1"], "k2": ["d1", "d2"], "k3": ["d8", "d9"], "only-b": ["y"]},
        metrics=[P2, ("ndcg", 10, {"gain": "linear"}), ("dcg", 10, {"gain": "exponential"})])
    for evaluation, values in ((a, {"k1": 0.5, "k2": 1.0, "k3": 0.0, "only-a": 1.0}),
                               (b, {"k1": 1.0, "k2": 1.0, "k3": 0.5, "only-b": 0.0})):
        config = EvaluationMetric.objects.get(evaluation=evaluation, code="precision")
        for keyword in evaluation.keywords.all():
            KeywordMetricValue.objects.update_or_create(
                keyword=keyword, metric=config,
                defaults={"value": values[keyword.normalized_text]})
    return a, b


def test_comparison_numbers_match_the_hand_computed_case(pair):
    a, b = pair
    comparison = comparisons.evaluation_comparison(a=a, b=b)
    assert comparison.shared_count == 3
    assert (comparison.only_a_count, comparison.only_b_count) == (1, 1)
    # nDCG with {} and {"gain": "linear"} is one metric; DCG linear vs exponential is not.
    assert [m.config_a.code for m in comparison.metrics] == ["precision", "ndcg"]
    precision = comparison.metrics[0].result
    assert precision.keyword_count == 3
    assert precision.mean_a == pytest.approx(0.5)
    assert precision.mean_b == pytest.approx(5 / 6)
    assert precision.mean_delta == pytest.approx(1 / 3)
    assert (precision.wins, precision.losses, precision.ties) == (2, 0, 1)
    # d = (.5, 0, .5): sd = sqrt(1/12), t = (1/3) / (sd/sqrt(3)) = 2, df = 2, and for
    # df = 2 the two-sided p is 1 - t / sqrt(2 + t²).
    assert precision.t_test_p == pytest.approx(1 - 2 / math.sqrt(6), abs=1e-9)
    # Sign flips: |mean| >= 1/3 exactly when both .5 share a sign: p = 1/2.
    assert precision.randomization_p == pytest.approx(0.5, abs=0.015)
    # Bootstrap means take 0 with chance 1/27 > 2.5 % and .5 with 8/27 > 2.5 %.
    assert comparison.metrics[0].ci == pytest.approx((0.0, 0.5))
    assert comparison.metrics[0].direction == "same"
    assert "No clear difference" in comparison.metrics[0].verdict
    # RBO@10 (p = .9): k1 swapped → 0.81 + (1/9)(0 + 0.81) = 0.9; k2 equal → 1; k3 → 0.
    rbo = {row.normalized_text: row.rbo for row in comparison.keywords}
    assert rbo == pytest.approx({"k1": 0.9, "k2": 1.0, "k3": 0.0})
    assert comparison.mean_rbo == pytest.approx(1.9 / 3)
    # Largest change first; equal changes → the lower RBO first.
    assert [row.normalized_text for row in comparison.keywords] == ["k3", "k1", "k2"]
    assert comparison.keywords[0].deltas[0] == pytest.approx(0.5)


def test_a_clear_improvement_reads_as_better():
    from metrics_engine.statistics import paired_comparison

    result = paired_comparison({i: 0.2 for i in range(30)},
                               {i: 0.5 + (i % 3) * 0.01 for i in range(30)})
    verdict, direction = comparisons.comparison_verdict(result, (0.29, 0.31))
    assert direction == "better" and verdict.startswith("B is better than A: +0.3100")


def test_the_compare_page_shows_the_numbers_and_links_the_side_by_side(client, personas, pair):
    a, b = pair
    client.force_login(personas.lead)
    response = client.get(reverse("metrics:compare"), {"a": a.pk, "b": b.pk})
    html = response.content.decode()
    assert response.status_code == 200
    assert "3 shared keywords" in html and "+0.3333" in html and "2 / 0 / 1" in html
    assert f"{1 - 2 / math.sqrt(6):.4f}" in html
    assert reverse("metrics:compare_keyword") + f"?a={a.pk}&b={b.pk}&keyword=k1" in html


def test_the_side_by_side_view_shows_both_lists(client, personas, pair):
    a, b = pair
    client.force_login(personas.lead)
    response = client.get(reverse("metrics:compare_keyword"),
                          {"a": a.pk, "b": b.pk, "keyword": "K1"})
    rows = comparisons.keyword_side_by_side(
        a=a, b=b, normalized_text="k1", visibility=grade_visibility(user=personas.lead))[2]
    assert [(r.a.snapshot.doc_id, r.b.snapshot.doc_id) for r in rows] == [("d1", "d2"),
                                                                         ("d2", "d1")]
    assert all(r.a_in_b and r.b_in_a and not r.same for r in rows)
    assert response.status_code == 200 and 'class="moved"' in response.content.decode()
    missing = client.get(reverse("metrics:compare_keyword"),
                         {"a": a.pk, "b": b.pk, "keyword": "nothing"})
    assert missing.status_code == 404


def test_compare_rejects_bad_input_outsiders_and_post(client, personas, pair):
    a, b = pair
    client.force_login(personas.lead)
    assert client.get(reverse("metrics:compare")).status_code == 200  # the picker
    assert client.get(reverse("metrics:compare"), {"a": a.pk, "b": a.pk}).status_code == 400
    assert client.get(reverse("metrics:compare"), {"a": "x", "b": b.pk}).status_code == 400
    assert client.get(reverse("metrics:compare_keyword"), {"a": a.pk}).status_code == 400
    assert client.post(reverse("metrics:compare"), {"a": a.pk, "b": b.pk}).status_code == 405
    client.force_login(personas.outsider)
    assert client.get(reverse("metrics:compare"), {"a": a.pk, "b": b.pk}).status_code == 404


def _token(user) -> str:
    from io import StringIO

    from django.core.management import call_command

    out = StringIO()
    call_command("api_token", user.username, stdout=out)
    return out.getvalue().strip().split()[-1]


def test_the_compare_api_returns_the_same_numbers(client, personas, pair):
    a, b = pair
    url = f"/api/v1/evaluations/{a.pk}/compare/{b.pk}/"
    headers = {"HTTP_AUTHORIZATION": f"Token {_token(personas.grader)}"}
    response = client.get(url, **headers)
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["shared_keyword_count"] == 3
    metric = body["metrics"][0]
    assert (metric["code"], metric["k"], metric["wins"], metric["ties"]) == ("precision", 2, 2, 1)
    assert metric["delta"] == pytest.approx(1 / 3)
    assert metric["t_test_p"] == pytest.approx(1 - 2 / math.sqrt(6))
    assert (metric["ci_low"], metric["ci_high"]) == pytest.approx((0.0, 0.5))
    assert [k["text"] for k in body["keywords"]] == ["k3", "k1", "k2"]
    assert body["keywords"][1]["rbo"] == pytest.approx(0.9)
    assert client.get(url, {"p": "2"}, **headers).status_code == 400
    assert client.post(url, **headers).status_code == 405
    assert client.get(url).status_code in (401, 403)
    outsider = {"HTTP_AUTHORIZATION": f"Token {_token(personas.outsider)}"}
    assert client.get(url, **outsider).status_code == 404
    assert ApiToken.objects.count() == 2


@pytest.fixture
def regraded(personas):
    """A and B return the same lists for k1, k2, k3; only their grades differ. Stored P@2 —
    A: .5, .5, .5; B: 1, .5, null (k3 not graded in B yet)."""
    keywords = {"k1": ["d1", "d2"], "k2": ["d3", "d4"], "k3": ["d5", "d6"]}
    a = build_evaluation(team=personas.team, scale="binary", keywords=keywords, metrics=[P2])
    b = build_evaluation(team=personas.team, scale="binary", keywords=keywords, metrics=[P2])
    for evaluation, values in ((a, {"k1": 0.5, "k2": 0.5, "k3": 0.5}),
                               (b, {"k1": 1.0, "k2": 0.5, "k3": None})):
        config = EvaluationMetric.objects.get(evaluation=evaluation, code="precision")
        for keyword in evaluation.keywords.all():
            KeywordMetricValue.objects.create(keyword=keyword, metric=config,
                                              value=values[keyword.normalized_text])
    return a, b


REGRADED_NOTE = ("The rankings are identical (RBO 1) for all 2 keywords with a value on both "
                 "sides, yet P@2 moved (mean Δ +0.2500): a grading difference, not a ranking "
                 "one.")


def test_identical_rankings_with_a_moved_metric_are_called_a_grading_difference(regraded):
    comparison = comparisons.evaluation_comparison(a=regraded[0], b=regraded[1])
    assert comparison.identical_rankings is True
    assert [row.same_ranking for row in comparison.keywords] == [True, True, True]
    [precision] = comparison.metrics
    assert (precision.both_count, comparison.shared_count) == (2, 3)
    assert precision.grading_only_count == 1  # k1; k2 did not move, k3 has no B value
    assert precision.ranking_note == REGRADED_NOTE


def test_no_ranking_note_when_the_rankings_differ_or_the_metric_did_not_move(pair):
    comparison = comparisons.evaluation_comparison(a=pair[0], b=pair[1])
    assert comparison.identical_rankings is False
    assert [(row.normalized_text, row.same_ranking) for row in comparison.keywords] == [
        ("k3", False), ("k1", False), ("k2", True)]
    assert [m.ranking_note for m in comparison.metrics] == [None, None]
    assert comparison.metrics[0].grading_only_count == 0  # k2 has the same value


def test_some_identical_rankings_that_moved_are_counted():
    assert comparisons.ranking_note(label="AP@10", both_count=5, same_count=2,
                                   grading_only_count=1, mean_delta=0.1) == (
        "1 of 5 keywords have identical rankings (RBO 1) but a different AP@10: grading "
        "differences, not ranking ones.")


def test_the_compare_page_states_the_both_sides_count_and_the_grading_warning(
        client, personas, regraded, pair):
    a, b = regraded
    client.force_login(personas.lead)
    html = client.get(reverse("metrics:compare"), {"a": a.pk, "b": b.pk}).content.decode()
    assert '<td class="num" data-testid="both-count">2 of 3</td>' in html
    assert REGRADED_NOTE in html and 'data-testid="ranking-note"' in html
    assert "every shared keyword has the same results in A and B" in html
    assert html.count(">same results</span>") == 3
    other = client.get(reverse("metrics:compare"), {"a": pair[0].pk, "b": pair[1].pk})
    other_html = other.content.decode()
    assert '<td class="num" data-testid="both-count">3 of 3</td>' in other_html
    assert 'data-testid="ranking-note"' not in other_html
    assert other_html.count(">same results</span>") == 1  # k2


def test_the_compare_api_carries_the_both_sides_count_and_the_grading_warning(
        client, personas, regraded):
    a, b = regraded
    headers = {"HTTP_AUTHORIZATION": f"Token {_token(personas.grader)}"}
    body = client.get(f"/api/v1/evaluations/{a.pk}/compare/{b.pk}/", **headers).json()
    assert (body["shared_keyword_count"], body["identical_rankings"]) == (3, True)
    [metric] = body["metrics"]
    assert (metric["keyword_count"], metric["grading_only_count"]) == (2, 1)
    assert metric["ranking_note"] == REGRADED_NOTE
    assert [k["same_ranking"] for k in body["keywords"]] == [True, True, True]
