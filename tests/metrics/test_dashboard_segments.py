"""Segments on the evaluation dashboard: the cards over a segment and weighted by traffic
against hand-computed values (docs/METRICS.md, "Weighted means and segments"), the keyword
table filtered by a tag, the segment table, the distribution, and the page's query string
(`?segment=head&weighted=1`): a bad one is a 400 with its reason, an outsider a 404."""

from fractions import Fraction

import pytest
from django.http import QueryDict
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from evaluations.models import Evaluation, Keyword
from metrics import queries
from metrics.models import KeywordMetricValue
from metrics.reports.cards import evaluation_reference, metric_cards
from metrics.reports.compare_many import evaluations_compare_many
from metrics.reports.comparisons import evaluation_comparison
from metrics.reports.distribution import segment_distribution
from metrics.reports.keyword_table import keyword_table
from metrics.reports.metric_history import model_history
from metrics.reports.segments import (
    EVERY_KEYWORD,
    SegmentChoice,
    segment_means_of,
    segment_problem,
    segment_table,
    tag_order,
)
from metrics.selectors import metric_configs
from searchtweak.access import GradeVisibility
from tests.metrics.builders import build_evaluation, set_grades, slot
from tests.metrics.test_dashboard_builders import bulk_evaluation, graders_of
from tests.searchtweak.factories import UserFactory

pytestmark = pytest.mark.django_db

# P@10 now (relevant of 10), P@10 in the previous run, weight, tags.
KEYWORDS = {"shoes": (3, 1, 5, ["head"]), "boots": (2, 1, 3, ["head", "lang:de"]),
            "socks": (1, 3, 0, ["tail"])}


def by_hand(pairs: list[tuple[float, int]]) -> float | None:
    """R(Σ w·v) / Σ w over the pairs whose weight is above 0: the products and the sum
    exact, rounded once, then one division (docs/METRICS.md)."""
    kept = [(v, w) for v, w in pairs if w > 0]
    weight = sum(w for _, w in kept)
    return float(sum(Fraction(v) * w for v, w in kept)) / weight if weight else None


def _tagged(team, *, index: int, grader) -> Evaluation:
    # Each run its own documents: the rankings differ, so the bounds may decide.
    evaluation = build_evaluation(
        team=team, keywords={text: [f"{text}-{index}-{rank}" for rank in range(10)]
                             for text in KEYWORDS},
        metrics=[("precision", 10, {}), ("ndcg", 10, {})])
    for text, (*_, weight, tags) in KEYWORDS.items():
        Keyword.objects.filter(evaluation=evaluation, text=text).update(weight=weight, tags=tags)
    set_grades([grader], [(slot(evaluation, text, rank), 2 if rank <= row[index] else 0)
                          for text, row in KEYWORDS.items() for rank in range(1, 11)])
    return evaluation


@pytest.fixture
def runs(personas, django_capture_on_commit_callbacks):
    """The previous run of a model (finished) and its current run (active), both tagged and
    weighted alike and fully graded."""
    grader = UserFactory(username="segment-grader")
    with django_capture_on_commit_callbacks(execute=True):
        previous = _tagged(personas.team, index=1, grader=grader)
        current = _tagged(personas.team, index=0, grader=grader)
    Evaluation.objects.filter(pk=previous.pk).update(
        model=current.model, status=Evaluation.Status.FINISHED, name="Previous",
        finished_at=timezone.now())
    Evaluation.objects.filter(pk=current.pk).update(name="Current")
    previous.refresh_from_db()
    current.refresh_from_db()
    return previous, current


def _precision_card(current: Evaluation, choice: SegmentChoice):
    configs = metric_configs(current.pk)
    cards = metric_cards(evaluation=current, reference=evaluation_reference(evaluation=current),
                         configs=configs, choice=choice, means=segment_means_of(configs))
    return next(card for card in cards if card.config.code == "precision")


def test_cards_over_every_keyword_plain_are_the_stored_means(runs):
    _, current = runs
    card = _precision_card(current, EVERY_KEYWORD)
    assert (card.value, card.keyword_count) == (by_hand([(0.3, 1), (0.2, 1), (0.1, 1)]), 3)
    assert card.reference_value == by_hand([(0.1, 1), (0.1, 1), (0.3, 1)])
    assert (card.delta, card.shared_count) == (
        by_hand([(0.3 - 0.1, 1), (0.2 - 0.1, 1), (0.1 - 0.3, 1)]), 3)
    assert card.history  # every keyword's history shows


