"""Query-set files recognised and read (evaluations.query_sets.file_formats): files written
by hand as each tool writes them (tests/evaluations/files) give the keywords, weights and
tags their documentation means; ambiguous files are refused with the reason; every
problem names its line and field; the cap stops the reading."""

from pathlib import Path

import pytest
from django.core.exceptions import ValidationError

from evaluations.query_sets.file_formats import query_set_file_read
from evaluations.services.keywords import KeywordEntry

FILES = Path(__file__).parent / "files"


def _read(name: str, **options):
    return query_set_file_read(filename=name, content=(FILES / name).read_bytes(), **options)


def _refusal(filename: str, content: str, **options) -> list[str]:
    with pytest.raises(ValidationError) as caught:
        query_set_file_read(filename=filename, content=content.encode(), **options)
    return caught.value.message_dict["keywords_file"]


def test_a_plain_list_is_one_keyword_a_line():
    read = _read("plain.txt")
    assert (read.kind, read.reason) == ("text", "no header, no commas: one keyword a line")
    assert read.entries == [KeywordEntry("laptop"), KeywordEntry("red shoes"),
                            KeywordEntry("usb charger")]
    assert read.summary() == ("Read as Plain text (no header, no commas: one keyword a line): "
                              "3 keywords.")


def test_a_csv_with_a_header_carries_weights_and_tags():
    read = _read("weighted.csv")
    assert (read.kind, read.name, read.reason) == ("csv", "SearchTweak CSV",
                                                   "header keyword,weight,tags")
    assert read.entries == [KeywordEntry("laptop", 1200, ("electronics", "head")),
                            KeywordEntry("red, white shoes", 35, ("fashion",)),
                            KeywordEntry("usb charger", 1, ())]


def test_a_quepid_export_gives_its_queries_once_each_in_order():
    read = _read("quepid_basic.csv")
    assert (read.kind, read.reason) == ("quepid_csv", "header query,docid,rating")
    # "Star  Wars" on line 6 is "star wars" again; rocky has no rating but is a query.
    assert [entry.text for entry in read.entries] == [
        "star wars", "rocky", "batman, the dark knight", "matrix"]
    assert all(entry.weight == 1 and entry.tags == () for entry in read.entries)
    assert read.note == ("Ratings are left out (import the file on the pool page to keep "
                         "them); each query is taken once. 1 query had no rating (`query,,`).")


def test_a_workbench_ndjson_query_set_gives_its_query_texts():
    read = _read("workbench_queries.ndjson")
    assert (read.kind, read.reason) == ("workbench", "NDJSON lines holding queryText")
    assert [entry.text for entry in read.entries] == ["laptop", "red shoes", "usb-c charger"]
    assert read.note == "Fields left out: customField, referenceAnswer."


def test_the_workbench_create_body_is_read_too():
    body = ('{"name": "TVs", "description": "top queries", "sampling": "manual",\n'
            ' "querySetQueries": [{"queryText": "oled tv"}, {"queryText": "tv stand"}]}\n')
    read = query_set_file_read(filename="tvs.json", content=body.encode())
    assert read.reason == "a JSON object with querySetQueries"
    assert [entry.text for entry in read.entries] == ["oled tv", "tv stand"]


def test_commas_without_a_header_in_a_file_of_no_known_name_are_refused_as_ambiguous():
    # The line is counted over every kind of line end.
    errors = _refusal("queries", "laptop\r\nshoes\rbag\nred, white shoes\n")
    assert errors == ["line 4: a comma or double quote, and no header row: these may be CSV "
                      "rows (keyword,weight,tags) or keywords holding commas. Add the header "
                      "keyword,weight,tags, name the file .csv or .txt, or choose the format."]


def test_the_file_name_settles_commas_without_a_header():
    as_text = query_set_file_read(filename="q.txt", content=b"red, white shoes\n")
    assert as_text.entries == [KeywordEntry("red, white shoes")]
    as_csv = query_set_file_read(filename="q.csv", content=b"laptop,3\n")
    assert as_csv.entries == [KeywordEntry("laptop", 3)]
    assert as_csv.reason == "a .csv file without a header: rows keyword,weight,tags"


