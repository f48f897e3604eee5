"""Pages of the metrics app: happy paths, wrong methods, outsiders, bad input."""

import re

import pytest
from django.urls import reverse
from django.utils import timezone

from evaluations.models import Evaluation
from metrics.models import MetricHistoryPoint, TeamBaseline
from tests.metrics.test_dashboard_builders import bulk_evaluation, graders_of

pytestmark = pytest.mark.django_db


@pytest.fixture
def finished(personas):
    graders = graders_of(personas.team)
    first = bulk_evaluation(team=personas.team, graders=graders, keyword_count=12, seed=1,
                            name="Before")
    second = bulk_evaluation(team=personas.team, graders=graders, keyword_count=12, seed=2,
                             model=first.model, name="After")
    return first, second


def _pages(first, second) -> list[str]:
    return [
        reverse("metrics:evaluation_dashboard", args=[second.pk]),
        reverse("metrics:evaluation_dashboard_live", args=[second.pk]),
        reverse("metrics:evaluation_dashboard_table", args=[second.pk]),
        reverse("metrics:model_history", args=[second.model_id]),
        reverse("metrics:compare") + f"?a={first.pk}&b={second.pk}",
        reverse("metrics:compare_keyword") + f"?a={first.pk}&b={second.pk}&keyword=query+1",
    ]


def test_members_of_every_role_see_each_page(client, personas, finished):
    for user in (personas.owner, personas.lead, personas.grader):
        client.force_login(user)
        for url in [*_pages(*finished), reverse("metrics:team_dashboard"),
                    reverse("metrics:leaderboard")]:
            response = client.get(url)
            assert response.status_code == 200, (user, url)


def test_an_outsider_gets_404_on_every_evaluation_page(client, personas, finished):
    client.force_login(personas.outsider)
    for url in _pages(*finished):
        assert client.get(url).status_code == 404, url


def test_anonymous_visitors_are_sent_to_login(client, finished):
    for url in [*_pages(*finished), reverse("metrics:team_dashboard")]:
        response = client.get(url)
        assert response.status_code == 302 and "/login/" in response["Location"], url


def test_pages_refuse_post(client, personas, finished):
    client.force_login(personas.lead)
    for url in _pages(*finished):
        assert client.post(url).status_code == 405, url


def test_the_dashboard_shows_values_cards_and_charts(client, personas, finished):
    first, second = finished
    client.force_login(personas.lead)
    response = client.get(reverse("metrics:evaluation_dashboard", args=[second.pk]))
    html = response.content.decode()
    precision = second.metric_configs.with_stored_mean().get(code="precision")
    before = first.metric_configs.with_stored_mean().get(code="precision")
    assert f"{precision.value:.4f}" in html
    assert f"{precision.value - before.value:+.4f}" in html  # change vs previous
    # One history point each (one recompute): the value and nothing else, no one-point line.
    assert 'class="chart sparkline' not in html and 'class="sparkline-box"' not in html
    assert "(1 point)" not in html and "one point so far" not in html
    assert html.count(f">{precision.value:.4f}</p>") == 1
    assert 'class="chart histogram"' in html
    assert "Landis &amp; Koch" in html
    assert html.count("<details>") == 12


def test_bad_table_input_is_a_400_naming_the_field(client, personas, finished):
    client.force_login(personas.lead)
    url = reverse("metrics:evaluation_dashboard", args=[finished[1].pk])
    response = client.get(url, {"sort": "m999999", "page": "x"})
    assert response.status_code == 400
    assert "sort" in response.content.decode() and "page" in response.content.decode()


def test_a_lead_marks_and_clears_the_team_baseline(client, personas, finished):
    first, second = finished
    client.force_login(personas.lead)
    url = reverse("metrics:baseline", args=[first.pk])
    response = client.post(url, {"action": "set"})
    assert response.status_code == 302
    assert TeamBaseline.objects.get(team=personas.team).evaluation == first
    html = client.get(reverse("metrics:evaluation_dashboard", args=[second.pk])).content.decode()
    assert "vs baseline Before" in html
    client.post(url, {"action": "clear"})
    assert not TeamBaseline.objects.exists()


def test_baseline_refuses_graders_outsiders_bad_input_and_unfinished_evaluations(
        client, personas, finished):
    first, _ = finished
    url = reverse("metrics:baseline", args=[first.pk])
    client.force_login(personas.grader)
    assert client.post(url, {"action": "set"}).status_code == 403
    client.force_login(personas.outsider)
    assert client.post(url, {"action": "set"}).status_code == 404
    client.force_login(personas.lead)
    assert client.get(url).status_code == 405
    assert client.post(url, {"action": "explode"}).status_code == 400
    Evaluation.objects.filter(pk=first.pk).update(status=Evaluation.Status.ACTIVE)
    response = client.post(url, {"action": "set"}, follow=True)
    assert "Only a finished evaluation" in response.content.decode()
    assert not TeamBaseline.objects.exists()


