"""A judge's call log: the page's filters and pages, one call in full, the JSONL export
(page and API), token totals and cost; who may read them."""

import json
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from judges.models import JudgeCall
from tests.judges.run_builders import API_KEY, call_of, judge_of, priced, run_of
from tests.judgments.builders import evaluation_with_slots

pytestmark = pytest.mark.django_db


@pytest.fixture
def judge(personas):
    return judge_of(personas.team, name="Picky")


@pytest.fixture
def logged(judge, personas):
    """Two runs' calls, a failed one, a test call, and one from last week."""
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=2)
    first, second = run_of(judge, evaluation), run_of(judge, evaluation)
    now = timezone.now()
    return {
        "first": first, "second": second,
        "ok": call_of(judge, run=first, started_at=now - timedelta(minutes=3)),
        "failed": call_of(judge, run=first, status="http_error",
                          started_at=now - timedelta(minutes=2), tokens_in=None,
                          tokens_out=None),
        "second_ok": call_of(judge, run=second, started_at=now - timedelta(minutes=1)),
        "test": call_of(judge, is_test=True, started_at=now),
        "old": call_of(judge, run=first, started_at=now - timedelta(days=8)),
    }


def _listed(response) -> list[int]:
    return [call.pk for call in response.context["page"].object_list]


def _page(client, user, judge, **query):
    client.force_login(user)
    return client.get(reverse("judges:judge_calls", args=[judge.pk]), query)


def test_the_log_lists_every_call_newest_first_with_its_figures(client, personas, judge,
                                                                 logged):
    response = _page(client, personas.lead, judge)
    assert response.status_code == 200
    assert _listed(response) == [logged[name].pk for name in
                                 ("test", "second_ok", "failed", "ok", "old")]
    html = response.content.decode()
    assert reverse("judges:call_detail", args=[logged["ok"].pk]) in html
    assert "http_error" in html and "120 ms" in html


@pytest.mark.parametrize(("query", "expected"), [
    ({"status": "http_error"}, ["failed"]),
    ({"is_test": "true"}, ["test"]),
    ({"is_test": "false", "status": "ok"}, ["second_ok", "ok", "old"]),
])
def test_the_log_filters_by_status_and_test_calls(client, personas, judge, logged, query,
                                                  expected):
    response = _page(client, personas.lead, judge, **query)
    assert _listed(response) == [logged[name].pk for name in expected]


def test_the_log_filters_by_run_and_dates(client, personas, judge, logged):
    response = _page(client, personas.lead, judge, run=logged["second"].pk)
    assert _listed(response) == [logged["second_ok"].pk]
    today = timezone.localdate()
    response = _page(client, personas.lead, judge, run=logged["first"].pk,
                     started_from=(today - timedelta(days=1)).isoformat())
    assert _listed(response) == [logged["failed"].pk, logged["ok"].pk]
    response = _page(client, personas.lead, judge,
                     started_to=(today - timedelta(days=2)).isoformat())
    assert _listed(response) == [logged["old"].pk]


def test_a_run_of_another_judge_is_a_filter_error_not_a_leak(client, personas, judge, logged):
    other_judge = judge_of(personas.team, name="Other")
    other_run = run_of(other_judge, logged["first"].evaluation)
    response = _page(client, personas.lead, judge, run=other_run.pk)
    assert response.status_code == 400
    assert response.context["form"].errors["run"]
    assert _listed(response) == []


def test_the_log_pages_by_fifty_and_keeps_its_filters(client, personas, judge):
    start = timezone.now()
    for n in range(53):
        call_of(judge, started_at=start - timedelta(seconds=n))
    response = _page(client, personas.lead, judge, status="ok")
    assert len(_listed(response)) == 50
    assert 'href="?page=2&amp;status=ok' in response.content.decode()
    second = _page(client, personas.lead, judge, status="ok", page=2)
    assert len(_listed(second)) == 3
    assert set(_listed(response)).isdisjoint(_listed(second))


def test_the_log_shows_token_totals_and_cost_at_the_judges_prices(client, personas, judge,
                                                                   logged):
    response = _page(client, personas.lead, judge)
    totals = response.context["totals"]
    # Every call counts, whatever the filters: 4 calls of 100/20 tokens, one without usage.
    assert (totals.call_count, totals.tokens_in, totals.tokens_out) == (5, 400, 80)
    assert totals.cost is None
    assert "no prices set" in response.content.decode()
    priced(judge, price_in="2.50", price_out="10")
    response = _page(client, personas.lead, judge, status="ok")
    # 400 * 2.50 / 1M + 80 * 10 / 1M = 0.001 + 0.0008
    assert str(response.context["totals"].cost) == "0.0018"
    assert "0.0018" in response.content.decode()


def test_the_call_page_shows_the_redacted_request_pretty_and_the_answer(client, personas,
                                                                        judge, logged):
    client.force_login(personas.lead)
    response = client.get(reverse("judges:call_detail", args=[logged["ok"].pk]))
    assert response.status_code == 200
    html = response.content.decode()
    assert "Bearer [redacted]" in html
    assert '\n  &quot;method&quot;: &quot;POST&quot;' in html  # indented JSON
    assert "&quot;grade&quot;: 1" in html
    failed = client.get(reverse("judges:call_detail", args=[logged["failed"].pk]))
    assert "HTTP 500: server error" in failed.content.decode()


def _jsonl(response) -> list[dict]:
    text = b"".join(response.streaming_content).decode()
    assert text.endswith("\n")
    return [json.loads(line) for line in text.splitlines()]


