"""The collector: batches of UBI queries and events posted by a search front end with an
API token, folded into a collector source's per-day sums exactly as the importer sums the
same log, idempotent by query_id and event_id, whole or not at all, capped and rate
limited."""

import json
import urllib.error
import urllib.request
from datetime import UTC, datetime, timedelta

import pytest
from django.core.cache import cache
from django.test import override_settings
from rest_framework.test import APIClient

from behaviour import services
from behaviour.collector import collector_batch_store
from behaviour.models import (
    BehaviourCount,
    BehaviourSearches,
    BehaviourSource,
    CollectedEvent,
    CollectedQuery,
)
from searchtweak.models import Role
from searchtweak.services import api_token_create
from tests.behaviour.test_imports import event, query
from tests.searchtweak.factories import TeamFactory, member

pytestmark = pytest.mark.django_db

# The importer's log of test_imports, as objects: q1, q2 "red shoes" on 1 November, q3
# "boots" on 2 November; the collector is asked on 2 November at noon.
NOW = datetime(2026, 11, 2, 12, 0, tzinfo=UTC)
QUERIES = [query("q1", "Red Shoes", "2026-11-01T10:00:00Z", ["A", "B", "C"]),
           query("q2", "red shoes", "2026-11-01T11:00:00+01:00", ["B", "A", "C"]),
           query("q3", "boots", "2026-11-02T09:00:00", ["D", "E"])]
EVENTS = [dict(e, event_id=f"e{n}") for n, e in enumerate([
    event("click", "q1", "C", 3, dwell=10),
    event("click", "q1", "A", 1, dwell=30),
    event("click", "q1", "A", 1, dwell=50),
    event("add_to_cart", "q1", "A"),
    event("impression", "q2", "B", 1),
    event("click", "q2", "A", 2),
    event("impression", "q3", "F", 3)])]


@pytest.fixture(autouse=True)
def _fresh_throttle():
    # The throttle counts in Django's cache, keyed by user id; ids repeat across tests.
    cache.clear()
    yield
    cache.clear()


def sums(source: BehaviourSource) -> tuple[set, set]:
    counts = set(BehaviourCount.objects.filter(source=source).values_list(
        "keyword", "doc_id", "position", "day", "impressions", "clicks", "dwell_seconds_sum",
        "dwell_count"))
    searches = {(k, d, n, tuple(f)) for k, d, n, f in BehaviourSearches.objects.filter(
        source=source).values_list("keyword", "day", "search_count", "first_clicks")}
    return counts, searches


def collector(team, name="Site") -> BehaviourSource:
    return services.behaviour_source_create_collector(team=team, user=None, name=name)


def test_batches_sum_as_the_importer_sums_the_same_log(personas):
    imported = services.behaviour_source_import_ubi(
        team=personas.team, user=None, name="File",
        queries=[json.dumps(q) for q in QUERIES], events=[json.dumps(e) for e in EVENTS])
    source = collector(personas.team)
    # The log cut across batches: q1's click at 3 comes before its click at 1, and the
    # second click on A (longer dwell) in another batch than the first.
    first = collector_batch_store(source=source, queries=QUERIES[:2], events=EVENTS[:2],
                                  now=NOW)
    second = collector_batch_store(source=source, queries=QUERIES[2:], events=EVENTS[2:],
                                   now=NOW)
    assert (first.queries_added, first.events_added) == (2, 2)
    assert (second.queries_added, second.events_added) == (1, 5)
    assert sums(source) == sums(imported)
    counts, searches = sums(source)
    # Hand-computed: q1 showed A at 1, clicked twice (one click, the longer dwell 50 s);
    # q2 showed A at 2, clicked without a dwell. q1's first click moved from 3 to 1.
    assert ("red shoes", "A", 1, NOW.date() - timedelta(days=1), 1, 1, 50.0, 1) in counts
    assert ("red shoes", "C", 3, NOW.date() - timedelta(days=1), 2, 1, 10.0, 1) in counts
    assert ("red shoes", NOW.date() - timedelta(days=1), 2, (1, 1)) in searches
    assert ("boots", NOW.date(), 1, ()) in searches
    source.refresh_from_db()
    assert (source.search_count, source.event_count) == (3, 7)
    assert (source.window_start_at, source.window_end_at) == (
        datetime(2026, 11, 1, 10, tzinfo=UTC), datetime(2026, 11, 2, 9, tzinfo=UTC))


def test_a_resent_batch_adds_nothing(personas):
    source = collector(personas.team)
    collector_batch_store(source=source, queries=QUERIES, events=EVENTS, now=NOW)
    before = sums(source)
    again = collector_batch_store(source=source, queries=QUERIES, events=EVENTS, now=NOW)
    assert (again.queries_added, again.queries_repeated) == (0, 3)
    assert (again.events_added, again.events_repeated) == (0, 7)
    assert sums(source) == before
    source.refresh_from_db()
    assert (source.search_count, source.event_count) == (3, 7)