@pytest.mark.parametrize(("segment", "weighted", "value", "count", "weight_sum", "reference",
                          "delta", "shared"), [
    # head: shoes (0.3, weight 5, was 0.1) and boots (0.2, weight 3, was 0.1).
    ("head", False, 0.25, 2, 2, 0.1, by_hand([(0.3 - 0.1, 1), (0.2 - 0.1, 1)]), 2),
    ("head", True, by_hand([(0.3, 5), (0.2, 3)]), 2, 8, by_hand([(0.1, 5), (0.1, 3)]),
     by_hand([(0.3 - 0.1, 5), (0.2 - 0.1, 3)]), 2),
    # Every keyword weighted: socks weighs 0 and is left out of the mean and the delta.
    ("", True, by_hand([(0.3, 5), (0.2, 3)]), 2, 8, by_hand([(0.1, 5), (0.1, 3)]),
     by_hand([(0.3 - 0.1, 5), (0.2 - 0.1, 3)]), 2),
    ("lang:de", False, 0.2, 1, 1, 0.1, 0.2 - 0.1, 1),
    ("tail", False, 0.1, 1, 1, 0.3, 0.1 - 0.3, 1),
    # The tail's only keyword weighs 0: nothing to weigh.
    ("tail", True, None, 0, 0, None, None, 0),
])
def test_cards_over_a_segment_and_weighted_by_hand(runs, segment, weighted, value, count,
                                                  weight_sum, reference, delta, shared):
    _, current = runs
    card = _precision_card(current, SegmentChoice(segment, weighted))
    assert (card.value, card.keyword_count, card.weight_sum) == (value, count, weight_sum)
    assert card.reference_value == reference
    assert (card.delta, card.shared_count) == (delta, shared)
    # Fully graded: the bounds are the value (none without one).
    assert (card.lower, card.upper, card.bounds_exact) == (value, value, True)
    # The history and the verdict's word count every keyword: not shown for a segment.
    assert card.history == [] and card.verdict == ""


def test_the_hand_computed_weighted_numbers_read_as_expected(runs):
    _, current = runs
    card = _precision_card(current, SegmentChoice("head", True))
    assert card.value == 0.2625
    assert card.delta == pytest.approx(0.1625, abs=1e-15)
    assert card.reference_value == pytest.approx(0.1, abs=1e-15)


def test_the_segment_table_lays_out_every_metric_by_segment(runs):
    _, current = runs
    configs = metric_configs(current.pk)
    table = segment_table(configs=configs, means=segment_means_of(configs))
    # Traffic segments first, in their order, then the other tags by name.
    assert table.segments == ["", "head", "tail", "lang:de"]
    assert [row.label for row in table.rows] == ["P@10", "nDCG@10"]
    precision = table.rows[0]
    cells = {cell.segment: cell for cell in precision.cells}
    assert (cells["head"].plain.value, cells["head"].weighted.value) == (
        0.25, by_hand([(0.3, 5), (0.2, 3)]))
    assert (cells["tail"].plain.keyword_count, cells["tail"].weighted.value) == (1, None)
    assert cells[""].plain.value == current.metric_configs.with_stored_mean().get(
        code="precision").value


def test_tag_order_puts_the_traffic_segments_first():
    assert tag_order(["lang:de", "tail", "brand", "head", "torso", "tail"]) == [
        "head", "torso", "tail", "brand", "lang:de"]


def test_a_segment_is_known_from_the_means_or_the_keywords(runs, django_assert_num_queries):
    _, current = runs
    means = segment_means_of(metric_configs(current.pk))
    keywords = Keyword.objects.filter(evaluation=current)
    with django_assert_num_queries(0):
        assert segment_problem(keywords=keywords, means=means, segment="tail") is None
        assert segment_problem(keywords=keywords, means=means, segment="") is None
    problem = segment_problem(keywords=keywords, means=means, segment="tails")
    assert "No keyword of this evaluation carries the tag “tails”" in problem
    # A tag its keywords carry before any value is stored is a segment (empty for now).
    Keyword.objects.filter(evaluation=current, text="socks").update(tags=["tail", "new"])
    with django_assert_num_queries(1):
        assert segment_problem(keywords=keywords, means=means, segment="new") is None


def test_the_distribution_counts_the_segment_and_its_traffic(runs):
    _, current = runs
    config = current.metric_configs.get(code="precision")
    assert sorted(segment_distribution(config=config, choice=SegmentChoice("head"))[0]) == [
        0.2, 0.3]
    values, weights = segment_distribution(config=config, choice=SegmentChoice("", True))
    assert sorted(zip(values, weights, strict=True)) == [(0.1, 0), (0.2, 3), (0.3, 5)]


# --- the keyword table filtered by a tag ----------------------------------------------------


