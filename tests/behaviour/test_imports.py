"""Importing behaviour: a UBI log and a plain CSV summed per (keyword, document, position,
day), stored whole or not at all, and the online metrics of an evaluation's keywords read
back from the sums (hand-computed in the comments)."""

import json
from datetime import UTC, date, datetime

import pytest
from django.core.exceptions import ValidationError

from behaviour import services
from behaviour.importing import MAX_NAMED_ERRORS
from behaviour.models import BehaviourCount, BehaviourSearches, BehaviourSource
from behaviour.selectors import evaluation_online_metrics
from tests.evaluations.factories import EvaluationFactory, KeywordFactory, SearchModelFactory

pytestmark = pytest.mark.django_db


def ndjson(*objects) -> list[bytes]:
    return [(json.dumps(o) + "\n").encode() for o in objects]


def query(query_id, text, timestamp, hits):
    return {"query_id": query_id, "user_query": text, "client_id": "c1",
            "timestamp": timestamp, "query_response_hit_ids": hits}


def event(action, query_id, object_id=None, ordinal=None, dwell=None,
          timestamp="2026-11-01T10:00:05Z"):
    attributes = {}
    if object_id is not None:
        attributes["object"] = {"object_id": object_id, "object_id_field": "sku"}
    if ordinal is not None:
        attributes["position"] = {"ordinal": ordinal}
    if dwell is not None:
        attributes["dwell_time"] = dwell
    return {"action_name": action, "query_id": query_id, "timestamp": timestamp,
            "event_attributes": attributes}


# q1 and q2 search "red shoes" on 1 November (q2 at 11:00+01:00 = 10:00 UTC), q3 "boots"
# on 2 November (no zone: UTC).
QUERIES = ndjson(
    query("q1", "Red Shoes", "2026-11-01T10:00:00Z", ["A", "B", "C"]),
    query("q2", "red shoes", "2026-11-01T11:00:00+01:00", ["B", "A", "C"]),
    query("q3", "boots", "2026-11-02T09:00:00", ["D", "E"]),
)
EVENTS = ndjson(
    event("click", "q1", "A", 1, dwell=30),
    event("click", "q1", "A", 1, dwell=50),   # the same result again: one click, 50 s
    event("click", "q1", "C", 3, dwell=10),
    event("add_to_cart", "q1", "A"),          # read, counted, not summed
    event("impression", "q2", "B", 1),        # shown by its hit ids already
    event("click", "q2", "A", 2),             # no dwell time
    event("impression", "q3", "F", 3),        # shown though not among the hit ids
)


def import_ubi(personas, queries=QUERIES, events=EVENTS) -> BehaviourSource:
    return services.behaviour_source_import_ubi(
        team=personas.team, user=personas.lead, name="  November  log ", queries=queries,
        events=events)


def stored_counts(source) -> dict:
    return {(c.keyword, c.doc_id, c.position, c.day): (c.impressions, c.clicks,
                                                      c.dwell_seconds_sum, c.dwell_count)
            for c in BehaviourCount.objects.filter(source=source)}


NOV1, NOV2 = date(2026, 11, 1), date(2026, 11, 2)


def test_a_ubi_log_is_summed_per_keyword_document_position_and_day(personas):
    source = import_ubi(personas)
    assert (source.name, source.kind, source.search_count, source.event_count) == (
        "November log", "ubi", 3, 7)
    assert source.window_start_at == datetime(2026, 11, 1, 10, tzinfo=UTC)
    assert source.window_end_at == datetime(2026, 11, 2, 9, tzinfo=UTC)
    assert stored_counts(source) == {
        ("red shoes", "A", 1, NOV1): (1, 1, 50.0, 1),
        ("red shoes", "B", 2, NOV1): (1, 0, 0.0, 0),
        ("red shoes", "C", 3, NOV1): (2, 1, 10.0, 1),
        ("red shoes", "B", 1, NOV1): (1, 0, 0.0, 0),
        ("red shoes", "A", 2, NOV1): (1, 1, 0.0, 0),
        ("boots", "D", 1, NOV2): (1, 0, 0.0, 0),
        ("boots", "E", 2, NOV2): (1, 0, 0.0, 0),
        ("boots", "F", 3, NOV2): (1, 0, 0.0, 0),
    }
    # q1's first click at 1, q2's at 2; q3 has none.
    assert {(s.keyword, s.day, s.search_count, tuple(s.first_clicks))
            for s in BehaviourSearches.objects.filter(source=source)} == {
        ("red shoes", NOV1, 2, (1, 1)), ("boots", NOV2, 1, ())}


def evaluation_with_keywords(personas):
    evaluation = EvaluationFactory(model=SearchModelFactory(team=personas.team))
    KeywordFactory(evaluation=evaluation, text="Red shoes", position=1, tags=["head"])
    KeywordFactory(evaluation=evaluation, text="boots", position=2, tags=["tail"])
    KeywordFactory(evaluation=evaluation, text="sandals", position=3, tags=[])
    return evaluation