def test_an_event_resent_under_a_new_batch_counts_once_and_repeats_within_a_batch_too(
        personas):
    source = collector(personas.team)
    collector_batch_store(source=source, queries=QUERIES[:1], events=[], now=NOW)
    impression = dict(event("impression", "q1", "Z", 4), event_id="z")
    result = collector_batch_store(source=source, queries=[],
                                   events=[impression, impression], now=NOW)
    collector_batch_store(source=source, queries=[], events=[impression], now=NOW)
    assert (result.events_added, result.events_repeated) == (1, 1)
    assert BehaviourCount.objects.get(source=source, doc_id="Z").impressions == 1


def test_a_bad_item_is_named_and_nothing_is_stored(personas):
    source = collector(personas.team)
    bad_position = dict(event("click", "q1", "A", 0), event_id="e-bad")
    no_id = event("click", "q1", "A", 1)
    with pytest.raises(Exception) as refused:
        collector_batch_store(source=source, queries=QUERIES,
                              events=[EVENTS[0], bad_position, no_id, "text"], now=NOW)
    messages = refused.value.message_dict
    assert messages["events"] == [
        "events[1], event_attributes.position.ordinal: a whole number from 1 is needed",
        "events[2], event_id: a string or an integer is needed",
        "events[3], item: not a JSON object",
        "3 bad items in the batch; nothing was stored."]
    assert not BehaviourCount.objects.exists() and not CollectedQuery.objects.exists()
    assert not CollectedEvent.objects.exists()


def test_an_event_of_a_search_the_source_does_not_hold_refuses_the_batch(personas):
    source = collector(personas.team)
    orphan = dict(event("click", "q9", "A", 1), event_id="o1")
    with pytest.raises(Exception) as refused:
        collector_batch_store(source=source, queries=QUERIES, events=[EVENTS[0], orphan],
                              now=NOW)
    assert refused.value.message_dict["events"][0].startswith(
        "events[1] ('o1'), query_id: 'q9' is not among this source's searches")
    assert not BehaviourCount.objects.exists() and not CollectedQuery.objects.exists()


def test_searches_past_the_retention_are_refused_and_forgotten(personas):
    source = collector(personas.team)
    collector_batch_store(source=source, queries=QUERIES, events=EVENTS, now=NOW)
    later = NOW + timedelta(hours=48, minutes=1)  # q3 (9:00 on the 2nd) is 51 hours old
    with pytest.raises(Exception) as refused:
        collector_batch_store(source=source, queries=QUERIES[2:], events=[], now=later)
    assert refused.value.message_dict["queries"][0] == (
        "queries[0] ('q3'), timestamp: older than the collector keeps searches (48 hours): "
        "import it as a file instead")
    collector_batch_store(source=source, queries=[], events=[
        dict(event("purchase", "q1"), event_id="late")], now=later)
    # Every search and its events forgotten; the purchase (no sums) kept by its arrival.
    assert not CollectedQuery.objects.filter(source=source).exists()
    assert list(CollectedEvent.objects.values_list("event_id", flat=True)) == ["late"]
    assert sums(source)[1] == {("red shoes", NOW.date() - timedelta(days=1), 2, (1, 1)),
                               ("boots", NOW.date(), 1, ())}


def test_a_file_source_takes_no_batch(personas):
    source = services.behaviour_source_import_csv(
        team=personas.team, user=None, name="C",
        lines=["keyword,doc_id,position,impressions,clicks", "boots,d1,1,10,2"])
    with pytest.raises(Exception) as refused:
        collector_batch_store(source=source, queries=QUERIES, events=[], now=NOW)
    assert "source" in refused.value.message_dict


# --- the API, with real tokens ------------------------------------------------------------

def recent(queries: list[dict]) -> list[dict]:
    """The queries an hour ago, so the collector's clock takes them."""
    moment = (datetime.now(UTC) - timedelta(hours=1)).isoformat()
    return [dict(q, timestamp=moment) for q in queries]


def token_client(user) -> APIClient:
    _, key = api_token_create(user=user, name="front end")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def post(client: APIClient, source: BehaviourSource, body, **extra):
    return client.post(f"/api/v1/behaviour-sources/{source.pk}/events/",
                       data=json.dumps(body), content_type="application/json", **extra)


def test_a_lead_opens_a_collector_source_and_its_token_posts_batches(personas):
    client = token_client(personas.lead)
    made = client.post("/api/v1/behaviour-sources/", {"name": " Shop  front "},
                       format="json")
    assert made.status_code == 201
    assert (made.json()["name"], made.json()["kind"]) == ("Shop front", "collector")
    source = BehaviourSource.objects.get(pk=made.json()["id"])
    answer = post(client, source, {"queries": recent(QUERIES), "events": EVENTS})
    assert answer.status_code == 200
    assert answer.json()["queries"] == {"added": 3, "repeated": 0}
    assert answer.json()["events"] == {"added": 7, "repeated": 0}
    assert answer.json()["source"]["search_count"] == 3
    again = post(client, source, {"queries": recent(QUERIES), "events": EVENTS})
    assert (again.json()["queries"], again.json()["events"]) == (
        {"added": 0, "repeated": 3}, {"added": 0, "repeated": 7})
    assert BehaviourCount.objects.filter(source=source).count() == 8