def test_a_lone_header_word_is_refused_unless_the_name_settles_it():
    assert _refusal("queries", "query\nlaptop\n") == [
        "line 1: `query` may be a CSV header or a keyword: name the file .csv (a header) or "
        ".txt (a keyword), or choose the format."]
    assert [e.text for e in query_set_file_read(filename="q.txt", content=b"query\nlaptop\n"
                                                ).entries] == ["query", "laptop"]
    assert [e.text for e in query_set_file_read(filename="q.csv", content=b"query\nlaptop\n"
                                                ).entries] == ["laptop"]


def test_a_chosen_format_is_read_as_chosen():
    read = query_set_file_read(filename="queries", content=b"red, white shoes\n", kind="text")
    assert (read.reason, read.entries) == ("chosen on the form",
                                           [KeywordEntry("red, white shoes")])


def test_every_csv_problem_names_its_line_and_field():
    errors = _refusal("w.csv", "keyword,weight,tags\nlaptop,1.5,\nshoes,3,a|b\nbag,x,\n")
    assert errors[0] == "Read as SearchTweak CSV (header keyword,weight,tags)."
    assert [error.split(":")[:2] for error in errors[1:]] == [["line 2", " weight"],
                                                              ["line 4", " weight"]]


def test_every_workbench_problem_names_its_line_and_field():
    errors = _refusal("w.ndjson", '{"queryText": "laptop"}\n{"queryText": 3}\n'
                                  '{"query": "x"}\nnot json\n["a"]\n{"queryText": "a\\u0007"}\n')
    assert errors == [
        "Read as OpenSearch Workbench query set (NDJSON lines holding queryText).",
        "line 2: queryText: expected the query text, found 3",
        "line 3: queryText: expected the query text, found none",
        "line 4: not a JSON object (Expecting value at column 1)",
        "line 5: expected an object {\"queryText\": …}",
        "line 6: queryText: control character U+0007 at column 2",
    ]


def test_every_quepid_problem_names_its_line_and_field():
    errors = _refusal("q.csv", "query,docid,rating\nlaptop,d1,3\n,d2,1\nshoes,d3\n")
    assert errors == ["Read as Quepid basic CSV (header query,docid,rating).",
                      "line 3: query: expected the query text, found \"\"",
                      "line 4: 2 fields; a row is query,docid,rating"]


def test_json_of_another_shape_is_refused_saying_what_it_holds():
    assert _refusal("r.json", '{"queries": []}') == [
        "line 1: JSON that is not a Workbench query set (NDJSON lines with queryText, or an "
        "object with querySetQueries): it holds queries"]


def test_a_line_that_is_not_utf8_is_named():
    with pytest.raises(ValidationError) as caught:
        query_set_file_read(filename="q.txt", content=b"laptop\nbad \xff\n")
    assert caught.value.message_dict["keywords_file"] == [
        "Read as Plain text (no header, no commas: one keyword a line).",
        "line 2: not UTF-8 text (byte 0xff at column 5)"]
    with pytest.raises(ValidationError) as caught:
        query_set_file_read(filename="q.ndjson", content=b'{"queryText": "a"}\n\xff\n')
    assert caught.value.message_dict["keywords_file"] == [
        "line 2: not UTF-8 text (byte 0xff at column 1)"]


@pytest.mark.parametrize(("name", "content"), [
    ("w.ndjson", '{"queryText": "a"}\n{"queryText": "b"}\n{"queryText": "a"}\n'
                 '{"queryText": "c"}\n{"queryText": "d"}\n'),
    ("q.csv", "query,docid,rating\na,1,1\nb,1,1\na,2,1\nc,1,1\nd,1,1\n"),
    ("q.txt", "a\nb\na\nc\nd\n"),
])
def test_reading_stops_at_the_keyword_past_the_cap(name, content):
    errors = _refusal(name, content, max_keywords=2)
    # Line 3 repeats "a" (not counted); line 4 is the third distinct keyword.
    line = 5 if name == "q.csv" else 4
    assert errors[-1].startswith(f"line {line}: more than 2 keywords")


def test_an_empty_file_is_refused():
    assert _refusal("q.txt", "\n\n") == ["The file holds no keywords."]