@pytest.fixture
def tagged_bulk(personas):
    """30 keywords of random binary grades, every third tagged "tail", every fifth "head"
    (some both), the weights varied."""
    evaluation = bulk_evaluation(team=personas.team, graders=graders_of(personas.team),
                                 keyword_count=30, graded_share=0.8, recompute=False)
    from metrics.recompute.means import evaluation_means_refresh
    from metrics.services import evaluation_metrics_recompute

    for keyword in Keyword.objects.filter(evaluation=evaluation):
        index = keyword.position - 1
        tags = sorted(["tail"] * (index % 3 == 0) + ["head"] * (index % 5 == 0))
        Keyword.objects.filter(pk=keyword.pk).update(tags=tags, weight=index % 4)
    # Some keywords without a value of the first metric: the table puts them last.
    evaluation_metrics_recompute(evaluation_id=evaluation.pk)
    first = metric_configs(evaluation.pk)[0]
    KeywordMetricValue.objects.filter(metric=first, keyword__position__in=[1, 4, 7]).update(
        value=None)
    # Written past the value writers: the means and segment sums are rebuilt from the values.
    queries.metric_sums_forget(evaluation_id=evaluation.pk)
    evaluation_means_refresh(evaluation_id=evaluation.pk)
    return evaluation


def _all_pages(evaluation, configs, **params) -> list[str]:
    """Every row of the table, walked page by page along the Next cursors."""
    visibility = GradeVisibility(None, frozenset({evaluation.team_id}))
    table = keyword_table(evaluation=evaluation, configs=configs, visibility=visibility,
                          per_page=4, **params)
    texts = [row.row.keyword.text for row in table.rows]
    while table.page.has_next():
        table = keyword_table(evaluation=evaluation, configs=configs, visibility=visibility,
                              per_page=4, after=table.page.last_id, **params)
        texts += [row.row.keyword.text for row in table.rows]
    return texts


@pytest.mark.parametrize("sort", ["position", "text", "metric"])
@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("show", ["", "worst", "ungraded"])
def test_the_keyword_table_of_a_segment_is_the_whole_table_with_the_others_left_out(
        tagged_bulk, sort, descending, show):
    """Sorting, filters and paging over a tag give the rows the untagged table gives, in the
    same order, minus the keywords without the tag; the count is theirs."""
    configs = metric_configs(tagged_bulk.pk)
    sort_key = f"m{configs[0].pk}" if sort == "metric" else sort
    params = {"sort": sort_key, "descending": descending, "show": show}
    tail = {keyword.text for keyword in Keyword.objects.filter(evaluation=tagged_bulk)
            if "tail" in keyword.tags}
    everything = _all_pages(tagged_bulk, configs, **params)
    expected = [text for text in everything if text in tail]
    means = segment_means_of(configs)
    counts = {config.pk: means.get(config.pk, SegmentChoice("tail")).keyword_count
              for config in configs}
    assert _all_pages(tagged_bulk, configs, tag="tail", **params) == expected
    assert _all_pages(tagged_bulk, configs, tag="tail", tag_value_counts=counts,
                      **params) == expected
    visibility = GradeVisibility(None, frozenset({tagged_bulk.team_id}))
    table = keyword_table(evaluation=tagged_bulk, configs=configs, visibility=visibility,
                          per_page=4, tag="tail", tag_value_counts=counts, **params)
    assert table.page.count == len(expected)


def test_the_keyword_table_of_a_segment_searches_and_pages_back(tagged_bulk):
    configs = metric_configs(tagged_bulk.pk)
    visibility = GradeVisibility(None, frozenset({tagged_bulk.team_id}))
    found = keyword_table(evaluation=tagged_bulk, configs=configs, visibility=visibility,
                          tag="head", search="query 2", sort=f"m{configs[1].pk}")
    # "query 2" and "query 20".."query 29" contain the term; of them, 0, 5, 10, ... are head.
    assert sorted(row.row.keyword.text for row in found.rows) == ["query 20", "query 25"]
    pages = keyword_table(evaluation=tagged_bulk, configs=configs, visibility=visibility,
                          tag="tail", per_page=3, page_number=2)
    back = keyword_table(evaluation=tagged_bulk, configs=configs, visibility=visibility,
                         tag="tail", per_page=3, before=pages.page.first_id, page_number=1)
    assert [row.row.keyword.position for row in pages.rows] == [10, 13, 16]
    assert [row.row.keyword.position for row in back.rows] == [1, 4, 7]


# --- the pages --------------------------------------------------------------------------------


def _dashboard(evaluation) -> str:
    return reverse("metrics:evaluation_dashboard", args=[evaluation.pk])