def test_the_collector_refuses_who_may_not_write_to_the_source(personas):
    source = collector(personas.team)
    body = {"queries": recent(QUERIES[:1])}
    assert post(APIClient(), source, body).status_code == 401
    bad = APIClient()
    bad.credentials(HTTP_AUTHORIZATION="Token nope")
    assert post(bad, source, body).status_code == 401
    assert post(token_client(personas.grader), source, body).status_code == 403
    assert post(token_client(personas.outsider), source, body).status_code == 404
    assert not CollectedQuery.objects.exists()
    assert post(token_client(personas.lead), source, body).status_code == 200


def test_a_batch_over_the_byte_cap_is_refused_before_it_is_read(personas):
    source = collector(personas.team)
    client = token_client(personas.lead)
    body = {"queries": recent(QUERIES)}
    size = len(json.dumps(body))
    with override_settings(BEHAVIOUR_COLLECTOR_MAX_BYTES=size - 1):
        answer = post(client, source, body)
    assert answer.status_code == 413
    assert answer.json() == {"body": [
        f"A batch is at most {size - 1} bytes (BEHAVIOUR_COLLECTOR_MAX_BYTES); this one is "
        f"{size}: send smaller batches."]}
    with override_settings(BEHAVIOUR_COLLECTOR_MAX_BYTES=size):
        assert post(client, source, body).status_code == 200


def test_a_batch_over_the_item_cap_is_refused_naming_the_larger_list(personas):
    source = collector(personas.team)
    client = token_client(personas.lead)
    with override_settings(BEHAVIOUR_COLLECTOR_MAX_ITEMS=9):
        answer = post(client, source, {"queries": recent(QUERIES), "events": EVENTS})
        assert answer.status_code == 413
        assert answer.json() == {"events": [
            "A batch holds at most 9 queries and events together "
            "(BEHAVIOUR_COLLECTOR_MAX_ITEMS); this one holds 3 and 7: send smaller batches."]}
        assert not CollectedQuery.objects.exists()
        assert post(client, source, {"queries": recent(QUERIES),
                                     "events": EVENTS[:6]}).status_code == 200


def test_a_bad_batch_answers_400_naming_the_items(personas):
    source = collector(personas.team)
    client = token_client(personas.lead)
    answer = post(client, source, {"queries": recent(QUERIES),
                                   "events": [dict(EVENTS[0], action_name="")]})
    assert answer.status_code == 400
    assert answer.json()["events"][0] == "events[0], action_name: a non-empty string is needed"
    # A lone surrogate (JSON's "\ud800") is no text any database stores: refused, not a 500.
    lone = post(client, source, {"queries": recent([dict(QUERIES[0], user_query="x\ud800")])})
    assert lone.status_code == 400
    assert "lone surrogate" in json.dumps(lone.json())
    assert post(client, source, ["not", "an", "object"]).status_code == 400
    assert post(client, source, {}).json() == {
        "events": ["The batch has neither queries nor events."]}
    assert not CollectedQuery.objects.exists()


@override_settings(BEHAVIOUR_COLLECTOR_BATCHES_PER_MINUTE=2)
def test_a_caller_over_the_rate_gets_429_with_retry_after(personas):
    source = collector(personas.team)
    client = token_client(personas.lead)
    body = {"queries": recent(QUERIES[:1])}
    assert [post(client, source, body).status_code for _ in range(2)] == [200, 200]
    refused = post(client, source, body)
    assert refused.status_code == 429
    assert 1 <= int(refused["Retry-After"]) <= 60
    # Another user's rate is their own.
    assert post(token_client(personas.admin), source, body).status_code == 200


@pytest.mark.django_db(transaction=True)
def test_a_front_end_posts_over_http_with_its_token(live_server):
    team = TeamFactory(name="Shop")
    lead = member(team, Role.LEAD, "frontend")
    _, key = api_token_create(user=lead, name="site")
    source = collector(team)
    url = f"{live_server.url}/api/v1/behaviour-sources/{source.pk}/events/"

    def send(body: dict, token: str = key) -> tuple[int, dict]:
        request = urllib.request.Request(
            url, data=json.dumps(body).encode(), method="POST",
            headers={"Authorization": f"Token {token}", "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=10) as answer:
                return answer.status, json.loads(answer.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"{}")

    body = {"queries": recent(QUERIES), "events": EVENTS}
    assert send(body, token="wrong")[0] == 401
    status, answer = send(body)
    assert (status, answer["events"]) == (200, {"added": 7, "repeated": 0})
    status, answer = send(body)
    assert (status, answer["events"]) == (200, {"added": 0, "repeated": 7})
    assert BehaviourSource.objects.get(pk=source.pk).event_count == 7