def test_online_metrics_of_an_evaluations_keywords_by_hand(personas):
    source = import_ubi(personas)
    found = evaluation_online_metrics(evaluation=evaluation_with_keywords(personas),
                                      source=source, k=2)
    red, boots, sandals = found.keywords
    # red shoes: impressions per position 2, 2, 2 (A@1 + B@1, B@2 + A@2, C@3 twice),
    # clicks 1, 1, 1. CTR@2 = 2/4. First clicks at 1 and 2: RR = (1 + 1/2) / 2. Dwell of
    # the clicks that have one: (50 + 10) / 2.
    assert red.metrics.ctr_at_k == pytest.approx(0.5)
    assert red.metrics.ctr_by_position == pytest.approx([0.5, 0.5, 0.5])
    assert red.metrics.first_click_rr == pytest.approx(0.75)
    assert red.metrics.abandonment == 0
    assert red.metrics.mean_dwell_seconds == pytest.approx(30.0)
    # boots: one search, nothing clicked.
    assert (boots.metrics.ctr_at_k, boots.metrics.first_click_rr,
            boots.metrics.abandonment, boots.metrics.mean_dwell_seconds) == (0, 0, 1, None)
    assert sandals.metrics is None
    # Each keyword once: CTR@2 (0.5 + 0) / 2, RR (0.75 + 0) / 2, abandonment (0 + 1) / 2;
    # pooled: 2 clicks over 6 impressions in the top 2, RR 1.5 / 3, 1 search of 3 abandoned.
    overall = found.overall
    assert (overall.keyword_count, overall.mean_ctr_at_k, overall.mean_first_click_rr,
            overall.mean_abandonment) == (3, 0.25, 0.375, 0.5)
    assert overall.pooled.ctr_at_k == pytest.approx(1 / 3)
    assert overall.pooled.first_click_rr == pytest.approx(0.5)
    assert overall.pooled.abandonment == pytest.approx(1 / 3)
    assert found.segments["head"].mean_ctr_at_k == 0.5
    assert found.segments["tail"].mean_abandonment == 1


def test_a_window_keeps_only_its_days(personas):
    source = import_ubi(personas)
    found = evaluation_online_metrics(evaluation=evaluation_with_keywords(personas),
                                      source=source, k=2, start_on=NOV2, end_on=NOV2)
    red, boots, _sandals = found.keywords
    assert red.metrics is None
    assert boots.metrics.searches == 1


def nothing_stored() -> bool:
    return not (BehaviourSource.objects.exists() or BehaviourCount.objects.exists()
                or BehaviourSearches.objects.exists())


def test_nothing_is_stored_when_the_last_event_line_is_bad(personas):
    events = [*EVENTS, b'{"action_name": "click", "query_id": "q1", "timestamp": \n']
    with pytest.raises(ValidationError) as raised:
        import_ubi(personas, events=events)
    assert raised.value.message_dict["events"] == [
        "events line 8, line: not JSON (Expecting value)",
        "1 bad line in the events; nothing was stored."]
    assert nothing_stored()


def test_bad_query_lines_are_named_by_line_and_field(personas):
    queries = [*QUERIES, b"[1, 2]\n",
               *ndjson({"query_id": "q9", "user_query": "x", "timestamp": "yesterday"},
                       query("q1", "again", "2026-11-01T10:00:00Z", []),
                       query("q8", "", "2026-11-01T10:00:00Z", []),
                       query("q7", "y", "2026-11-01T10:00:00Z", "A"))]
    with pytest.raises(ValidationError) as raised:
        import_ubi(personas, queries=queries)
    assert raised.value.message_dict["queries"] == [
        "queries line 4, line: not a JSON object",
        "queries line 5, timestamp: 'yesterday' is not an ISO 8601 date-time",
        "queries line 6, query_id: 'q1' is on line 1 already",
        "queries line 7, user_query: a non-empty string is needed",
        "queries line 8, query_response_hit_ids: a list of ids is needed",
        "5 bad lines in the queries; nothing was stored."]
    assert nothing_stored()


def test_events_of_unknown_searches_and_bad_positions_are_named(personas):
    events = [*EVENTS, *ndjson(event("click", "q404", "A", 1), event("click", "q1", "A", 0),
                               event("impression", "q1", None, 2),
                               {"query_id": "q1", "timestamp": "2026-11-01T10:00:00Z"})]
    with pytest.raises(ValidationError) as raised:
        import_ubi(personas, events=events)
    assert raised.value.message_dict["events"] == [
        "events line 9, event_attributes.position.ordinal: a whole number from 1 is needed",
        "events line 10, event_attributes.object: an object is needed",
        "events line 11, action_name: a non-empty string is needed",
        "events line 8, query_id: 'q404' is not among the queries",
        "4 bad lines in the events; nothing was stored."]
    assert nothing_stored()


