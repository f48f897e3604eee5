"""Keyset pages of the per-keyword table (metrics.reports.keyword_table with a cursor):
walked forward by `after` and back by `before`, they give the full ORM order, ties, nulls
and search included, and a page costs the same queries at any size."""

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from evaluations.models import Keyword
from metrics.models import KeywordMetricValue
from metrics.recompute.means import evaluation_means_refresh
from metrics.reports.keyword_table import (
    MetricOrder,
    _cursor_keyword,
    keyword_order,
    keyword_queryset,
    keyword_table,
)
from metrics.selectors import metric_configs
from searchtweak.access import GradeVisibility
from tests.conftest import skip_or_fail
from tests.metrics.test_dashboard_builders import bulk_evaluation, graders_of

PER_PAGE = 4


def _table(evaluation, configs, **params):
    return keyword_table(
        evaluation=evaluation, configs=configs, per_page=PER_PAGE,
        visibility=GradeVisibility(None, frozenset({evaluation.team_id})), **params)


def _walk(evaluation, configs, **params) -> tuple[list[int], list[int]]:
    """The ids page by page forward (Next: after the last) and then back from the last page
    (Previous: before the first)."""
    table = _table(evaluation, configs, **params)
    forward = [row.row.keyword.pk for row in table.rows]
    while table.page.has_next():
        table = _table(evaluation, configs, after=table.page.last_id, **params)
        forward = forward + [row.row.keyword.pk for row in table.rows]
    backward = [row.row.keyword.pk for row in table.rows]
    while table.page.has_previous():
        table = _table(evaluation, configs, before=table.page.first_id, **params)
        backward = [row.row.keyword.pk for row in table.rows] + backward
    assert table.page.number == 1
    return forward, backward


@pytest.fixture
def evaluation(personas):
    evaluation = bulk_evaluation(team=personas.team, graders=graders_of(personas.team),
                                 keyword_count=19, graded_share=0.5, seed=4)
    ap = metric_configs(evaluation.pk)[1]
    keywords = list(evaluation.keywords.order_by("position"))
    # Ties across page boundaries, a null value and a value never computed.
    KeywordMetricValue.objects.filter(metric=ap, keyword__in=keywords[2:9]).update(value=0.5)
    KeywordMetricValue.objects.filter(metric=ap, keyword=keywords[4]).update(value=None)
    KeywordMetricValue.objects.filter(metric=ap, keyword=keywords[11]).delete()
    evaluation_means_refresh(evaluation_id=evaluation.pk, rebuild=True)
    return evaluation


@pytest.mark.parametrize("params", [
    {"sort": "m", "descending": False}, {"sort": "m", "descending": True},
    {"sort": "m", "descending": False, "show": "worst"},
    {"sort": "m", "descending": True, "search": "1"},
    {"sort": "position", "descending": False}, {"sort": "position", "descending": True},
    {"sort": "text", "descending": True}, {"sort": "position", "search": "1"},
])
def test_keyset_pages_concatenated_are_the_orm_order(evaluation, params):
    configs = metric_configs(evaluation.pk)
    if params["sort"] == "m":
        params = {**params, "sort": f"m{configs[1].pk}"}
    expected = list(keyword_queryset(evaluation=evaluation, configs=configs,
                                     **params).values_list("pk", flat=True))
    assert len(expected) > 2 * PER_PAGE
    forward, backward = _walk(evaluation, configs, **params)
    assert forward == expected
    assert backward == expected


def test_a_descending_metric_order_is_the_ascending_one_reversed_but_for_missing_values(
        evaluation):
    """Ties (here seven keywords at 0.5) go in keyword order, reversed when descending, so
    one index serves both directions; the keywords without a value stay last."""
    configs = metric_configs(evaluation.pk)
    ap = configs[1]
    keywords = [keyword.pk for keyword in evaluation.keywords.order_by("position")]
    ascending, _ = _walk(evaluation, configs, sort=f"m{ap.pk}", descending=False)
    descending, _ = _walk(evaluation, configs, sort=f"m{ap.pk}", descending=True)
    assert ascending[-2:] == [keywords[4], keywords[11]]
    assert descending[-2:] == [keywords[11], keywords[4]]
    assert descending[:-2] == ascending[:-2][::-1]
    ties = [pk for pk in ascending if pk in keywords[2:9] and pk != keywords[4]]
    assert ties == [keywords[2], keywords[3], *keywords[5:9]]


