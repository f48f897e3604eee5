"""Other tools' judgment files: recognised with the reason, parsed into the grades their
documentation means, every error named by line (or JSON item path) and field, the cap kept.
The files under tests/judgments/files/ are written by hand from each tool's documentation
(their README says which)."""

from pathlib import Path

import pytest

from judgments import imports
from judgments.formats import recognise
from judgments.scales import builtin_scale

FILES = Path(__file__).parent / "files"
GRADED = builtin_scale("graded")
DETAIL = builtin_scale("detail")


def _parse(content: bytes, *, kind: str = "auto", mapping: bytes | None = None, scale=GRADED):
    return recognise.parse_content(kind=kind, content=content, mapping=mapping, scale=scale)


def _triples(result) -> list[tuple[str, str, int]]:
    return [(item.text, item.doc_id, item.grade) for item in result.judgments]


# --- the hand-written files ---


def test_quepid_basic_csv_gives_its_ratings_and_counts_the_unrated_query():
    result = _parse((FILES / "quepid_basic.csv").read_bytes())
    assert result.ok, result.errors
    assert (result.format_name, result.format_reason) == ("Quepid basic CSV",
                                                          "header query,docid,rating")
    assert _triples(result) == [("star wars", "11", 3), ("star wars", "1891", 2),
                                ("star wars", "12180", 0), ("batman, the dark knight", "155", 3),
                                ("matrix", "603", 1)]
    assert result.skipped_count == 1
    assert result.skipped_note == "1 query has no rating (rows `query,,`): skipped."


def test_rre_json_gives_each_document_the_grade_it_is_grouped_under():
    result = _parse((FILES / "quepid_rre.json").read_bytes())
    assert result.ok, result.errors
    assert result.format_name == "RRE ratings JSON"
    assert _triples(result) == [("star wars", "11", 3), ("star wars", "1891", 3),
                                ("star wars", "12180", 1), ("matrix", "603", 2),
                                ("matrix", "604", 0)]
    assert result.skipped_note == "1 query has no rated documents: skipped."


def test_rre_json_reads_the_gain_spelling_too():
    result = _parse(b'{"queries": [{"placeholders": {"$query": "q"}, '
                    b'"relevant_documents": {"d1": {"gain": 2}, "d2": {"gain": 0}}}]}')
    assert result.ok and _triples(result) == [("q", "d1", 2), ("q", "d2", 0)]


def test_ltr_text_gives_the_grade_and_the_query_after_the_document():
    result = _parse((FILES / "quepid_ltr.txt").read_bytes())
    assert result.ok, result.errors
    assert (result.format_name, result.format_reason) == (
        "LTR judgment list (RankLib text)", "lines like `3 qid:1 # 11 star wars`")
    assert _triples(result) == [("star wars", "11", 3), ("star wars", "1891", 2),
                                ("star wars", "12180", 0), ("the matrix", "603", 1)]


def test_workbench_decimal_ratings_are_spread_over_the_scale_by_the_stated_rule():
    result = _parse((FILES / "workbench_judgments.json").read_bytes())
    assert result.ok, result.errors
    assert result.format_name == "OpenSearch Workbench judgments JSON"
    # round(rating * 3), halves up: 0.7 → 2.1 → 2; 0.5 → 1.5 → 2; 0.1 → 0.3 → 0.
    assert _triples(result) == [("red dress", "B077ZJXCTS", 2), ("red dress", "B071S6LTJJ", 0),
                                ("red dress", "B01IDSPDJI", 3), ("blue jeans", "B07QRCGL3G", 2),
                                ("blue jeans", "B074V6Q1DR", 0)]
    assert result.grade_rule == ("Ratings are 0..1, spread over the Graded scale 0..3: "
                                 "grade = 0 + round(rating * 3), halves up.")
    assert result.grade_table == [("0.000", 0), ("0.100", 0), ("0.500", 2), ("0.700", 2),
                                  ("1.000", 3)]


def test_workbench_ratings_on_a_scale_that_starts_at_one_start_at_its_lowest_grade():
    body = (b'{"judgmentRatings": [{"query": "q", "ratings": [{"docId": "a", "rating": 0}, '
            b'{"docId": "b", "rating": "0.55"}, {"docId": "c", "rating": 1}]}]}')
    result = _parse(body, scale=DETAIL)
    assert result.ok, result.errors
    # Detail is 1..10: 1 + round(0.55 * 9) = 1 + round(4.95) = 6.
    assert [item.grade for item in result.judgments] == [1, 6, 10]
    assert result.grade_rule == ("Ratings are 0..1, spread over the Detail scale 1..10: "
                                 "grade = 1 + round(rating * 9), halves up.")


