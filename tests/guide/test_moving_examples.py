"""The worked examples of docs/guide/moving-from-other-tools.md read as the page says: each
file is taken from the page's own code blocks (so an edit of the page is checked) and
given to the reader the app gives it to."""

import re
from pathlib import Path

from django.conf import settings

from evaluations.offline_runs.parsing import (
    RunDocument,
    parse_jsonl_run,
    parse_topic_map,
    parse_trec_run,
)
from judgments.formats import recognise
from judgments.scales import builtin_scale

GRADED = builtin_scale("graded")


def page() -> str:
    return (Path(settings.BASE_DIR) / "docs" / "guide" / "moving-from-other-tools.md"
            ).read_text()


def block_after(heading: str, *, starting: str) -> str:
    """The first fenced block under `heading` whose text starts with `starting`."""
    text = page()
    section = text[text.index(heading):]
    for block in re.findall(r"```[a-z]*\n(.*?)```", section, flags=re.S):
        if block.startswith(starting):
            return block
    raise AssertionError(f"no block starting {starting!r} under {heading!r}")


def flat() -> str:
    """The page's words on one line, block quotes' markers gone."""
    return " ".join(page().replace("\n> ", "\n").split())


def triples(content: str, mapping: bytes | None = None):
    result = recognise.parse_content(kind="auto", content=content.encode(), mapping=mapping,
                                     scale=GRADED)
    assert result.ok, result.errors
    return result, [(item.text, item.doc_id, item.grade) for item in result.judgments]


def test_the_ltr_example_gives_the_grades_the_page_lists():
    result, found = triples(block_after("### LTR text", starting="# grade"))
    assert (result.format_name, result.format_reason) == (
        "LTR judgment list (RankLib text)", "lines like `3 qid:1 # 11 star wars`")
    assert found == [("star wars", "11", 3), ("star wars", "1891", 2),
                     ("star wars", "12180", 0), ("the matrix", "603", 1)]
    assert (f'"Read as {result.format_name}: {result.format_reason}", four judgments'
            in flat())


def test_the_qrels_example_reads_topic_ids_as_text_and_numbers_need_the_mapping():
    result, found = triples(block_after("### Qrels", starting="laptop 0"))
    assert found == [("laptop", "d1", 2), ("laptop", "d2", 0), ("phone", "p1", 3)]
    assert result.format_reason in flat()
    numbered = recognise.parse_content(kind="auto", content=b"1 0 d1 3\n", mapping=None,
                                       scale=GRADED)
    assert numbered.errors[0] in flat()
    _, with_mapping = triples("1 0 d1 3\n", mapping=b"1\tlaptop\n")
    assert with_mapping == [("laptop", "d1", 3)]


def test_the_run_examples_rank_as_the_page_says():
    topics = parse_topic_map([b"1\tred shoes\n", b"2\thats\n"])
    trec = parse_trec_run(block_after("### Runs", starting="1 Q0").splitlines(),
                          topics=topics)
    assert {keyword: [d.doc_id for d in documents] for keyword, documents in trec.items()} == {
        "red shoes": ["d1", "d2", "d3"], "hats": ["h1"]}
    jsonl = parse_jsonl_run(block_after("### Runs", starting='{"keyword"').splitlines())
    assert jsonl == {
        "red shoes": [RunDocument("d1", "Red sneaker", "", {"price": 59}), RunDocument("d2"),
                      RunDocument("d3")],
        "hats": [RunDocument("h1")]}