def test_a_malformed_cursor_answers_400_and_an_unknown_one_page_1(client, personas,
                                                                   evaluation):
    client.force_login(personas.lead)
    url = reverse("metrics:evaluation_dashboard_table", args=[evaluation.pk])
    assert client.get(url, {"after": "x1"}).status_code == 400
    assert client.get(url, {"before": "-3"}).status_code == 400
    response = client.get(url, {"after": "999999999"})
    assert response.status_code == 200
    assert response.context["table"].page.number == 1
    first = evaluation.keywords.order_by("position").first()
    assert response.context["table"].rows[0].row.keyword.pk == first.pk


def test_the_pager_links_keep_sort_direction_and_search(client, personas, evaluation,
                                                          monkeypatch):
    monkeypatch.setitem(keyword_table.__kwdefaults__, "per_page", PER_PAGE)
    client.force_login(personas.lead)
    url = reverse("metrics:evaluation_dashboard_table", args=[evaluation.pk])
    response = client.get(url, {"sort": "position", "dir": "desc", "q": "1"})
    table = response.context["table"]
    html = response.content.decode()
    assert f"after={table.page.last_id}&amp;page=2" in html
    assert "sort=position&amp;dir=desc&amp;q=1" in html
    response = client.get(url, {"sort": "position", "dir": "desc", "q": "1",
                                "after": table.page.last_id, "page": 2})
    first_id = response.context["table"].page.first_id
    assert f"before={first_id}&amp;page=1" in response.content.decode()


def _second(evaluation, configs) -> int:
    return list(keyword_queryset(evaluation=evaluation, configs=configs,
                                 sort=f"m{configs[0].pk}")
                .values_list("pk", flat=True))[1]


def _queries(evaluation, **params) -> int:
    configs = metric_configs(evaluation.pk)
    # The second keyword in the metric's order: both pages stay among keywords with a value
    # (a page that reaches those without one runs one more query, at any size).
    middle = _second(evaluation, configs)
    with CaptureQueriesContext(connection) as captured:
        _table(evaluation, configs, sort=f"m{configs[0].pk}", after=middle, **params)
    return len(captured)


def test_a_keyset_page_runs_the_same_queries_at_two_sizes(personas,
                                                          django_assert_num_queries):
    graders = graders_of(personas.team)
    small = bulk_evaluation(team=personas.team, graders=graders, keyword_count=12, seed=1)
    large = bulk_evaluation(team=personas.team, graders=graders, keyword_count=60, seed=2)
    expected = _queries(small)
    configs = metric_configs(large.pk)
    middle = _second(large, configs)
    with django_assert_num_queries(expected):
        _table(large, configs, sort=f"m{configs[0].pk}", after=middle)


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("backward", [False, True])
def test_a_metric_cursor_bounds_the_value_so_the_index_range_starts_at_it(
        evaluation, descending, backward):
    """"value > v OR (value = v AND keyword > k)" alone is a filter PostgreSQL applies from
    the index's start (page 1,000 of 100,000 keywords read 50,000 rows); the implied
    "value >= v" (or <=) lets the range start at the cursor."""
    configs = metric_configs(evaluation.pk)
    order = keyword_order(evaluation=evaluation, configs=configs,
                          sort=f"m{configs[0].pk}", descending=descending)
    middle = order[8:9][0]
    cursor = _cursor_keyword(evaluation=evaluation, metric_id=configs[0].pk,
                             keyword_id=middle.pk)
    with CaptureQueriesContext(connection) as queries:
        order.keyset(cursor, backward=backward, size=3)
    statement = queries.captured_queries[0]["sql"]
    upward = descending == backward  # the walk goes toward smaller values otherwise
    bound = '"value" >= ' if upward else '"value" <= '
    assert statement.count(bound) == 1, statement