def test_the_dashboard_shows_the_chosen_segment_weighted(client, personas, runs):
    _, current = runs
    client.force_login(personas.lead)
    response = client.get(_dashboard(current), {"segment": "head", "weighted": "1"})
    assert response.status_code == 200
    html = response.content.decode()
    assert '<option value="head" selected>Tagged head</option>' in html
    assert 'name="weighted" value="1" checked' in html
    assert "keywords tagged head, weighted by traffic" in html
    assert "2 keywords tagged head with a value" in html
    assert '<p class="metric-value" data-testid="metric-value">0.2625</p>' in html
    assert "Σ weight 8" in html
    # No history of the segment's own: a note instead of an empty sparkline.
    assert html.count('data-testid="card-history-note"') == 2
    assert "svg" not in html.split('data-testid="metric-cards"')[1].split("</section>")[0]
    assert "weighted Δ over 2 shared keywords tagged head" in html
    # The keyword table keeps the head, with their weights.
    rows = response.context["table"].rows
    assert [(row.row.keyword.text, row.row.keyword.weight) for row in rows] == [
        ("shoes", 5), ("boots", 3)]
    # Its sort links and its form keep the segment.
    assert "segment=head" in response.context["sort_links"]["text"]["query"]
    assert '<input type="hidden" name="segment" value="head">' in html
    # The segment table links each segment, keeping the weights' choice.
    links = {segment: QueryDict(query) for segment, query, _ in
             response.context["segment_links"]}
    assert links["tail"] == QueryDict("segment=tail&weighted=1")
    assert links[""] == QueryDict("weighted=1")


def test_the_live_and_table_partials_follow_the_segment(client, personas, runs):
    _, current = runs
    client.force_login(personas.lead)
    live = client.get(reverse("metrics:evaluation_dashboard_live", args=[current.pk]),
                      {"segment": "tail"})
    assert live.status_code == 200
    card = next(card for card, _ in live.context["cards"] if card.config.code == "precision")
    assert (card.value, card.keyword_count) == (0.1, 1)
    assert live.context["distribution"]["count"] == 1
    table = client.get(reverse("metrics:evaluation_dashboard_table", args=[current.pk]),
                       {"segment": "lang:de"})
    assert [row.row.keyword.text for row in table.context["table"].rows] == ["boots"]


@pytest.mark.parametrize(("query", "problem"), [
    ({"segment": "tails"}, "No keyword of this evaluation carries the tag “tails”"),
    ({"segment": "x" * 51}, "Ensure this value has at most 50 characters"),
    ({"weighted": "yes"}, "Select a valid choice"),
])
def test_a_bad_segment_answers_400_with_its_reason_and_every_keyword(client, personas, runs,
                                                                     query, problem):
    _, current = runs
    client.force_login(personas.lead)
    for name in ("evaluation_dashboard", "evaluation_dashboard_live",
                 "evaluation_dashboard_table"):
        response = client.get(reverse(f"metrics:{name}", args=[current.pk]), query)
        assert response.status_code == 400, name
        assert response.context["choice"] == EVERY_KEYWORD
    response = client.get(_dashboard(current), query)
    assert problem in response.content.decode()
    assert len(response.context["table"].rows) == 3


def test_a_tag_in_another_case_is_the_tag(client, personas, runs):
    _, current = runs
    client.force_login(personas.lead)
    response = client.get(_dashboard(current), {"segment": "HEAD"})
    assert response.status_code == 200
    assert response.context["choice"] == SegmentChoice("head")


def test_an_outsider_gets_404_whatever_the_segment(client, personas, runs):
    _, current = runs
    client.force_login(personas.outsider)
    for segment in ("head", "nope"):
        assert client.get(_dashboard(current), {"segment": segment}).status_code == 404


# Each count includes the "What users did" panel's read of the team's behaviour sources.
@pytest.mark.parametrize(("query", "expected"), [
    ({"sort": "text"}, 27),
    # The cards read the reference's segment means instead of the standing verdict; the
    # distribution counts the segment's keywords in its statement instead of reading the
    # stored counts, and the table takes that count instead of asking its own.
    ({"sort": "text", "segment": "head", "weighted": "1"}, 26),
    # Sorted by a metric, a page that runs out of values reads the keywords without one.
    ({"sort": "m0"}, 28),
    ({"sort": "m0", "segment": "tail"}, 27),
    # A search too: the table counts for itself.
    ({"sort": "m0", "segment": "tail", "q": "socks"}, 28),
])
def test_the_dashboard_of_a_segment_runs_as_many_queries_as_the_plain_one(
        client, personas, runs, django_assert_num_queries, query, expected):
    """With a reference to compare with, whose delta a segment restricts."""
    _, current = runs
    client.force_login(personas.lead)
    if query["sort"] == "m0":
        query = {**query, "sort": f"m{metric_configs(current.pk)[0].pk}"}
    with django_assert_num_queries(expected):
        response = client.get(_dashboard(current), query)
    assert response.status_code == 200
    # Whoever counted, the table's count is the segment's.
    assert response.context["table"].page.count == {"head": 2, "tail": 1, None: 3}[
        query.get("segment")]


