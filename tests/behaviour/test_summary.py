"""Online metrics on the pages: a set of keywords' figures over a source and window in a
fixed number of queries (behaviour.summary), the window picker (behaviour.panels), and the
panel on an evaluation's dashboard, a query set's page and a keyword's page."""

from datetime import date
from types import SimpleNamespace

import pytest
from django.db import connection
from django.http import QueryDict
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from behaviour.models import BehaviourCount
from behaviour.panels import online_panel
from behaviour.summary import online_summary
from evaluations.models import Keyword
from evaluations.query_sets import services as query_set_services
from tests.behaviour.test_imports import evaluation_with_keywords, import_ubi
from tests.evaluations.factories import EvaluationFactory, KeywordFactory, SearchModelFactory

pytestmark = pytest.mark.django_db


def texts(evaluation):
    return evaluation.keywords.values("normalized_text")


def test_the_summary_of_an_evaluations_keywords_by_hand(personas):
    # test_imports' log: q1, q2 "red shoes" (1 November), q3 "boots" (2 November). By
    # position: shown 3 times each (q1 A B C, q2 B A C, q3 D E and F at 3), clicked once
    # each (q1 A at 1 and C at 3, q2 A at 2). First clicks: q1 at 1, q2 at 2, q3 none.
    source = import_ubi(personas)
    evaluation = evaluation_with_keywords(personas)
    found = online_summary(source=source, keyword_texts=texts(evaluation), k=2)
    assert (found.keywords_with_behaviour, found.impressions, found.clicks) == (2, 9, 3)
    assert found.pooled.ctr_by_position == [1 / 3, 1 / 3, 1 / 3]
    assert found.ctr_by_position(depth=4) == [(1, 1 / 3), (2, 1 / 3), (3, 1 / 3), (4, None)]
    assert found.pooled.ctr_at_k == 2 / 6
    assert found.pooled.searches == 3
    assert found.pooled.first_click_rr == (1 + 1 / 2) / 3
    assert found.pooled.abandonment == 1 / 3
    assert found.pooled.mean_dwell_seconds == (50 + 10) / 2  # q2's click has no dwell
    # Each keyword once: red shoes 2 of 4 in the top 2, boots 0 of 2.
    assert found.mean_ctr_at_k == (2 / 4 + 0 / 2) / 2


def test_a_window_keeps_its_days_and_other_keywords_count_for_nothing(personas):
    source = import_ubi(personas)
    evaluation = evaluation_with_keywords(personas)
    found = online_summary(source=source, keyword_texts=texts(evaluation), k=2,
                           start_on=date(2026, 11, 1), end_on=date(2026, 11, 1))
    assert (found.keywords_with_behaviour, found.impressions, found.clicks) == (1, 6, 3)
    assert (found.pooled.searches, found.pooled.first_click_rr) == (2, (1 + 1 / 2) / 2)
    nothing = online_summary(source=source, keyword_texts=Keyword.objects.filter(
        text="sandals").values("normalized_text"))
    assert (nothing.pooled, nothing.keywords_with_behaviour, nothing.mean_ctr_at_k) == (
        None, 0, None)


def test_the_summary_costs_one_query_or_two_for_a_window_however_many_keywords(
        personas, django_assert_num_queries):
    source = import_ubi(personas)
    evaluation = EvaluationFactory(model=SearchModelFactory(team=personas.team))
    Keyword.objects.bulk_create([Keyword(evaluation=evaluation, text=f"kw {n}",
                                         normalized_text=f"kw {n}", position=n + 3)
                                 for n in range(1200)])
    KeywordFactory(evaluation=evaluation, text="red shoes", position=1)
    KeywordFactory(evaluation=evaluation, text="boots", position=2)
    # On PostgreSQL each read has its planner settings set first, in a statement of its
    # own (behaviour.rollup.planner_settings).
    settings = connection.vendor == "postgresql"
    with django_assert_num_queries(1 + settings):
        found = online_summary(source=source, keyword_texts=texts(evaluation), k=2)
    assert found.impressions == 9
    # A window: the log's first and last day, then its figures.
    with django_assert_num_queries(2 + settings):
        found = online_summary(source=source, keyword_texts=texts(evaluation), k=2,
                               start_on=date(2026, 11, 1), end_on=date(2026, 11, 1))
    assert found.impressions == 6
    # A window over every day of the log: its whole rows, in one statement after the days.
    with django_assert_num_queries(2 + settings):
        found = online_summary(source=source, keyword_texts=texts(evaluation), k=2,
                               start_on=date(2026, 11, 1), end_on=date(2026, 11, 2))
    assert found.impressions == 9