def test_only_the_first_bad_lines_are_named_and_all_are_counted(personas):
    queries = [*QUERIES, *[b"nope\n"] * (MAX_NAMED_ERRORS + 5)]
    with pytest.raises(ValidationError) as raised:
        import_ubi(personas, queries=queries)
    messages = raised.value.message_dict["queries"]
    assert len(messages) == MAX_NAMED_ERRORS + 2
    assert messages[-2:] == ["... and 5 more bad lines",
                             "25 bad lines in the queries; nothing was stored."]


CSV = [b"keyword,doc_id,position,impressions,clicks,dwell_seconds\n",
       b"Red Shoes,A,1,100,30,20\n",
       b"red shoes,A,1,50,10,\n",
       b"red shoes,B,2,80,8,5\n"]


def import_csv(personas, lines=CSV, **window) -> BehaviourSource:
    return services.behaviour_source_import_csv(team=personas.team, user=personas.lead,
                                                name="Counts", lines=lines, **window)


def test_a_csv_adds_up_repeated_rows_and_keeps_the_window_it_is_given(personas):
    start, end = datetime(2026, 10, 1, tzinfo=UTC), datetime(2026, 10, 31, tzinfo=UTC)
    source = import_csv(personas, window_start_at=start, window_end_at=end)
    assert (source.kind, source.event_count, source.search_count) == ("csv", 3, 0)
    assert (source.window_start_at, source.window_end_at) == (start, end)
    # A@1: 100 + 50 shown, 30 + 10 clicked, dwell 30 clicks x 20 s (the second row has none).
    assert stored_counts(source) == {("red shoes", "A", 1, None): (150, 40, 600.0, 30),
                                     ("red shoes", "B", 2, None): (80, 8, 40.0, 8)}
    found = evaluation_online_metrics(evaluation=evaluation_with_keywords(personas),
                                      source=source, k=1)
    red = found.keywords[0].metrics
    assert red.ctr_at_k == pytest.approx(40 / 150)
    assert red.mean_dwell_seconds == pytest.approx(640 / 38)
    assert red.first_click_rr is None and red.abandonment is None
    # A window asks for days, which a CSV's rows do not have.
    windowed = evaluation_online_metrics(evaluation=evaluation_with_keywords(personas),
                                         source=source, start_on=date(2026, 10, 1))
    assert windowed.keywords[0].metrics is None


def test_a_bad_csv_line_stores_nothing_and_is_named(personas):
    lines = [*CSV, b"boots,D,1,5,6,\n", b"boots,D,x,5,1,\n", b"boots,D,1,5\n"]
    with pytest.raises(ValidationError) as raised:
        import_csv(personas, lines=lines)
    assert raised.value.message_dict["file"] == [
        "CSV line 5, clicks: more clicks than impressions",
        "CSV line 6, position: 'x' is not a whole number",
        "CSV line 7, line: 4 fields where the header has 6",
        "3 bad lines in the CSV; nothing was stored."]
    assert nothing_stored()


def test_a_csv_without_its_header_is_refused(personas):
    with pytest.raises(ValidationError) as raised:
        import_csv(personas, lines=[b"query,doc,pos,imp,clk\n", b"a,b,1,1,1\n"])
    assert raised.value.message_dict["file"][0].startswith("CSV line 1, header: expected")
    assert nothing_stored()


def test_a_source_needs_a_name(personas):
    with pytest.raises(ValidationError) as raised:
        services.behaviour_source_import_csv(team=personas.team, user=None, name="  ",
                                             lines=CSV)
    assert "name" in raised.value.message_dict


def test_sums_are_stored_in_batches_all_the_same(personas, monkeypatch):
    monkeypatch.setattr(services, "BATCH_SIZE", 2)
    source = import_ubi(personas)
    assert BehaviourCount.objects.filter(source=source).count() == 8


def test_keywords_are_read_in_chunks_all_the_same(personas, monkeypatch):
    from behaviour import selectors

    monkeypatch.setattr(selectors, "KEYWORD_CHUNK", 1)
    source = import_ubi(personas)
    found = evaluation_online_metrics(evaluation=evaluation_with_keywords(personas),
                                      source=source, k=2)
    assert [row.metrics.searches if row.metrics else None for row in found.keywords] == [
        2, 1, None]
    assert found.overall.mean_first_click_rr == 0.375


def test_an_evaluations_online_metrics_take_three_queries(personas,
                                                           django_assert_num_queries):
    source = import_ubi(personas)
    evaluation = evaluation_with_keywords(personas)
    # The keywords, their counts per position, their searches.
    with django_assert_num_queries(3):
        evaluation_online_metrics(evaluation=evaluation, source=source)