# --- the model's history per segment ----------------------------------------------------------


@pytest.fixture
def both_finished(runs):
    previous, current = runs
    Evaluation.objects.filter(pk=current.pk).update(status=Evaluation.Status.FINISHED,
                                                    finished_at=timezone.now())
    current.refresh_from_db()
    return previous, current


@pytest.mark.parametrize(("choice", "points"), [
    (EVERY_KEYWORD, [(by_hand([(0.1, 1), (0.1, 1), (0.3, 1)]), 3),
                     (by_hand([(0.3, 1), (0.2, 1), (0.1, 1)]), 3)]),
    (SegmentChoice("head"), [(0.1, 2), (0.25, 2)]),
    (SegmentChoice("head", True), [(by_hand([(0.1, 5), (0.1, 3)]), 2), (0.2625, 2)]),
    (SegmentChoice("tail", True), [(None, 0), (None, 0)]),
])
def test_the_model_history_of_a_segment_by_hand(both_finished, choice, points):
    previous, current = both_finished
    history = model_history(model=current.model, choice=choice)
    assert history.tags == ["head", "tail", "lang:de"]
    precision = next(line for line in history.histories if line.label == "P@10")
    assert [point[0] for point in precision.points] == [previous, current]
    assert [point[1:] for point in precision.points] == points
    # Fully graded: each point's bounds are its value.
    assert precision.bounds == [(value, value) for value, _ in points]


def test_the_model_history_page_shows_a_segment_and_refuses_an_unknown_one(
        client, personas, both_finished):
    _, current = both_finished
    client.force_login(personas.lead)
    url = reverse("metrics:model_history", args=[current.model_id])
    response = client.get(url, {"segment": "head"})
    assert response.status_code == 200
    html = response.content.decode()
    assert '<option value="head" selected>Tagged head</option>' in html
    assert "Each point: keywords tagged head." in html
    rows = response.context["histories"]
    precision = next(points for line, _, points in rows if line.label == "P@10")
    # The 95% interval of the head's two values, 0.3 and 0.2, is theirs.
    assert precision[-1][3] == pytest.approx((0.2, 0.3))
    assert f"/dashboard/evaluations/{current.pk}/?segment=head\"" in html
    weighted = client.get(url, {"segment": "head", "weighted": "1"})
    precision = next(points for line, _, points in weighted.context["histories"]
                     if line.label == "P@10")
    assert precision[-1][1:3] == (0.2625, 2)
    assert precision[-1][3] is None  # no interval for a weighted mean
    unknown = client.get(url, {"segment": "nope"})
    assert unknown.status_code == 400
    assert ("No keyword of the model&#x27;s finished evaluations carries the tag “nope”"
            in unknown.content.decode())
    assert unknown.context["choice"] == EVERY_KEYWORD
    client.force_login(personas.outsider)
    assert client.get(url, {"segment": "head"}).status_code == 404


# --- compare two evaluations per segment --------------------------------------------------------


def _precision_comparison(previous, current, choice):
    comparison = evaluation_comparison(a=previous, b=current, choice=choice, resamples=200)
    return comparison, next(m for m in comparison.metrics if m.label == "P@10")


@pytest.mark.parametrize(("choice", "mean_a", "mean_b", "delta", "texts", "weight_sum"), [
    # head: shoes 0.1 -> 0.3 (weight 5), boots 0.1 -> 0.2 (weight 3).
    (SegmentChoice("head"), 0.1, 0.25, by_hand([(0.3 - 0.1, 1), (0.2 - 0.1, 1)]),
     ["shoes", "boots"], None),
    (SegmentChoice("head", True), by_hand([(0.1, 5), (0.1, 3)]), 0.2625,
     by_hand([(0.3 - 0.1, 5), (0.2 - 0.1, 3)]), ["shoes", "boots"], 8),
    # Every keyword weighted: socks (0.3 -> 0.1) weighs 0 and drops out of the means.
    (SegmentChoice("", True), by_hand([(0.1, 5), (0.1, 3)]), 0.2625,
     by_hand([(0.3 - 0.1, 5), (0.2 - 0.1, 3)]), ["shoes", "boots", "socks"], 8),
    (SegmentChoice("tail"), 0.3, 0.1, 0.1 - 0.3, ["socks"], None),
    (SegmentChoice("tail", True), None, None, None, ["socks"], 0),
])
def test_compare_per_segment_by_hand(runs, choice, mean_a, mean_b, delta, texts, weight_sum):
    previous, current = runs
    comparison, precision = _precision_comparison(previous, current, choice)
    assert (precision.result.mean_a, precision.result.mean_b,
            precision.result.mean_delta) == (mean_a, mean_b, delta)
    assert precision.weight_sum == weight_sum
    assert sorted(row.text for row in comparison.keywords) == sorted(texts)
    assert comparison.shared_count == len(texts)
    # The keywords outside the segment are left uncompared, not counted as unshared.
    assert (comparison.only_a_count, comparison.only_b_count) == (0, 0)
    # The counts and the team rule's verdict cover the segment's keywords, every one alike.
    assert precision.result.keyword_count == len(texts)
    assert precision.rule_verdict.measure.shared_count == len(texts)
    # Fully graded: each side's bounds are its mean, weighted as the mean is.
    assert (precision.decision.a.lower, precision.decision.b.upper) == (mean_a, mean_b)


