"""Reading run files: hand-written files, their rankings, and errors naming line and field."""

import pytest

from evaluations.offline_runs.parsing import (
    RunDocument,
    RunFileError,
    parse_jsonl_run,
    parse_topic_map,
    parse_trec_run,
)


def lines(text: str) -> list[bytes]:
    return [line.encode() for line in text.splitlines(keepends=True)]


def doc_ids(rankings: dict[str, list[RunDocument]]) -> dict[str, list[str]]:
    return {keyword: [d.doc_id for d in docs] for keyword, docs in rankings.items()}


def test_it_orders_a_trec_topic_by_rank_not_by_line():
    run = lines("shoes Q0 d3 3 0.1 bm25\nshoes Q0 d1 1 0.9 bm25\n"
                "shoes Q0 d2 2 0.5 bm25\nboots Q0 d9 1 1.0 bm25\n")
    assert doc_ids(parse_trec_run(run)) == {"shoes": ["d1", "d2", "d3"], "boots": ["d9"]}


def test_it_maps_trec_topics_through_the_mapping_file():
    topics = parse_topic_map(lines("1\tred shoes\n2\tblue boots\n"))
    run = lines("1 Q0 a 1 2 t\n2 Q0 b 1 2 t\n2 Q0 c 2 1 t\n")
    assert doc_ids(parse_trec_run(run, topics=topics)) == {
        "red shoes": ["a"], "blue boots": ["b", "c"]}


def test_it_names_a_qid_missing_from_the_mapping():
    with pytest.raises(RunFileError) as caught:
        parse_trec_run(lines("1 Q0 a 1 2 t\n3 Q0 b 1 2 t\n"), topics={"1": "x"})
    assert (caught.value.line, caught.value.field) == (2, "qid")


@pytest.mark.parametrize(("text", "line", "field"), [
    ("q Q0 a 1 1 t\nq Q0 b 2 1\n", 2, "columns"),
    ("q Q0 a one 1 t\n", 1, "rank"),
    ("q Q0 a 0 1 t\n", 1, "rank"),
    ("q Q0 a 1 high t\n", 1, "score"),
    ("q Q0 a 1 1 t\n\nq Q0 a 2 1 t\n", 3, "doc_id"),
])
def test_it_names_the_line_and_column_of_a_bad_trec_line(text, line, field):
    with pytest.raises(RunFileError) as caught:
        parse_trec_run(lines(text))
    assert (caught.value.line, caught.value.field) == (line, field)
    assert str(caught.value).startswith(f"line {line}, {field}:")


def test_it_rejects_bytes_that_are_not_utf8_on_their_line():
    with pytest.raises(RunFileError) as caught:
        parse_trec_run([b"q Q0 a 1 1 t\n", b"q Q0 \xff 2 1 t\n"])
    assert (caught.value.line, caught.value.field) == (2, "encoding")


def test_it_caps_results_per_keyword_at_the_line_that_exceeds_it():
    run = lines("".join(f"q Q0 d{rank} {rank} 1 t\n" for rank in range(1, 5)))
    assert len(parse_trec_run(run, max_results=4)["q"]) == 4
    with pytest.raises(RunFileError) as caught:
        parse_trec_run(run, max_results=3)
    assert (caught.value.line, caught.value.field) == (4, "results")


def test_it_caps_keywords_at_the_line_that_adds_one_too_many():
    run = lines("a Q0 d 1 1 t\nb Q0 d 1 1 t\nb Q0 e 2 1 t\nc Q0 d 1 1 t\n")
    assert len(parse_trec_run(run, max_keywords=3)) == 3
    with pytest.raises(RunFileError) as caught:
        parse_trec_run(run, max_keywords=2)
    assert (caught.value.line, caught.value.field) == (4, "qid")


def test_it_caps_jsonl_keywords_also_for_keywords_with_no_results():
    run = lines('{"keyword": "a", "results": []}\n{"keyword": "b", "results": []}\n')
    assert parse_jsonl_run(run, max_keywords=2) == {"a": [], "b": []}
    with pytest.raises(RunFileError) as caught:
        parse_jsonl_run(run, max_keywords=1)
    assert (caught.value.line, caught.value.field) == (2, "keyword")


def test_it_keeps_jsonl_results_in_order_with_their_other_fields():
    run = lines('{"keyword": "red  shoes", "results": [{"doc_id": "a", "name": "A", '
                '"price": 3}, {"doc_id": 7, "image": "http://x/7.png"}]}\n')
    assert parse_jsonl_run(run) == {"red  shoes": [
        RunDocument("a", name="A", fields={"price": 3}),
        RunDocument("7", image="http://x/7.png"),
    ]}


@pytest.mark.parametrize(("text", "line", "field"), [
    ('{"keyword": "a", "results": []}\n{"keyword": "b", "results": [\n', 2, "json"),
    ('[1]\n', 1, "json"),
    ('{"results": []}\n', 1, "keyword"),
    ('{"keyword": "a"}\n', 1, "results"),
    ('{"keyword": "a", "results": [{"doc_id": "x"}, {"name": "y"}]}\n', 1, "results[1].doc_id"),
    ('{"keyword": "a", "results": [{"doc_id": "x", "name": 5}]}\n', 1, "results[0].name"),
    ('{"keyword": "a", "results": [3]}\n', 1, "results[0]"),
    ('{"keyword": "a", "results": []}\n{"keyword": "a", "results": []}\n', 2, "keyword"),
])
def test_it_names_the_line_and_key_of_a_bad_jsonl_line(text, line, field):
    with pytest.raises(RunFileError) as caught:
        parse_jsonl_run(lines(text))
    assert (caught.value.line, caught.value.field) == (line, field)


def test_it_rejects_a_mapping_line_without_a_tab():
    with pytest.raises(RunFileError) as caught:
        parse_topic_map(lines("1\tred shoes\n2 blue boots\n"))
    assert (caught.value.line, caught.value.field) == (2, "qid")


def test_it_keys_keywords_by_the_normalisation_given():
    run = lines("Shoes Q0 a 1 1 t\nshoes Q0 b 2 1 t\n")
    assert doc_ids(parse_trec_run(run, normalize=str.casefold)) == {"shoes": ["a", "b"]}
    assert doc_ids(parse_trec_run(run)) == {"Shoes": ["a"], "shoes": ["b"]}