def test_the_window_picker_reads_presets_from_the_sources_last_day(personas):
    source = import_ubi(personas)
    evaluation = evaluation_with_keywords(personas)
    # The log ends on 2 November: its last 7 days are 27 October to 2 November.
    panel = online_panel(query=_query("online_window=7&online_k=3"),
                         team_id=personas.team.pk, keyword_texts=texts(evaluation))
    assert (panel.source, panel.start_on, panel.end_on, panel.k) == (
        source, date(2026, 10, 27), date(2026, 11, 2), 3)
    chosen = online_panel(query=_query("online_window=days&online_from=2026-11-02"
                                       "&online_to=2026-11-02&segment=head"),
                          team_id=personas.team.pk, keyword_texts=texts(evaluation))
    assert (chosen.summary.impressions, chosen.kept_params) == (3, [("segment", "head")])
    refused = online_panel(query=_query("online_window=days&online_from=2026-11-02"
                                        "&online_to=2026-11-01&online_k=7"),
                           team_id=personas.team.pk, keyword_texts=texts(evaluation))
    assert refused.errors == ["k: Select a valid choice. 7 is not one of the available "
                              "choices.", "to: The window ends before it starts."]
    assert (refused.window, refused.k, refused.summary.impressions) == ("all", 10, 9)
    # Another team's source is never read.
    theirs = import_ubi(SimpleNamespace(team=personas.other_team, lead=personas.outsider))
    foreign = online_panel(query=_query(f"online_source={theirs.pk}"),
                           team_id=personas.team.pk, keyword_texts=texts(evaluation))
    assert foreign.source == source
    assert foreign.errors == [
        "source: not a behaviour source of this team; the newest is shown."]


def _query(text: str) -> QueryDict:
    return QueryDict(text)


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_the_dashboard_shows_what_users_did_beside_the_offline_metrics(personas):
    import_ubi(personas)
    evaluation = evaluation_with_keywords(personas)
    url = reverse("metrics:evaluation_dashboard", args=[evaluation.pk])
    page = signed_in(personas.grader).get(url, {"online_k": 1}).content.decode()
    assert 'data-testid="online-panel"' in page
    # CTR@1: 1 click of 3 impressions at position 1; RR 0.5; abandonment 1/3; dwell 30 s.
    for shown in ('data-testid="online-ctr">0.333<', 'data-testid="online-rr">0.500<',
                  'data-testid="online-abandonment">0.333<',
                  'data-testid="online-dwell">30.0 s<'):
        assert shown in page
    assert "2 keywords with behaviour, 3 searches, 9 impressions, 3 clicks." in page


def test_a_team_without_behaviour_is_told_how_to_bring_it(personas):
    evaluation = evaluation_with_keywords(personas)
    page = signed_in(personas.grader).get(
        reverse("metrics:evaluation_dashboard", args=[evaluation.pk])).content.decode()
    assert 'data-testid="online-empty"' in page and "import_behaviour" in page