def test_a_segment_decides_by_its_own_bounds(runs):
    previous, current = runs
    _, head = _precision_comparison(previous, current, SegmentChoice("head", True))
    _, tail = _precision_comparison(previous, current, SegmentChoice("tail"))
    assert (head.decision.winner, tail.decision.winner) == (1, -1)


def test_every_weight_1_weighs_as_the_plain_comparison_to_the_bit(runs):
    previous, current = runs
    Keyword.objects.filter(evaluation=current).update(weight=1)
    plain, plain_precision = _precision_comparison(previous, current, EVERY_KEYWORD)
    weighted, weighted_precision = _precision_comparison(previous, current,
                                                         SegmentChoice("", True))
    assert weighted_precision.result == plain_precision.result
    assert weighted_precision.decision == plain_precision.decision
    assert weighted_precision.weight_sum == 3 and plain_precision.weight_sum is None
    assert [row.cells for row in weighted.keywords] == [row.cells for row in plain.keywords]


def test_the_compare_page_shows_a_segment_and_refuses_an_unknown_one(client, personas, runs):
    previous, current = runs
    client.force_login(personas.lead)
    url = reverse("metrics:compare")
    response = client.get(url, {"a": previous.pk, "b": current.pk, "segment": "head",
                                "weighted": "1"})
    assert response.status_code == 200
    html = response.content.decode()
    assert '<option value="head" selected>Tagged head in B</option>' in html
    assert "Compared over the shared keywords B tags head" in html
    assert "weighted Δ over 2 shared keywords (Σ weight 8)" in html
    assert f"?a={previous.pk}&b={current.pk}&metric=0&segment=head&weighted=1" in html
    unknown = client.get(url, {"a": previous.pk, "b": current.pk, "segment": "nope"})
    assert unknown.status_code == 400
    assert "No keyword of B (Current) carries the tag “nope”" in unknown.content.decode()
    assert unknown.context["comparison"].shared_count == 3
    client.force_login(personas.outsider)
    assert client.get(url, {"a": previous.pk, "b": current.pk,
                            "segment": "head"}).status_code == 404


# --- exports and API --------------------------------------------------------------------------


def _api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_the_segment_csv_has_a_row_per_metric_segment_and_weighting(personas, runs):
    _, current = runs
    response = _api(personas.grader).get(
        f"/api/v1/evaluations/{current.pk}/metric-table/?segments=true", HTTP_ACCEPT="text/csv")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    assert "segments.csv" in response["Content-Disposition"]
    lines = response.content.decode().splitlines()
    assert lines[0] == ("metric,segment,weighted,value,keyword_count,weight_sum,lower,upper,"
                        "bounds_exact")
    precision = [line for line in lines if line.startswith("precision@10,")]
    every = repr(by_hand([(0.3, 1), (0.2, 1), (0.1, 1)]))
    weighted = repr(by_hand([(0.3, 5), (0.2, 3)]))
    german = repr(by_hand([(0.2, 3)]))
    assert precision == [
        f"precision@10,,false,{every},3,3,{every},{every},true",
        f"precision@10,,true,{weighted},2,8,{weighted},{weighted},true",
        "precision@10,head,false,0.25,2,2,0.25,0.25,true",
        f"precision@10,head,true,{weighted},2,8,{weighted},{weighted},true",
        "precision@10,tail,false,0.1,1,1,0.1,0.1,true",
        # The tail's one keyword weighs 0: no weighted mean, empty cells.
        "precision@10,tail,true,,0,0,,,true",
        "precision@10,lang:de,false,0.2,1,1,0.2,0.2,true",
        # R(3 x 0.2) / 3: the product exact, the sum rounded once, then divided.
        f"precision@10,lang:de,true,{german},1,3,{german},{german},true",
    ]
    assert german == "0.20000000000000004"
    assert weighted == "0.2625"
    # The keyword table is unchanged without the option.
    plain = _api(personas.grader).get(f"/api/v1/evaluations/{current.pk}/metric-table/",
                                      HTTP_ACCEPT="text/csv").content.decode().splitlines()
    assert plain[0] == "keyword,precision@10,ndcg@10"
    assert _api(personas.outsider).get(
        f"/api/v1/evaluations/{current.pk}/metric-table/?segments=true").status_code == 404


