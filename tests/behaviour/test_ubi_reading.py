"""The UBI reader's sums against a plain-Python oracle of the rules in
behaviour/importing.py, on random small logs (no database: the reader stages in SQLite)."""

import json
from collections import defaultdict
from datetime import date

from hypothesis import given, settings
from hypothesis import strategies as st

from behaviour.importing import UbiLog
from tests.property_depth import examples

DOCS = ["A", "B", "C", "D"]
KEYWORDS = ["boots", "Red Shoes"]

QUERY = st.tuples(st.sampled_from(KEYWORDS), st.integers(1, 2),
                  st.lists(st.sampled_from(DOCS), max_size=3, unique=True))
EVENT = st.tuples(st.sampled_from(["click", "click_through", "impression", "purchase"]),
                  st.integers(0, 5), st.sampled_from(DOCS), st.integers(1, 4),
                  st.one_of(st.none(), st.integers(0, 100)))


def oracle(queries, events):
    shown = defaultdict(dict)  # query index -> {(doc, position): [clicked, dwell]}
    for index, (_keyword, _day, hits) in enumerate(queries):
        for position, doc in enumerate(hits, start=1):
            shown[index][(doc, position)] = [0, None]
    for action, index, doc, position, dwell in events:
        if action == "purchase":
            continue
        result = shown[index].setdefault((doc, position), [0, None])
        if action != "impression":
            result[0] = 1
            if dwell is not None:
                result[1] = dwell if result[1] is None else max(result[1], dwell)
    sums = defaultdict(lambda: [0, 0, 0.0, 0])
    searches = defaultdict(lambda: [0, defaultdict(int)])
    for index, (keyword, day, _hits) in enumerate(queries):
        key = (keyword.casefold(), date(2026, 11, day))
        searches[key][0] += 1
        clicked = [position for (_doc, position), (c, _d) in shown[index].items() if c]
        if clicked:
            searches[key][1][min(clicked)] += 1
        for (doc, position), (c, dwell) in shown[index].items():
            row = sums[(key[0], doc, position, key[1])]
            row[0] += 1
            row[1] += c
            if c and dwell is not None:
                row[2] += dwell
                row[3] += 1
    return ({k: tuple(v) for k, v in sums.items()},
            {k: (n, {p: c for p, c in firsts.items()}) for k, (n, firsts) in searches.items()})


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(QUERY, min_size=1, max_size=6), st.lists(EVENT, max_size=15))
def test_the_sums_follow_the_rules_line_for_line(queries, events):
    events = [e for e in events if e[1] < len(queries)]
    query_lines = [json.dumps({"query_id": f"q{i}", "user_query": keyword,
                               "timestamp": f"2026-11-0{day}T12:00:00Z",
                               "query_response_hit_ids": hits})
                   for i, (keyword, day, hits) in enumerate(queries)]
    event_lines = [json.dumps({"action_name": action, "query_id": f"q{index}",
                               "timestamp": "2026-11-01T12:00:01Z",
                               "event_attributes": {
                                   "object": {"object_id": doc},
                                   "position": {"ordinal": position},
                                   **({"dwell_time": dwell} if dwell is not None else {})}})
                   for action, index, doc, position, dwell in events]
    with UbiLog() as log:
        assert log.read_queries(query_lines).count == 0
        assert log.read_events(event_lines).count == 0
        counts = {(r.keyword, r.doc_id, r.position, r.day):
                  (r.impressions, r.clicks, r.dwell_seconds_sum, r.dwell_count)
                  for r in log.count_rows()}
        searches = {(r.keyword, r.day): (r.search_count,
                                         {p: c for p, c in enumerate(r.first_clicks, 1) if c})
                    for r in log.searches_rows()}
    expected_counts, expected_searches = oracle(queries, events)
    assert counts == expected_counts
    assert searches == expected_searches
    assert log.summary.event_count == len(events)


def _event(object_id: str, position: str = "1", dwell: str = "") -> bytes:
    """An event line written by hand, so its numbers are exactly the literals given."""
    extra = f', "dwell_time": {dwell}' if dwell else ""
    return (f'{{"action_name": "click", "query_id": "q1", "timestamp": '
            f'"2026-11-02T10:00:00Z", "event_attributes": {{"object": {{"object_id": '
            f'{object_id}}}, "position": {{"ordinal": {position}}}{extra}}}}}\n').encode()


QUERY_LINE = (b'{"query_id": "q1", "user_query": "Boots", "timestamp": '
              b'"2026-11-02T09:59:00Z", "query_response_hit_ids": []}\n')


def test_lines_orjson_reads_otherwise_are_read_as_the_standard_json_reads_them():
    # orjson makes an integer beyond 64 bits a float (an id the rules refuse) and refuses
    # NaN; the standard library's reading is the one that stands.
    big = "123456789012345678901234567890"
    lines = [_event(big), _event('"d\\u00e9"', dwell="2.5"), _event('"x"', dwell="NaN"),
             _event('"y"', position="1.0"), b"\xff\xfe\n", b"   \n"]
    with UbiLog() as log:
        assert log.read_queries([QUERY_LINE]).count == 0
        errors = log.read_events(lines)
        assert errors.named == [
            "events line 3, event_attributes.dwell_time: seconds, a number from 0, needed",
            "events line 4, event_attributes.position.ordinal: a whole number from 1 is "
            "needed",
            "events line 5, line: not UTF-8"]
        assert errors.count == 3
        assert log.summary.event_count == 2
        assert sorted((r.doc_id, r.impressions, r.clicks, r.dwell_seconds_sum, r.dwell_count)
                      for r in log.count_rows()) == [(big, 1, 1, 0.0, 0),
                                                     ("dé", 1, 1, 2.5, 1)]


def test_a_lone_surrogate_is_a_bad_line_named_where_it_is_not_a_crash():
    # orjson refuses "\ud800"; the standard json reads it as a lone surrogate, which
    # neither SQLite's staging nor PostgreSQL can store.
    with UbiLog() as log:
        errors = log.read_queries([
            QUERY_LINE,
            b'{"query_id": "q\\ud800", "user_query": "x", "timestamp": "2026-11-02T09:59:00Z"}\n',
            b'{"query_id": "q2", "user_query": "x\\udc00y", "timestamp": '
            b'"2026-11-02T09:59:00Z"}\n'])
        assert errors.named == [
            "queries line 2, query_id: holds a lone surrogate, which is not text",
            "queries line 3, user_query: holds a lone surrogate, which is not text"]
        events = log.read_events([_event('"d\\ud800"'), _event('"d\\u00e9"')])
        assert events.named == ["events line 1, event_attributes.object.object_id: holds a "
                                "lone surrogate, which is not text"]
        assert [row.doc_id for row in log.count_rows()] == ["dé"]
