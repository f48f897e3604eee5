"""Do offline metrics predict behaviour? One metric's stored values per keyword against a
source's CTR@k, on the page and in the API; hand-computed figures."""

import pytest
from rest_framework.test import APIClient

from behaviour import services
from behaviour.predicting import offline_vs_behaviour
from evaluations.models import EvaluationMetric, Keyword
from metrics.models import KeywordMetricValue
from tests.metrics.builders import build_evaluation

pytestmark = pytest.mark.django_db

# Offline nDCG@10: a .1, b .2, c .3, d .4, e none. CTR@10: a 1/10, b 3/10, c 2/10, d 4/10,
# e 5/10. Keywords with both: a b c d, offline ranks 1 2 3 4, online 1 3 2 4:
# rho = 1 - 6·2 / (4·15) = 0.8, τ = (5 - 1) / 6; disagreement (ranks over 3) 0, ⅓, ⅓, 0.
OFFLINE = {"a": 0.1, "b": 0.2, "c": 0.3, "d": 0.4, "e": None}
CLICKS = {"a": 1, "b": 3, "c": 2, "d": 4, "e": 5}


@pytest.fixture
def case(personas):
    evaluation = build_evaluation(team=personas.team, keywords={k: ["x"] for k in OFFLINE},
                                  metrics=[("ndcg", 10, {})])
    metric = EvaluationMetric.objects.get(evaluation=evaluation)
    for text, value in OFFLINE.items():
        KeywordMetricValue.objects.create(
            keyword=Keyword.objects.get(evaluation=evaluation, text=text), metric=metric,
            value=value)
    lines = ["keyword,doc_id,position,impressions,clicks"] + [
        f"{text},x,1,10,{clicks}" for text, clicks in CLICKS.items()]
    source = services.behaviour_source_import_csv(team=personas.team, user=None,
                                                  name="Counts", lines=lines)
    return evaluation, metric, source


def test_the_figures_of_one_metric_against_ctr(case):
    evaluation, metric, source = case
    found = offline_vs_behaviour(evaluation=evaluation, source=source, metric=metric,
                                 resamples=0)
    assert found.correlation.keyword_count == 4
    assert found.correlation.spearman == pytest.approx(0.8)
    assert found.correlation.kendall == pytest.approx(4 / 6)
    assert [(p.text, p.offline, p.online) for p in found.points] == [
        ("a", 0.1, 0.1), ("b", 0.2, 0.3), ("c", 0.3, 0.2), ("d", 0.4, 0.4), ("e", None, 0.5)]
    assert [(p.text, p.disagreement) for p in found.disagreeing] == [
        ("b", pytest.approx(1 / 3)), ("c", pytest.approx(1 / 3)), ("a", 0.0), ("d", 0.0)]


def test_a_csv_source_has_no_first_click_rr_to_correlate(case):
    evaluation, metric, source = case
    found = offline_vs_behaviour(evaluation=evaluation, source=source, metric=metric,
                                 online="first_click_rr")
    assert found.correlation.keyword_count == 0 and found.correlation.spearman is None


def test_the_page_shows_the_figures_the_scatter_and_the_disagreeing(case, client, personas):
    evaluation, _metric, _source = case
    client.force_login(personas.grader)
    page = client.get(f"/dashboard/evaluations/{evaluation.pk}/behaviour-fit/")
    assert page.status_code == 200
    html = page.content.decode()
    assert '<dd data-testid="spearman">0.800' in html
    assert '<dd data-testid="kendall">0.667' in html
    # Four distinct values: only the resamples that drew one keyword four times (4 in 256)
    # have no correlation, far fewer than one in twenty.
    assert 'data-testid="mostly-tied"' not in html
    assert html.count('class="point"') == 4 and html.count('class="marker"') == 4
    table = html.split('data-testid="disagreeing"')[1]
    assert table.index(">b</a>") < table.index(">c</a>") < table.index(">a</a>")
    dashboard = client.get(f"/dashboard/evaluations/{evaluation.pk}/")
    assert f'/dashboard/evaluations/{evaluation.pk}/behaviour-fit/"' in dashboard.content.decode()


def test_the_page_refuses_a_backwards_window_and_hides_other_teams(case, client, personas):
    evaluation, _metric, _source = case
    client.force_login(personas.grader)
    page = client.get(f"/dashboard/evaluations/{evaluation.pk}/behaviour-fit/",
                      {"start_on": "2026-11-02", "end_on": "2026-11-01"})
    assert page.status_code == 400 and "The window ends before it starts." in \
        page.content.decode()
    client.force_login(personas.outsider)
    assert client.get(f"/dashboard/evaluations/{evaluation.pk}/behaviour-fit/"
                      ).status_code == 404


def test_the_api_answers_the_same_figures_deterministically(case, personas):
    evaluation, metric, source = case
    api = APIClient()
    api.force_authenticate(personas.grader)
    url = f"/api/v1/evaluations/{evaluation.pk}/behaviour-fit/"
    first = api.get(url, {"metric": metric.pk, "source": source.pk})
    assert first.status_code == 200
    body = first.json()
    assert (body["metric_label"], body["online_label"]) == ("nDCG@10", "CTR@10")
    assert body["correlation"]["spearman"] == pytest.approx(0.8)
    assert body["correlation"]["resamples"] == 1000 and body["correlation"]["seed"] == 0
    assert [row["text"] for row in body["disagreeing"]] == ["b", "c", "a", "d"]
    assert api.get(url).json() == body  # the defaults: the first metric, the newest source
    other = services.behaviour_source_import_csv(team=personas.other_team, user=None,
                                                 name="Theirs", lines=["keyword,doc_id,"
                                                 "position,impressions,clicks", "a,x,1,1,1"])
    assert api.get(url, {"source": other.pk}).status_code == 404
    assert api.get(url, {"online": "dwell"}).status_code == 400


def test_the_page_s_queries_do_not_grow_with_the_keywords(case, client, personas,
                                                          django_assert_num_queries):
    evaluation, _metric, _source = case
    client.force_login(personas.grader)
    url = f"/dashboard/evaluations/{evaluation.pk}/behaviour-fit/"
    client.get(url)  # warm: the session and the user
    # session, user, evaluation, membership, sources, metrics, keywords, the source's
    # counts and searches, the stored values, the page's team menu
    with django_assert_num_queries(QUERIES):
        client.get(url)
    for position, text in enumerate(("f", "g", "h"), start=10):
        Keyword.objects.create(evaluation=evaluation, position=position, text=text,
                               normalized_text=text)
    with django_assert_num_queries(QUERIES):
        client.get(url)


QUERIES = 11


def test_the_page_warns_when_most_keywords_tie_on_the_metric(case, client, personas):
    # a, b, c at 0.5 and d at 0.4: a resample has a correlation only if it drew d and
    # another, 1 - (3/4)^4 - 1/256 = 0.680 of them, under the 0.95 the page asks for.
    evaluation, metric, _source = case
    KeywordMetricValue.objects.filter(metric=metric, keyword__text__in=["a", "b", "c"]).update(
        value=0.5)
    client.force_login(personas.grader)
    html = client.get(f"/dashboard/evaluations/{evaluation.pk}/behaviour-fit/").content.decode()
    assert 'data-testid="mostly-tied"' in html