def test_the_metrics_api_gives_each_metric_its_segment_means(personas, runs,
                                                             django_assert_max_num_queries):
    _, current = runs
    client = _api(personas.grader)
    with django_assert_max_num_queries(6):
        response = client.get(f"/api/v1/evaluations/{current.pk}/metrics/")
    assert response.status_code == 200
    body = response.json()
    assert (body["evaluation"], body["tags"]) == (current.pk, ["head", "tail", "lang:de"])
    precision = body["metrics"][0]
    assert (precision["code"], precision["k"], precision["label"]) == ("precision", 10, "P@10")
    assert (precision["value"], precision["keyword_count"]) == (
        by_hand([(0.3, 1), (0.2, 1), (0.1, 1)]), 3)
    segments = {(s["segment"], s["weighted"]): s for s in precision["segments"]}
    assert list(segments)[:4] == [("", False), ("", True), ("head", False), ("head", True)]
    assert segments["head", True] == {
        "segment": "head", "weighted": True, "value": 0.2625, "keyword_count": 2,
        "weight_sum": 8, "lower": 0.2625, "upper": 0.2625, "bounds_exact": True}
    assert segments["", False]["value"] == precision["value"]
    assert segments["tail", True]["value"] is None
    assert _api(personas.outsider).get(
        f"/api/v1/evaluations/{current.pk}/metrics/").status_code == 404
    assert client.post(f"/api/v1/evaluations/{current.pk}/metrics/").status_code == 405


def test_the_compare_api_takes_a_segment_and_weights(personas, runs):
    previous, current = runs
    client = _api(personas.grader)
    url = f"/api/v1/evaluations/{previous.pk}/compare/{current.pk}/"
    body = client.get(url, {"segment": "head", "weighted": "true"}).json()
    assert (body["segment"], body["weighted"], body["shared_keyword_count"]) == (
        "head", True, 2)
    precision = body["metrics"][0]
    assert (precision["mean_b"], precision["weight_sum"], precision["keyword_count"]) == (
        0.2625, 8, 2)
    assert precision["delta"] == by_hand([(0.3 - 0.1, 5), (0.2 - 0.1, 3)])
    plain = client.get(url).json()
    assert (plain["segment"], plain["weighted"], plain["shared_keyword_count"]) == ("", False, 3)
    assert plain["metrics"][0]["weight_sum"] is None
    unknown = client.get(url, {"segment": "nope"})
    assert unknown.status_code == 400
    assert "nope" in str(unknown.json())


# --- compare many per segment ---------------------------------------------------------------


def _many_precision(previous, current, choice):
    comparison = evaluations_compare_many(evaluations=[previous, current], reference=previous,
                                          choice=choice, resamples=200)
    precision = next(metric for metric in comparison.metrics if metric.label == "P@10")
    return comparison, precision.stats[0], precision.stats[1]


@pytest.mark.parametrize(("choice", "reference_mean", "run_mean", "delta", "texts"), [
    (SegmentChoice("head"), 0.1, 0.25, by_hand([(0.3 - 0.1, 1), (0.2 - 0.1, 1)]),
     ["boots", "shoes"]),
    (SegmentChoice("head", True), by_hand([(0.1, 5), (0.1, 3)]), 0.2625,
     by_hand([(0.3 - 0.1, 5), (0.2 - 0.1, 3)]), ["boots", "shoes"]),
    (SegmentChoice("tail"), 0.3, 0.1, 0.1 - 0.3, ["socks"]),
    (SegmentChoice("", True), by_hand([(0.1, 5), (0.1, 3)]), 0.2625,
     by_hand([(0.3 - 0.1, 5), (0.2 - 0.1, 3)]), ["boots", "shoes", "socks"]),
])
def test_compare_many_per_segment_by_hand(runs, choice, reference_mean, run_mean, delta,
                                          texts):
    previous, current = runs
    comparison, reference, run = _many_precision(previous, current, choice)
    assert (reference.summary.mean, run.summary.mean) == (reference_mean, run_mean)
    assert run.test.mean_delta == delta
    assert sorted(row.text for row in comparison.keywords) == texts
    assert comparison.shared_count == len(texts)
    # Fully graded: each mean's bounds are the mean, weighted as it is.
    assert (reference.bounds.lower, run.bounds.upper) == (reference_mean, run_mean)