FIELDS = {"id", "run", "status", "http_status", "started_at", "latency_ms", "tokens_in",
          "tokens_out", "pair_count", "request", "answer", "error", "is_test"}


def test_the_export_streams_one_json_object_per_filtered_call(client, personas, judge,
                                                              logged):
    client.force_login(personas.lead)
    response = client.get(reverse("judges:judge_calls_export", args=[judge.pk]),
                          {"run": logged["first"].pk})
    assert response.status_code == 200
    assert response["Content-Type"] == "application/x-ndjson"
    assert "attachment" in response["Content-Disposition"]
    lines = _jsonl(response)
    assert [line["id"] for line in lines] == [logged[name].pk for name in ("failed", "ok", "old")]
    assert all(set(line) == FIELDS for line in lines)
    ok = next(line for line in lines if line["id"] == logged["ok"].pk)
    assert ok["run"] == logged["first"].pk and ok["status"] == "ok"
    assert ok["started_at"] == logged["ok"].started_at.isoformat()
    assert ok["request"]["headers"]["authorization"] == "Bearer [redacted]"


def test_the_export_page_link_carries_the_filters(client, personas, judge, logged):
    response = _page(client, personas.lead, judge, status="ok", page=1)
    export = reverse("judges:judge_calls_export", args=[judge.pk])
    assert f'href="{export}?status=ok"' in response.content.decode()


def test_the_export_refuses_a_bad_filter_naming_it(client, personas, judge):
    client.force_login(personas.lead)
    response = client.get(reverse("judges:judge_calls_export", args=[judge.pk]),
                          {"started_from": "yesterday"})
    assert response.status_code == 400
    assert "started_from" in response.json()


def test_no_line_of_the_export_holds_the_api_key(client, personas, judge, logged):
    client.force_login(personas.lead)
    text = b"".join(client.get(reverse("judges:judge_calls_export", args=[judge.pk]))
                    .streaming_content).decode()
    assert API_KEY not in text and len(text.splitlines()) == 5


# --- the API -----------------------------------------------------------------------------


def _api(user) -> APIClient:
    api = APIClient()
    api.force_authenticate(user)
    return api


def test_the_api_pages_calls_with_the_same_filters_and_fields(personas, judge, logged):
    response = _api(personas.lead).get(f"/api/v1/judges/{judge.pk}/calls/",
                                       {"is_test": "false", "status": "ok"})
    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 3
    assert [row["id"] for row in body["results"]] == [
        logged[name].pk for name in ("second_ok", "ok", "old")]
    assert set(body["results"][0]) == FIELDS


def test_the_api_pages_by_fifty(personas, judge):
    for _ in range(51):
        call_of(judge)
    body = _api(personas.lead).get(f"/api/v1/judges/{judge.pk}/calls/").json()
    assert (body["count"], len(body["results"])) == (51, 50)
    assert body["next"]


@pytest.mark.parametrize(("query", "field"), [
    ({"run": "abc"}, "run"), ({"status": "exploded"}, "status"),
    ({"started_to": "31-12-2024"}, "started_to"), ({"is_test": "perhaps"}, "is_test"),
])
def test_the_api_names_the_bad_filter(personas, judge, query, field):
    response = _api(personas.lead).get(f"/api/v1/judges/{judge.pk}/calls/", query)
    assert response.status_code == 400
    assert field in response.json()


def test_the_api_jsonl_matches_the_list(personas, judge, logged):
    api = _api(personas.lead)
    listed = api.get(f"/api/v1/judges/{judge.pk}/calls/").json()["results"]
    response = api.get(f"/api/v1/judges/{judge.pk}/calls.jsonl")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/x-ndjson"
    assert _jsonl(response) == listed
    asked = api.get(f"/api/v1/judges/{judge.pk}/calls.jsonl",
                    HTTP_ACCEPT="application/x-ndjson")
    assert asked.status_code == 200 and len(_jsonl(asked)) == len(listed)


# --- access ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["judges:judge_calls", "judges:judge_calls_export"])
def test_graders_get_403_and_other_teams_404_on_the_log(client, personas, judge, name):
    url = reverse(name, args=[judge.pk])
    client.force_login(personas.grader)
    assert client.get(url).status_code == 403
    client.force_login(personas.outsider)
    assert client.get(url).status_code == 404


def test_graders_get_403_and_other_teams_404_on_a_call(client, personas, judge, logged):
    url = reverse("judges:call_detail", args=[logged["ok"].pk])
    client.force_login(personas.grader)
    assert client.get(url).status_code == 403
    client.force_login(personas.outsider)
    assert client.get(url).status_code == 404
    assert _api(personas.outsider).get(
        f"/api/v1/judges/{judge.pk}/calls/").status_code == 404
    assert _api(personas.grader).get(
        f"/api/v1/judges/{judge.pk}/calls.jsonl").status_code == 403


def test_the_log_reads_in_a_constant_number_of_queries(client, personas, judge, logged,
                                                       django_assert_max_num_queries):
    for _ in range(20):
        call_of(judge, run=logged["second"])
    client.force_login(personas.lead)
    url = reverse("judges:judge_calls", args=[judge.pk])
    with django_assert_max_num_queries(12):
        assert client.get(url).status_code == 200
    assert JudgeCall.objects.filter(judge=judge).count() == 25


def test_an_export_error_is_json_whatever_the_client_accepts(personas, judge):
    response = _api(personas.outsider).get(f"/api/v1/judges/{judge.pk}/calls.jsonl",
                                           HTTP_ACCEPT="application/x-ndjson")
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"detail": "No such judge."}
