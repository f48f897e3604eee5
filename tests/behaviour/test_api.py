"""The read-only behaviour API: a team's sources and a source's online metrics per
keyword, for members only."""

import pytest
from rest_framework.test import APIClient

from behaviour import services
from tests.behaviour.test_imports import CSV, EVENTS, QUERIES

pytestmark = pytest.mark.django_db


def api_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def ubi_source(team, name="Log"):
    return services.behaviour_source_import_ubi(team=team, user=None, name=name,
                                                queries=QUERIES, events=EVENTS)


def test_members_list_their_teams_sources_only(personas):
    ours = ubi_source(personas.team)
    ubi_source(personas.other_team, name="Theirs")
    answer = api_for(personas.grader).get("/api/v1/behaviour-sources/")
    assert answer.status_code == 200
    assert [(row["id"], row["name"], row["kind"], row["search_count"], row["event_count"])
            for row in answer.json()["results"]] == [(ours.id, "Log", "ubi", 3, 7)]


def test_a_sources_keywords_carry_their_online_metrics(personas):
    source = ubi_source(personas.team)
    answer = api_for(personas.grader).get(f"/api/v1/behaviour-sources/{source.id}/keywords/",
                                          {"k": 2})
    assert answer.status_code == 200
    # As in test_imports: boots one search without a click; red shoes 3 clicks of 6
    # impressions, CTR@2 = 2/4, RR = 0.75, dwell (50 + 10) / 2.
    assert answer.json()["results"] == [
        {"keyword": "boots", "impressions": 3, "clicks": 0, "ctr_at_k": 0.0,
         "first_click_rr": 0.0, "abandonment": 1.0, "mean_dwell_seconds": None,
         "searches": 1},
        {"keyword": "red shoes", "impressions": 6, "clicks": 3, "ctr_at_k": 0.5,
         "first_click_rr": 0.75, "abandonment": 0.0, "mean_dwell_seconds": 30.0,
         "searches": 2}]


def test_a_csv_source_has_ctr_but_no_searches(personas):
    source = services.behaviour_source_import_csv(team=personas.team, user=None, name="C",
                                                  lines=CSV)
    rows = api_for(personas.grader).get(
        f"/api/v1/behaviour-sources/{source.id}/keywords/", {"k": 1}).json()["results"]
    assert rows == [{"keyword": "red shoes", "impressions": 230, "clicks": 48,
                     "ctr_at_k": 40 / 150, "first_click_rr": None, "abandonment": None,
                     "mean_dwell_seconds": 640 / 38, "searches": 0}]


def test_an_outsider_gets_404_and_a_bad_k_a_400(personas):
    source = ubi_source(personas.team)
    url = f"/api/v1/behaviour-sources/{source.id}/keywords/"
    assert api_for(personas.outsider).get(url).status_code == 404
    answer = api_for(personas.grader).get(url, {"k": 0})
    assert answer.status_code == 400 and "k" in answer.json()
    assert api_for(personas.grader).get(url, {"k": "ten"}).status_code == 400
    assert APIClient().get(url).status_code in (401, 403)


def test_the_list_refuses_other_methods(personas):
    # POST opens a collector source (tests/behaviour/test_collector.py); files come in by
    # manage.py import_behaviour.
    assert api_for(personas.lead).delete("/api/v1/behaviour-sources/").status_code == 405
    assert api_for(personas.lead).post("/api/v1/behaviour-sources/", {}).json() == {
        "name": ["This field is required."]}