def test_a_query_sets_and_a_keywords_pages_show_their_own_keywords(personas):
    import_ubi(personas)
    query_set = query_set_services.query_set_create(
        team=personas.team, created_by=personas.lead, name="Shoes",
        keywords=["red shoes", "sandals"])
    page = signed_in(personas.grader).get(
        reverse("evaluations:query_set_detail", args=[query_set.pk])).content.decode()
    assert "1 keyword with behaviour, 2 searches, 6 impressions, 3 clicks." in page
    boots = evaluation_with_keywords(personas).keywords.get(text="boots")
    page = signed_in(personas.grader).get(
        reverse("evaluations:keyword_detail", args=[boots.pk])).content.decode()
    assert "1 keyword with behaviour, 1 search, 3 impressions, 0 clicks." in page
    assert 'data-testid="online-abandonment">1.000<' in page
    assert BehaviourCount.objects.count() == 8


# --- the API and the dashboard's export ---------------------------------------------------

def api_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_the_api_answers_the_panels_figures_over_a_window(personas):
    source = import_ubi(personas)
    evaluation = evaluation_with_keywords(personas)
    url = f"/api/v1/behaviour-sources/{source.pk}/evaluations/{evaluation.pk}/online/"
    answer = api_for(personas.grader).get(url, {"k": 2})
    assert answer.status_code == 200
    assert answer.json() == {
        "source": source.pk, "evaluation": evaluation.pk, "start_on": None, "end_on": None,
        "k": 2, "segment": "", "keywords_with_behaviour": 2, "searches": 3, "impressions": 9,
        "clicks": 3,
        "ctr_at_k": 2 / 6, "mean_ctr_at_k": 0.25, "ctr_by_position": [1 / 3] * 3,
        "first_click_rr": 0.5, "abandonment": 1 / 3, "mean_dwell_seconds": 30.0}
    day = api_for(personas.grader).get(url, {"start_on": "2026-11-02",
                                             "end_on": "2026-11-02"}).json()
    assert (day["searches"], day["impressions"], day["clicks"], day["abandonment"]) == (
        1, 3, 0, 1.0)
    assert api_for(personas.grader).get(url, {"start_on": "2026-11-03",
                                              "end_on": "2026-11-02"}).json() == {
        "end_on": ["The window ends before it starts."]}
    assert api_for(personas.outsider).get(url).status_code == 404
    # An evaluation of another team, even one the caller sees, is not this source's.
    theirs = EvaluationFactory(model=SearchModelFactory(team=personas.other_team))
    personas.other_team.memberships.create(user=personas.grader, role="grader")
    assert api_for(personas.grader).get(
        f"/api/v1/behaviour-sources/{source.pk}/evaluations/{theirs.pk}/online/"
    ).status_code == 404


def test_the_export_has_a_line_per_keyword_in_the_evaluations_order(personas):
    source = import_ubi(personas)
    evaluation = evaluation_with_keywords(personas)
    answer = api_for(personas.grader).get(
        f"/api/v1/behaviour-sources/{source.pk}/evaluations/{evaluation.pk}/online.csv",
        {"k": 2})
    assert answer.status_code == 200
    assert answer["Content-Type"].startswith("text/csv")
    assert answer.content.decode().splitlines() == [
        "keyword,impressions,clicks,ctr_at_k,first_click_rr,abandonment,"
        "mean_dwell_seconds,searches",
        "Red shoes,6,3,0.5,0.75,0.0,30.0,2",
        "boots,3,0,0.0,0.0,1.0,,1",
        "sandals,0,0,,,,,0"]


def test_the_dashboard_links_its_export_with_the_window(personas):
    source = import_ubi(personas)
    evaluation = evaluation_with_keywords(personas)
    page = signed_in(personas.grader).get(
        reverse("metrics:evaluation_dashboard", args=[evaluation.pk]),
        {"online_window": "days", "online_from": "2026-11-01", "online_to": "2026-11-02",
         "online_k": 3}).content.decode()
    assert (f'/api/v1/behaviour-sources/{source.pk}/evaluations/{evaluation.pk}/online.csv'
            '?start_on=2026-11-01&amp;end_on=2026-11-02&amp;k=3') in page