def test_workbench_whole_ratings_within_the_scale_are_the_grades():
    body = (b'{"judgmentRatings": [{"query": "red dress", "ratings": '
            b'[{"docId": "a", "rating": "3.000"}, {"docId": "b", "rating": "1.000"}]}]}')
    result = _parse(body)
    assert result.ok and _triples(result) == [("red dress", "a", 3), ("red dress", "b", 1)]
    assert result.grade_rule.startswith("Every rating is a whole grade of the Graded scale")
    assert result.grade_table == [("1.000", 1), ("3.000", 3)]


def test_workbench_ratings_outside_both_rules_are_refused_naming_the_item():
    body = (b'{"judgmentRatings": [{"query": "q", "ratings": [{"docId": "a", "rating": "0.5"},'
            b' {"docId": "b", "rating": "2.5"}]}]}')
    result = _parse(body)
    assert not result.ok and not result.judgments
    assert result.errors == [
        "judgmentRatings[0].ratings[1].rating: rating 2.5 is neither a whole grade of the "
        "Graded scale 0..3 nor within 0..1; ratings are read as grades when every one is a "
        "whole grade, else as 0..1 when every one is within 0..1"]


def test_trec_qrels_without_a_mapping_read_the_topic_ids_as_query_text():
    result = _parse((FILES / "trec_by_text.qrels").read_bytes())
    assert result.ok, result.errors
    assert result.format_reason == ("four columns `laptop 0 d1 2`; no mapping file: the "
                                    "topic ids are read as the queries' text")
    assert _triples(result) == [("laptop", "d1", 2), ("laptop", "d2", 0), ("phone", "p1", 3)]


def test_trec_qrels_with_numeric_topics_and_no_mapping_are_refused_with_the_reason():
    result = _parse(b"1 0 d1 2\n2 0 d2 1\n")
    assert result.errors == [
        "TREC qrels need the mapping file (qid<TAB>keyword lines): the topic ids are numbers "
        "(line 1: 1), which name queries by id, not by their text"]
    with_mapping = _parse(b"1 0 d1 2\n2 0 d2 1\n", mapping=b"1\tlaptop\n2\tphone\n")
    assert with_mapping.format_reason.endswith("with the mapping file for topic ids")
    assert _triples(with_mapping) == [("laptop", "d1", 2), ("phone", "d2", 1)]


# --- recognition ---


@pytest.mark.parametrize(("content", "name", "reason"), [
    (b"keyword,doc_id,grade,grader,grader_kind,reason,unsure,note,position,graded_at\n",
     "SearchTweak per-slot CSV",
     "header keyword,doc_id,grade,grader,grader_kind,reason,unsure,note,position,graded_at"),
    (b"\xef\xbb\xbfKeyword,Doc_ID,Grade\nq,d,1\n", "SearchTweak CSV",
     "header keyword,doc_id,grade"),
    (b"laptop,d1,2\n", "SearchTweak CSV",
     "no header; comma-separated rows read as keyword,doc_id,grade"),
    (b"query,doc_id,rating\nq,d,1\n", "Quepid basic CSV", "header query,doc_id,rating"),
])
def test_csv_files_are_named_by_their_header(content, name, reason):
    found = recognise.recognise(content, has_mapping=False)
    assert (found.name, found.reason, found.refusal) == (name, reason, "")


@pytest.mark.parametrize(("content", "refusal"), [
    (b"query,doc,grade\nq,d,1\n", "a CSV header 'query,doc,grade' of no known format: "
     "expected keyword,doc_id,grade (SearchTweak), query,docid,rating (Quepid) or the "
     "per-slot header"),
    (b'{"ratings": []}', "JSON that is neither Workbench judgments (judgmentRatings) nor RRE "
     "ratings (queries): it holds ratings"),
    (b"[1, 2]", "JSON that is neither Workbench judgments (judgmentRatings) nor RRE ratings "
     "(queries): it holds list"),
    (b"{not json", "the file starts like JSON but is not: line 1 column 2: not JSON "
     "(Expecting property name enclosed in double quotes)"),
    (b"laptop d1\n", "the first line `laptop d1` is none of the known formats (CSV, TREC "
     "qrels, LTR text, Workbench or RRE JSON)"),
    (b"\n# only a comment\n", "the file holds no judgments"),
])
def test_a_file_of_no_known_format_is_refused_with_what_was_seen(content, refusal):
    assert recognise.recognise(content, has_mapping=False).refusal == refusal
    result = _parse(content)
    assert result.errors == [f"the format is not recognised: {refusal}; choose it on the "
                             "form if it is one of the listed formats"]
    assert not result.judgments


def test_a_chosen_format_is_named_as_chosen_and_says_when_the_file_looks_like_another():
    result = _parse(b"laptop 0 d1 2\n", kind="trec")
    assert (result.format_name, result.format_reason) == (
        "TREC qrels", "four columns `laptop 0 d1 2`; no mapping file: the topic ids are read "
        "as the queries' text (chosen on the form)")
    wrong = _parse(b"query,docid,rating\nq,d,1\n", kind="ltr")
    assert (wrong.format_name, wrong.format_reason) == (
        "LTR judgment list (RankLib text)",
        "chosen on the form, though it looks like Quepid basic CSV (header query,docid,rating)")
    assert wrong.errors[0] == "line 1: expected `grade qid:N # docid query text`"
    unknown = _parse(b"x y\n", kind="csv")
    assert unknown.format_reason == "chosen on the form"


