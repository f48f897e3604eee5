"""Compare orders keywords by the largest absolute change over the metrics both sides
have (or of one chosen metric), and names the metrics only one side has."""

import pytest
from django.urls import reverse

from evaluations.models import EvaluationMetric
from metrics.models import KeywordMetricValue
from metrics.reports import comparisons
from tests.metrics.builders import build_evaluation

pytestmark = pytest.mark.django_db

# P@10 is tied everywhere (Δ 0); nDCG@10 and AP@10 move differently per keyword.
# Largest |Δ| of any: beta .4 (nDCG), alpha .3 (AP), gamma .25 (AP), delta .2 (nDCG).
VALUES = {
    "precision": {"alpha": (.5, .5), "beta": (.5, .5), "gamma": (.5, .5), "delta": (.5, .5)},
    "ndcg": {"alpha": (.5, .6), "beta": (.5, .1), "gamma": (.5, .5), "delta": (.9, .7)},
    "ap": {"alpha": (.2, .5), "beta": (.3, .3), "gamma": (.1, .35), "delta": (.4, .4)},
}
BY_LARGEST = ["beta", "alpha", "gamma", "delta"]
BY_NDCG = ["beta", "delta", "alpha", "gamma"]


def build_tied_pair(team):
    """A has ERR@10 besides the shared three, B has RR@10; both return the same lists."""
    keywords = {text: ["d1", "d2"] for text in ("alpha", "beta", "gamma", "delta")}
    shared = [("precision", 10, {}), ("ndcg", 10, {}), ("ap", 10, {})]
    a = build_evaluation(team=team, scale="graded", keywords=keywords,
                         metrics=[*shared, ("err", 10, {})])
    b = build_evaluation(team=team, scale="graded", keywords=keywords,
                         metrics=[("rr", 10, {}), *shared])
    for side, evaluation in enumerate((a, b)):
        for code, values in VALUES.items():
            config = EvaluationMetric.objects.get(evaluation=evaluation, code=code)
            for keyword in evaluation.keywords.all():
                KeywordMetricValue.objects.create(
                    keyword=keyword, metric=config, value=values[keyword.text][side])
    return a, b


@pytest.fixture
def tied(personas):
    return build_tied_pair(personas.team)


def texts(comparison) -> list[str]:
    return [row.text for row in comparison.keywords]


def test_keywords_come_by_the_largest_change_of_any_shared_metric(tied):
    comparison = comparisons.evaluation_comparison(a=tied[0], b=tied[1])
    assert [m.label for m in comparison.metrics] == ["P@10", "nDCG@10", "AP@10"]
    assert comparison.sort_index is None
    assert texts(comparison) == BY_LARGEST  # not alphabetical, though P@10 ties everywhere
    assert [row.change(None) for row in comparison.keywords] == pytest.approx(
        [.4, .3, .25, .2])
    assert [row.largest_index for row in comparison.keywords] == [1, 2, 2, 1]


def test_a_chosen_metric_orders_them_and_its_ties_fall_back_to_the_largest_change(tied):
    assert texts(comparisons.evaluation_comparison(a=tied[0], b=tied[1], sort_index=1)) == \
        BY_NDCG
    # P@10 ties everywhere: the largest change of any metric breaks the tie.
    assert texts(comparisons.evaluation_comparison(a=tied[0], b=tied[1], sort_index=0)) == \
        BY_LARGEST
    # An index past the shared metrics orders by all of them.
    past = comparisons.evaluation_comparison(a=tied[0], b=tied[1], sort_index=7)
    assert (past.sort_index, texts(past)) == (None, BY_LARGEST)


def test_metrics_on_one_side_only_are_named(tied):
    comparison = comparisons.evaluation_comparison(a=tied[0], b=tied[1])
    assert (comparison.only_a_metrics, comparison.only_b_metrics) == (("ERR@10",), ("RR@10",))


def test_the_page_orders_by_the_chosen_metric_and_names_one_sided_metrics(client, personas,
                                                                         tied):
    a, b = tied
    client.force_login(personas.lead)
    html = client.get(reverse("metrics:compare"), {"a": a.pk, "b": b.pk}).content.decode()
    assert "Not compared, configured on one side only: only A has ERR@10; only B has " \
           "RR@10." in html
    table = html[html.index('data-testid="keyword-comparison"'):]
    assert [table.index(f">{text}</a>") for text in BY_LARGEST] == sorted(
        table.index(f">{text}</a>") for text in BY_LARGEST)
    assert '<option value="" selected>any metric both have (the largest)</option>' in html
    html = client.get(reverse("metrics:compare"),
                      {"a": a.pk, "b": b.pk, "metric": 1}).content.decode()
    table = html[html.index('data-testid="keyword-comparison"'):]
    assert [table.index(f">{text}</a>") for text in BY_NDCG] == sorted(
        table.index(f">{text}</a>") for text in BY_NDCG)
    assert '<option value="1" selected>nDCG@10</option>' in html
    assert "Largest absolute change of nDCG@10 first" in html


def test_the_api_orders_the_same_way_and_names_one_sided_metrics(client, personas, tied):
    a, b = tied
    client.force_login(personas.grader)
    url = f"/api/v1/evaluations/{a.pk}/compare/{b.pk}/"
    body = client.get(url).json()
    assert [k["text"] for k in body["keywords"]] == BY_LARGEST
    assert (body["only_a_metrics"], body["only_b_metrics"], body["sort_metric"]) == (
        ["ERR@10"], ["RR@10"], None)
    body = client.get(url, {"metric": 1}).json()
    assert ([k["text"] for k in body["keywords"]], body["sort_metric"]) == (BY_NDCG, 1)