# --- a segment's keywords -----------------------------------------------------------------

def test_the_panel_counts_only_the_segments_keywords(personas):
    source = import_ubi(personas)
    evaluation = evaluation_with_keywords(personas)  # Red shoes: head; boots: tail
    panel = online_panel(query=_query("online_k=1"), team_id=personas.team.pk,
                         keyword_texts=texts(evaluation), segment="head")
    found = panel.summary
    # Red shoes alone: q1 (A B C, A clicked at 1 dwell 50, C at 3 dwell 10), q2 (B A C,
    # A clicked at 2): 6 impressions, 3 clicks; at 1: 1 click of 2; first clicks at 1
    # and 2 of 2 searches. (Every keyword: CTR@1 1 of 3, boots' D shown at 1 too.)
    assert (found.keywords_with_behaviour, found.impressions, found.clicks) == (1, 6, 3)
    assert (found.pooled.ctr_at_k, found.mean_ctr_at_k) == (1 / 2, 1 / 2)
    assert (found.pooled.first_click_rr, found.pooled.abandonment) == ((1 + 1 / 2) / 2, 0.0)
    assert found.pooled.mean_dwell_seconds == (50 + 10) / 2
    assert panel.export_query == "k=1&segment=head"
    assert online_panel(query=_query(""), team_id=personas.team.pk,
                        keyword_texts=texts(evaluation), segment="").summary.impressions == 9
    assert source == panel.source


def test_the_dashboards_segment_choice_reaches_the_panel(personas):
    import_ubi(personas)
    evaluation = evaluation_with_keywords(personas)
    page = signed_in(personas.grader).get(
        reverse("metrics:evaluation_dashboard", args=[evaluation.pk]),
        {"segment": "tail"}).content.decode()
    # boots alone: q3 showed D, E and F at 3, nothing clicked.
    assert ("Keywords tagged tail: November log, its whole log (2026-11-01 to 2026-11-02): "
            "1 keyword with behaviour, 1 search, 3 impressions, 0 clicks.") in page
    assert 'data-testid="online-abandonment">1.000<' in page
    assert f"{evaluation.pk}/online.csv?k=10&amp;segment=tail" in page
    # A tag no keyword carries is refused by the dashboard: the panel shows every keyword.
    page = signed_in(personas.grader).get(
        reverse("metrics:evaluation_dashboard", args=[evaluation.pk]),
        {"segment": "nothing"}).content.decode()
    assert "2 keywords with behaviour, 3 searches, 9 impressions, 3 clicks." in page


def test_the_api_answers_a_segments_figures_and_refuses_a_tag_none_carries(personas):
    source = import_ubi(personas)
    evaluation = evaluation_with_keywords(personas)
    url = f"/api/v1/behaviour-sources/{source.pk}/evaluations/{evaluation.pk}/online/"
    answer = api_for(personas.grader).get(url, {"k": 2, "segment": "head"}).json()
    assert answer == {
        "source": source.pk, "evaluation": evaluation.pk, "start_on": None, "end_on": None,
        "k": 2, "segment": "head", "keywords_with_behaviour": 1, "searches": 2,
        "impressions": 6, "clicks": 3, "ctr_at_k": 0.5, "mean_ctr_at_k": 0.5,
        "ctr_by_position": [1 / 2, 1 / 2, 1 / 2], "first_click_rr": 0.75,
        "abandonment": 0.0, "mean_dwell_seconds": 30.0}
    refused = api_for(personas.grader).get(url, {"segment": "summer"})
    assert (refused.status_code, refused.json()) == (400, {"segment": [
        "No keyword of this evaluation carries the tag “summer”."]})
    lines = api_for(personas.grader).get(
        f"/api/v1/behaviour-sources/{source.pk}/evaluations/{evaluation.pk}/online.csv",
        {"k": 2, "segment": "tail"}).content.decode().splitlines()
    assert lines[1:] == ["boots,3,0,0.0,0.0,1.0,,1"]