@pytest.mark.parametrize("params", [
    {"sort": "m", "descending": True, "search": "1"},
    {"sort": "m", "descending": False, "search": "1"},
    {"sort": "m", "descending": False, "show": "worst", "search": "1"},
    {"sort": "m", "descending": True, "search": "no such keyword"},
])
def test_a_searched_metric_order_pages_by_number_as_the_orm_orders(evaluation, params):
    """A search sorted by a metric walks the metric's values (then the keywords without
    one) with the text filter, page by page, without sorting every match."""
    configs = metric_configs(evaluation.pk)
    params = {**params, "sort": f"m{configs[1].pk}"}
    expected = list(keyword_queryset(evaluation=evaluation, configs=configs,
                                     **params).values_list("pk", flat=True))
    order = keyword_order(evaluation=evaluation, configs=configs, **params)
    assert isinstance(order, MetricOrder)
    pages, number = [], 1
    while True:
        table = _table(evaluation, configs, page_number=number, **params)
        pages += [row.row.keyword.pk for row in table.rows]
        if not table.page.has_next():
            break
        number += 1
    assert pages == expected
    assert table.page.count == len(expected)
    if params.get("search") == "1":
        assert 0 < len(expected) < evaluation.keywords.count()


def _plan_nodes(plan: dict):
    yield plan
    for child in plan.get("Plans", []):
        yield from _plan_nodes(child)


@pytest.mark.parametrize("descending", [False, True])
def test_both_directions_page_along_the_one_value_index(personas, descending):
    """The descending table reads kmv_metric_value_kw_idx backwards: no sort of every
    value, at a page number or from a cursor."""
    if connection.vendor != "postgresql":
        skip_or_fail("a PostgreSQL plan: set DATABASE_URL")
    evaluation = bulk_evaluation(team=personas.team, graders=graders_of(personas.team),
                                 keyword_count=2, seed=3)
    config = metric_configs(evaluation.pk)[0]
    keywords, values = Keyword._meta.db_table, KeywordMetricValue._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"WITH k AS (INSERT INTO {keywords} (position, text, normalized_text,"
            " fetch_status, fetch_error, evaluation_id) SELECT n, 'k' || n, 'k' || n,"
            " 'fetched', '', %s FROM generate_series(3, 20002) n RETURNING id, position)"
            f" INSERT INTO {values} (keyword_id, metric_id, value, bounds_exact,"
            " computed_version, updated_at) SELECT id, %s, (position %% 97) / 97.0, true, 0,"
            " now() FROM k", [evaluation.pk, config.pk])
        cursor.execute(f"ANALYZE {keywords}")
        cursor.execute(f"ANALYZE {values}")
    evaluation_means_refresh(evaluation_id=evaluation.pk, rebuild=True)
    configs = metric_configs(evaluation.pk)
    with CaptureQueriesContext(connection) as captured:
        page = _table(evaluation, configs, sort=f"m{config.pk}", descending=descending,
                      page_number=40)
        _table(evaluation, configs, sort=f"m{config.pk}", descending=descending,
               after=page.page.last_id)
    walks = [query["sql"] for query in captured.captured_queries
             if query["sql"].startswith(f'SELECT "{values}"') and "ORDER BY" in query["sql"]]
    assert len(walks) >= 2, walks  # the numbered page, then the keyset page(s)
    for statement in walks:
        with connection.cursor() as cursor:
            cursor.execute(f"EXPLAIN (FORMAT JSON) {statement}")
            plan = cursor.fetchone()[0]
        plan = json.loads(plan) if isinstance(plan, str) else plan
        nodes = list(_plan_nodes(plan[0]["Plan"]))
        assert not [node for node in nodes if "Sort" in node["Node Type"]], statement
        walked = [(node["Index Name"], node["Scan Direction"]) for node in nodes
                  if node.get("Index Name", "").startswith("kmv_")]
        assert walked == [("kmv_metric_value_kw_idx",
                           "Backward" if descending else "Forward")], statement