def test_the_live_partial_reports_whether_to_keep_polling(client, personas, finished):
    first, _ = finished
    client.force_login(personas.lead)
    url = reverse("metrics:evaluation_dashboard_live", args=[first.pk])
    assert 'data-live-state="0"' in client.get(url).content.decode()
    Evaluation.objects.filter(pk=first.pk).update(status=Evaluation.Status.ACTIVE)
    assert 'data-live-state="1"' in client.get(url).content.decode()


def test_model_history_draws_one_line_chart_per_metric(client, personas, finished):
    first, _second = finished
    client.force_login(personas.lead)
    response = client.get(reverse("metrics:model_history", args=[first.model_id]))
    html = response.content.decode()
    assert html.count('class="chart line-chart"') == 3
    ap_first = first.metric_configs.with_stored_mean().get(code="ap").value
    assert f"Before: {ap_first:.4f}" in html  # the point's hover title
    client.force_login(personas.outsider)
    assert client.get(reverse("metrics:model_history", args=[first.model_id])
                      ).status_code == 404


def test_a_second_history_point_draws_the_sparkline(client, personas, finished):
    _, second = finished
    precision = second.metric_configs.with_stored_mean().get(code="precision")
    MetricHistoryPoint.objects.create(metric=precision, value=0.1, keyword_count=3,
                                      recorded_at=timezone.now())
    client.force_login(personas.lead)
    html = client.get(reverse("metrics:evaluation_dashboard", args=[second.pk])
                      ).content.decode()
    # The other two cards still have one point: no chart.
    assert html.count('class="chart sparkline"') == 1
    assert html.count('class="sparkline-box"') == 1


def _tick_texts(html: str, chart_class: str) -> list[str]:
    svg = html[html.index(f'class="chart {chart_class}"'):]
    svg = svg[:svg.index("</svg>")]
    return re.findall(r'<text class="tick"[^>]*>([^<]*)</text>', svg)


def test_the_team_activity_chart_counts_in_whole_numbers_from_zero(client, personas):
    client.force_login(personas.lead)
    html = client.get(reverse("metrics:team_dashboard")).content.decode()
    assert _tick_texts(html, "line-chart") == ["0", "1"]  # no grades: no negative axis
    graders = graders_of(personas.team)
    bulk_evaluation(team=personas.team, graders=graders, keyword_count=1, positions=1,
                    strategy=3, status=Evaluation.Status.ACTIVE)  # 3 grades today
    html = client.get(reverse("metrics:team_dashboard")).content.decode()
    assert _tick_texts(html, "line-chart") == ["0", "1", "2", "3"]


def test_model_history_of_a_0_to_1_metric_spans_0_to_1(client, personas, finished):
    first, _ = finished
    client.force_login(personas.lead)
    html = client.get(reverse("metrics:model_history", args=[first.model_id])).content.decode()
    assert _tick_texts(html, "line-chart") == ["0.00", "0.25", "0.50", "0.75", "1.00"]


def test_pages_write_each_metric_by_its_registry_label_or_its_code_at_k(client, personas):
    evaluation = bulk_evaluation(
        team=personas.team, graders=graders_of(personas.team), keyword_count=3, seed=3,
        metrics=[("ndcg", 10, {"gain": "exponential"}), ("precision", 5, {})])
    client.force_login(personas.lead)

    def page(name, app="metrics"):
        return client.get(reverse(f"{app}:{name}", args=[evaluation.pk])).content.decode()

    live = page("evaluation_dashboard_live")
    assert 'data-metric="ndcg@10"' in live and 'data-metric="precision@5"' in live
    assert ">nDCG@10 gain=exponential</h2>" in live and ">P@5</h2>" in live
    assert "Distribution of ndcg@10</h2>" in live
    table = page("evaluation_dashboard_table")
    assert ">ndcg@10</option>" in table and ">precision@5</option>" in table
    assert 'title="Sort by nDCG@10 gain=exponential"' in table
    detail = page("evaluation_detail", app="evaluations")
    assert '<td class="mono">ndcg@10 gain=exponential</td>' in detail
    assert '<td class="mono">precision@5</td>' in detail
    listing = client.get(reverse("evaluations:evaluation_list")).content.decode()
    assert re.search(r"ndcg@10=0\.\d{3} precision@5=[01]\.\d{3}", listing)
    team = client.get(reverse("metrics:team_dashboard")).content.decode()
    assert '<span class="mono">ndcg@10</span>' in team


def test_the_baseline_itself_is_not_offered_as_the_team_baseline(client, personas, finished):
    first, second = finished
    TeamBaseline.objects.create(team=personas.team, evaluation=first, set_by=personas.lead)
    client.force_login(personas.lead)
    for query in ("", "?against=previous"):
        url = reverse("metrics:evaluation_dashboard", args=[first.pk]) + query
        response = client.get(url)
        assert response.status_code == 200
        html = response.content.decode()
        assert 'data-testid="set-baseline"' not in html
        assert 'data-testid="is-baseline">the team\'s baseline<' in html
        assert 'data-testid="clear-baseline"' in html
    # Another finished evaluation is still offered.
    html = client.get(reverse("metrics:evaluation_dashboard", args=[second.pk])).content.decode()
    assert 'data-testid="set-baseline">Make team baseline<' in html
    assert 'data-testid="is-baseline"' not in html