# --- errors name the line or item and the field; nothing is kept ---


@pytest.mark.parametrize(("content", "error"), [
    (b"query,docid,rating\nq,d1,3\nq,d2,7\n", "line 3: grade 7 is outside the Graded scale 0..3"),
    (b"query,docid,rating\nq,d1\n", "line 2: expected 3 columns (query,docid,rating), found 2"),
    (b"query,docid,rating\n,d1,2\n", "line 2: the query is empty"),
    (b"query,docid,rating\nq,,2\n", "line 2: the docid is empty"),
    (b"3 qid:1 # 11 star wars\nx qid:1 # 12 star wars\n",
     "line 2: grade 'x' is not an integer"),
    (b"3 qid:1 # 11 star wars\n2 qid:1 12\n",
     "line 2: expected `grade qid:N # docid query text`"),
    (b"3 qid:1 # 11 star wars\n2 qid:1 # 12 matrix\n",
     "line 2: qid:1 is the query 'star wars' on line 1, here 'matrix'"),
    (b'{"queries": [{"placeholders": {"$query": "q"}, "relevant_documents": {"9": ["d"]}}]}',
     'queries[0].relevant_documents["9"][0]: grade 9 is outside the Graded scale 0..3'),
    (b'{"queries": [{"placeholders": {}, "relevant_documents": {}}]}',
     'queries[0].placeholders: expected "$query" with the query text'),
    (b'{"queries": [{"placeholders": {"$query": "q"}, "relevant_documents": {"1": [null]}}]}',
     'queries[0].relevant_documents["1"][0]: a document id must be text'),
    (b'{"judgmentRatings": [{"query": "q", "ratings": [{"docId": "a", "rating": "high"}]}]}',
     'judgmentRatings[0].ratings[0].rating: "high" is not a number'),
    (b'{"judgmentRatings": [{"query": "q", "ratings": [{"rating": "0.5"}]}]}',
     "judgmentRatings[0].ratings[0].docId: expected the document id as text"),
    (b'{"judgmentRatings": [{"ratings": []}]}',
     "judgmentRatings[0].query: expected the query text"),
])
def test_errors_name_the_line_or_item_and_the_field(content, error):
    result = _parse(content)
    assert not result.ok
    assert error in result.errors, result.errors
    assert imports.preview(result)["would_import"] == 0


def _file_of(kind: str, count: int) -> bytes:
    numbers = range(count)
    return {
        "quepid_csv": b"query,docid,rating\n" + b"".join(b"q,d%d,1\n" % n for n in numbers),
        "ltr": b"".join(b"1 qid:1 # d%d q\n" % n for n in numbers),
        "rre": b'{"queries": [{"placeholders": {"$query": "q"}, "relevant_documents": {"1": ['
               + b", ".join(b'"d%d"' % n for n in numbers) + b"]}}]}",
        "workbench": b'{"judgmentRatings": [{"query": "q", "ratings": ['
                     + b", ".join(b'{"docId": "d%d", "rating": "1.000"}' % n for n in numbers)
                     + b"]}]}",
        "trec": b"".join(b"q 0 d%d 1\n" % n for n in numbers),
    }[kind]


@pytest.mark.parametrize("kind", ["quepid_csv", "ltr", "rre", "workbench", "trec"])
def test_every_format_keeps_the_judgment_cap(monkeypatch, kind):
    monkeypatch.setattr(imports, "MAX_JUDGMENTS", 3)
    at_cap = _parse(_file_of(kind, 3))
    assert at_cap.ok and len(at_cap.judgments) == 3 and at_cap.format_kind == kind
    past = _parse(_file_of(kind, 6))
    assert past.errors == ["the file holds more than 3 judgments; split it into smaller files"]
    assert len(past.judgments) == 4  # it stopped reading at the first one past the cap


def test_a_repeated_query_and_document_follow_the_duplicates_policy():
    content = b"query,docid,rating\nq,d1,1\nq,d1,3\n"
    kept = recognise.parse_content(kind="auto", content=content, mapping=None, scale=GRADED,
                                   duplicates="newest")
    assert _triples(kept) == [("q", "d1", 3)] and kept.dropped_count == 1


@pytest.mark.parametrize("content", [b"[" * 100_000, b'{"judgmentRatings": ' + b"[" * 100_000])
def test_json_nested_past_what_a_parser_can_follow_is_refused_not_crashed(content):
    result = _parse(content)
    assert result.errors == ["the format is not recognised: the file starts like JSON but is "
                             "not: not JSON (nested too deeply); choose it on the form if it "
                             "is one of the listed formats"]
    assert _parse(content, kind="workbench").errors == ["not JSON (nested too deeply)"]