def test_compare_many_pairs_by_the_runs_tags_and_means_by_each_ones_own(runs):
    """The reference tags socks head too: its own head mean counts it, the run's test pairs
    only the keywords the run tags head."""
    previous, current = runs
    Keyword.objects.filter(evaluation=previous, text="socks").update(tags=["head", "tail"])
    _, reference, run = _many_precision(previous, current, SegmentChoice("head"))
    assert reference.summary.mean == by_hand([(0.1, 1), (0.1, 1), (0.3, 1)])
    assert (reference.summary.present_count, reference.summary.keyword_count) == (3, 3)
    assert (run.summary.present_count, run.summary.keyword_count) == (2, 2)
    assert (run.test.keyword_count, run.test.mean_delta) == (
        2, by_hand([(0.3 - 0.1, 1), (0.2 - 0.1, 1)]))


def test_compare_many_weighted_with_every_weight_1_is_the_plain_one(runs):
    previous, current = runs
    Keyword.objects.filter(evaluation__in=[previous, current]).update(weight=1)
    _, plain_reference, plain_run = _many_precision(previous, current, EVERY_KEYWORD)
    _, reference, run = _many_precision(previous, current, SegmentChoice("", True))
    assert (reference.summary, run.summary, run.test) == (
        plain_reference.summary, plain_run.summary, plain_run.test)
    assert (reference.bounds, run.bounds) == (plain_reference.bounds, plain_run.bounds)


def test_the_compare_many_page_and_csv_follow_the_segment(client, personas, runs):
    previous, current = runs
    client.force_login(personas.lead)
    query = {"evaluation": [previous.pk, current.pk], "reference": previous.pk,
             "segment": "head", "weighted": "1"}
    response = client.get(reverse("metrics:compare_many"), query)
    assert response.status_code == 200
    html = response.content.decode()
    assert '<option value="head" selected>Tagged head</option>' in html
    assert "Means and Δ weigh each keyword by its weight" in html
    assert "weighted Δ over 2 keywords tagged head" in html
    csv_lines = client.get(reverse("metrics:compare_many_csv"), query
                           ).content.decode().splitlines()
    assert sorted(line.split(",")[0] for line in csv_lines[1:]) == ["boots", "shoes"]
    unknown = client.get(reverse("metrics:compare_many"), {**query, "segment": "nope"})
    assert unknown.status_code == 400
    assert "No keyword of the evaluations compared carries the tag “nope”" in (
        unknown.content.decode())


def test_the_compare_many_api_takes_a_segment_and_weights(personas, runs):
    previous, current = runs
    client = _api(personas.grader)
    query = {"evaluation": [previous.pk, current.pk], "reference": previous.pk}
    body = client.get("/api/v1/compare/", {**query, "segment": "head", "weighted": "true"}
                      ).json()
    assert (body["segment"], body["weighted"], body["shared_keyword_count"]) == (
        "head", True, 2)
    stats = body["metrics"][0]["evaluations"]
    assert (stats[0]["mean"], stats[1]["mean"]) == (by_hand([(0.1, 5), (0.1, 3)]), 0.2625)
    assert (stats[1]["delta"], stats[1]["paired_count"]) == (
        by_hand([(0.3 - 0.1, 5), (0.2 - 0.1, 3)]), 2)
    plain = client.get("/api/v1/compare/", query).json()
    assert (plain["segment"], plain["shared_keyword_count"]) == ("", 3)
    assert plain["metrics"][0]["evaluations"][1]["paired_count"] == 3
    assert client.get("/api/v1/compare/", {**query, "segment": "nope"}).status_code == 400


def test_a_tag_its_keywords_carry_before_any_value_is_a_segment_to_choose(client, personas,
                                                                           runs):
    """No stored value counts the tag yet: the page shows the segment, empty, still chosen."""
    _, current = runs
    Keyword.objects.filter(evaluation=current, text="boots").update(tags=["head", "new"])
    client.force_login(personas.lead)
    response = client.get(_dashboard(current), {"segment": "new"})
    assert response.status_code == 200
    assert '<option value="new" selected>Tagged new</option>' in response.content.decode()
    card = next(card for card, _ in response.context["cards"] if card.config.code == "precision")
    assert (card.value, card.keyword_count) == (None, 0)
    assert [row.row.keyword.text for row in response.context["table"].rows] == ["boots"]
