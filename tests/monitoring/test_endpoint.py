"""/metrics: who may read it, and that what it reports follows what happened."""

import ipaddress
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.test import Client, override_settings

from metrics.models import KeywordRecomputeMark
from metrics.selectors import oldest_dirty_since
from monitoring.collectors import recompute_lag_seconds
from tests.judgments.builders import evaluation_with_slots
from tests.monitoring.scrape import names, sample
from tests.searchtweak.factories import TeamFactory

pytestmark = pytest.mark.django_db

TOKEN = "scrape-me-7f3a"
ON = {"METRICS_TOKEN": TOKEN, "METRICS_ALLOW": []}


def scrape(client: Client) -> str:
    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=")
    return response.content.decode()


@override_settings(**ON)
def test_three_requests_to_a_view_add_exactly_three_to_its_count(client):
    before = scrape(client)
    for _ in range(3):
        assert client.get("/help/").status_code == 200
    after = scrape(client)
    name = "searchtweak_http_requests_total"
    assert sample(after, name, view="guide:index", status="2xx") - sample(
        before, name, view="guide:index", status="2xx") == 3
    # Three latencies observed, under the view's name, not its path.
    count = "searchtweak_http_request_duration_seconds_count"
    assert sample(after, count, view="guide:index") - sample(
        before, count, view="guide:index") == 3
    assert 'path="' not in after and "/help/" not in after


@override_settings(**ON)
def test_a_path_no_pattern_matches_is_counted_under_one_label(client):
    before = scrape(client)
    client.get("/no-such-page-1/")
    client.get("/no-such-page-2/")
    after = scrape(client)
    name = "searchtweak_http_requests_total"
    assert sample(after, name, view="<unresolved>", status="4xx") - sample(
        before, name, view="<unresolved>", status="4xx") == 2
    assert "no-such-page" not in after


def test_without_a_token_or_an_allow_list_the_page_does_not_exist(client):
    assert client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").status_code == 404
    assert client.get("/metrics", REMOTE_ADDR="127.0.0.1").status_code == 404


@override_settings(**ON)
def test_a_missing_or_wrong_token_is_refused_with_a_challenge(client):
    for headers in ({}, {"HTTP_AUTHORIZATION": "Bearer wrong"},
                    {"HTTP_AUTHORIZATION": TOKEN}):  # the scheme is part of it
        response = client.get("/metrics", **headers)
        assert response.status_code == 401
        assert response["WWW-Authenticate"] == 'Bearer realm="metrics"'
        assert b"searchtweak_" not in response.content


@override_settings(METRICS_TOKEN="", METRICS_ALLOW=[ipaddress.ip_network("10.0.0.0/8")])
def test_the_allow_list_admits_its_networks_and_hides_the_page_from_others(client):
    assert client.get("/metrics", REMOTE_ADDR="10.1.2.3").status_code == 200
    assert client.get("/metrics", REMOTE_ADDR="::ffff:10.1.2.3").status_code == 200
    assert client.get("/metrics", REMOTE_ADDR="192.168.1.5").status_code == 404
    assert client.get("/metrics", REMOTE_ADDR="192.168.1.5",
                      HTTP_AUTHORIZATION=f"Bearer {TOKEN}").status_code == 404


@override_settings(METRICS_TOKEN=TOKEN, METRICS_ALLOW=[ipaddress.ip_network("10.0.0.0/8")])
def test_with_both_either_the_token_or_the_network_is_enough(client):
    assert client.get("/metrics", REMOTE_ADDR="10.0.0.1").status_code == 200
    assert client.get("/metrics", REMOTE_ADDR="192.168.1.5",
                      HTTP_AUTHORIZATION=f"Bearer {TOKEN}").status_code == 200
    assert client.get("/metrics", REMOTE_ADDR="192.168.1.5").status_code == 401


@override_settings(**ON)
def test_it_answers_get_only(client):
    response = client.post("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 405


FROZEN = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


def _dirty(keyword, since: datetime | None) -> None:
    KeywordRecomputeMark.objects.update_or_create(
        keyword=keyword, defaults={"evaluation_id": keyword.evaluation_id, "version": 1,
                                   "dirty_since": since})


@override_settings(**ON)
def test_the_recompute_lag_is_the_age_of_the_oldest_dirty_keyword(client):
    evaluation = evaluation_with_slots(TeamFactory(), keywords=3, positions=1)
    first, second, third = evaluation.keywords.order_by("position")
    KeywordRecomputeMark.objects.all().delete()
    with time_machine.travel(FROZEN, tick=False):
        assert recompute_lag_seconds() == 0.0
        _dirty(first, FROZEN - timedelta(seconds=30))
        _dirty(second, FROZEN - timedelta(seconds=90, milliseconds=500))
        _dirty(third, None)  # recomputed: clean
        assert sample(scrape(client), "searchtweak_recompute_lag_seconds") == 90.5


def test_the_oldest_dirty_keyword_is_one_query(django_assert_num_queries):
    with django_assert_num_queries(1):
        oldest_dirty_since()


def test_without_a_redis_broker_no_queue_is_reported(client):
    # The SQLite default runs tasks eagerly: no queue, and nothing failing for it.
    with override_settings(CELERY_BROKER_URL="memory://localhost/", **ON):
        text = scrape(client)
    assert "searchtweak_celery_queue_length" not in names(text)
    assert "searchtweak_broker_up" not in names(text)
