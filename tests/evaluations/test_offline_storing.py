"""Run files streamed into the database: the same rankings and the same first error
(line and field) as the whole-file reading in parsing, for files whose topics are not
grouped, across chunk boundaries; nothing stored when a file is bad."""

import json
import random
import tracemalloc
from collections.abc import Iterator

import pytest
from django.core.exceptions import ValidationError
from django.db import transaction

from evaluations.models import OfflineRanking, OfflineRun, OfflineRunBlock
from evaluations.offline_runs import storing
from evaluations.offline_runs.parsing import RunFileError, parse_jsonl_run, parse_trec_run
from evaluations.offline_runs.services import offline_run_upload, search_model_create_offline

pytestmark = pytest.mark.django_db


@pytest.fixture
def tiny_chunks(monkeypatch):
    """Chunks of two or three, so a dozen lines cross several of each boundary."""
    monkeypatch.setattr(storing, "STAGE_LINES", 2)
    monkeypatch.setattr(storing, "WRITE_DOCUMENTS", 3)
    monkeypatch.setattr(storing, "WRITE_RANKINGS", 2)
    monkeypatch.setattr(storing, "READ_CHUNK", 2)


@pytest.fixture
def run(personas) -> OfflineRun:
    model = search_model_create_offline(team=personas.team, created_by=None, name="Run")
    return OfflineRun.objects.create(model=model, format="trec")


def stored(run: OfflineRun) -> dict[str, list[str]]:
    return {keyword: [d["doc_id"] for d in documents] for keyword, documents in
            OfflineRanking.objects.filter(run=run).values_list("keyword", "documents")}


def expected(rankings) -> dict[str, list[str]]:
    return {keyword: [d.doc_id for d in documents] for keyword, documents in rankings.items()}


def trec(*rows: tuple[str, str, int]) -> list[bytes]:
    return [f"{qid} Q0 {doc} {rank} 1.0 t\n".encode() for qid, doc, rank in rows]


def store_error(store, **kwargs) -> RunFileError:
    with pytest.raises(RunFileError) as caught, transaction.atomic():
        store(**kwargs)
    return caught.value


def test_interleaved_trec_topics_are_stored_in_rank_order(run, tiny_chunks):
    # Topics alternate line by line, each out of rank order; "b" has two equal ranks,
    # kept in the file's order.
    lines = trec(("a", "a3", 3), ("b", "b2", 2), ("a", "a1", 1), ("c", "c1", 1),
                 ("b", "b1", 1), ("a", "a2", 2), ("b", "bx", 2), ("c", "c0", 5))
    counts = storing.trec_run_store(run=run, lines=lines)
    assert counts == (3, 8)
    assert stored(run) == {"a": ["a1", "a2", "a3"], "b": ["b1", "b2", "bx"],
                           "c": ["c1", "c0"]}
    assert stored(run) == expected(parse_trec_run(lines))
    # The staged lines go in the upload's transaction.
    assert not OfflineRunBlock.objects.exists()


@pytest.mark.parametrize(("rows", "line", "field"), [
    # "a"'s d1 again four lines later, with "b" between: line 4.
    ((("a", "d1", 1), ("b", "d1", 1), ("a", "d2", 2), ("a", "d1", 3)), 4, "doc_id"),
    # The fourth result of "b" (cap 3) comes after "a"'s.
    ((("b", "x1", 1), ("a", "d1", 1), ("b", "x2", 2), ("b", "x3", 3), ("a", "d2", 2),
      ("b", "x4", 4)), 6, "results"),
    # The third topic (cap 2) first appears on line 3; a duplicate later does not hide it.
    ((("a", "d1", 1), ("b", "d1", 1), ("c", "d1", 1), ("a", "d1", 2)), 3, "qid"),
    # The line past the cap (3) repeats a document too: the cap is named.
    ((("a", "d1", 1), ("b", "d1", 1), ("a", "d2", 2), ("a", "d3", 3), ("a", "d1", 4)),
     5, "results"),
    # Two problems: the duplicate (line 3) comes before the cap (line 5).
    ((("a", "d1", 1), ("a", "d2", 2), ("a", "d1", 3), ("a", "d3", 3), ("a", "d4", 4)),
     3, "doc_id"),
])
def test_the_first_error_across_lines_is_the_whole_file_readings(run, tiny_chunks,
                                                                  rows, line, field):
    lines = trec(*rows)
    with pytest.raises(RunFileError) as reference:
        parse_trec_run(lines, max_results=3, max_keywords=2)
    error = store_error(storing.trec_run_store, run=run, lines=lines, max_results=3,
                        max_keywords=2)
    assert (error.line, error.field) == (reference.value.line, reference.value.field)
    assert (error.line, error.field) == (line, field)
    assert str(error) == str(reference.value)


def test_a_bad_line_after_a_duplicate_names_the_duplicate(run, tiny_chunks):
    # Line 3 repeats d1; line 5 has a bad rank. Reading stops at line 5, yet line 3 is
    # named, as a reading that checks every line in order would.
    lines = trec(("a", "d1", 1), ("b", "d1", 1), ("a", "d1", 2), ("c", "d1", 1))
    lines.append(b"c Q0 d2 two 1 t\n")
    error = store_error(storing.trec_run_store, run=run, lines=lines)
    assert (error.line, error.field) == (3, "doc_id")
    # Without the duplicate, the bad line itself.
    lines[2] = b"a Q0 d2 2 1 t\n"
    error = store_error(storing.trec_run_store, run=run, lines=lines)
    assert (error.line, error.field) == (5, "rank")


def jsonl(*rows: tuple[str, list[str]]) -> list[bytes]:
    return [(json.dumps({"keyword": keyword, "results": [{"doc_id": doc} for doc in docs]})
             + "\n").encode() for keyword, docs in rows]


def test_jsonl_rows_are_stored_as_read_across_chunks(run, tiny_chunks):
    lines = jsonl(("a", ["1", "2"]), ("b", []), ("c", ["3"]), ("d", ["4", "5", "6"]),
                  ("e", ["7"]))
    assert storing.jsonl_run_store(run=run, lines=lines) == (5, 7)
    assert stored(run) == expected(parse_jsonl_run(lines))


@pytest.mark.parametrize(("keywords", "line"), [
    (["a", "b", "c", "d", "e", "b"], 6),  # "b" was written two chunks before
    (["a", "b", "c", "c"], 4),            # in the chunk being built
    (["a", "b", "c", "d", "a", "d"], 5),  # the first of two clashes
])
def test_a_jsonl_keyword_on_an_earlier_line_is_named_in_any_chunk(run, tiny_chunks,
                                                                   keywords, line):
    lines = jsonl(*[(keyword, ["1"]) for keyword in keywords])
    error = store_error(storing.jsonl_run_store, run=run, lines=lines)
    assert (error.line, error.field) == (line, "keyword")


def test_a_bad_jsonl_line_after_an_unchecked_clash_names_the_clash(run, tiny_chunks):
    # Line 4 repeats "a", written with the chunk of lines 1-2; line 4's chunk is not yet
    # checked against it when line 5 fails alone.
    lines = [*jsonl(("a", ["1"]), ("b", ["1"]), ("c", ["1"]), ("a", ["1"])), b"[1]\n"]
    error = store_error(storing.jsonl_run_store, run=run, lines=lines)
    assert (error.line, error.field) == (4, "keyword")


def random_trec(rng: random.Random) -> list[bytes]:
    """Up to 10 lines over 3 topics (a fourth now and then) in any order, documents drawn
    from 8 (so now and then one twice), a rank now and then not a number."""
    rows = []
    for _ in range(rng.randint(1, 10)):
        rank = "x" if rng.random() < 0.02 else str(rng.randint(1, 3))
        topic = "d" if rng.random() < 0.03 else rng.choice("abc")
        rows.append(f"{topic} Q0 d{rng.randint(1, 8)} {rank} 0 t\n".encode())
    return rows


def test_random_files_store_what_the_whole_file_reading_returns(run, tiny_chunks):
    rng = random.Random(19)
    errors = 0
    for case in range(300):
        lines = random_trec(rng)
        try:
            reference = expected(parse_trec_run(lines, max_results=4, max_keywords=3))
        except RunFileError as error:
            errors += 1
            found = store_error(storing.trec_run_store, run=run, lines=lines, max_results=4,
                                max_keywords=3)
            assert (found.line, found.field, str(found)) == (
                error.line, error.field, str(error)), (case, lines)
            continue
        with transaction.atomic():
            storing.trec_run_store(run=run, lines=lines, max_results=4, max_keywords=3)
            assert stored(run) == reference, (case, lines)
            transaction.set_rollback(True)
    # Both kinds of file were drawn.
    assert 50 < errors < 250, errors


def test_a_bad_file_leaves_the_previous_run_and_no_staged_lines(personas, tiny_chunks):
    model = search_model_create_offline(team=personas.team, created_by=None, name="Run")
    offline_run_upload(model=model, uploaded_by=None, run_format="trec",
                       lines=trec(("a", "d1", 1)))
    bad = trec(("b", "d1", 1), ("c", "d1", 1), ("b", "d2", 2), ("b", "d1", 3))
    with pytest.raises(ValidationError) as caught:
        offline_run_upload(model=model, uploaded_by=None, run_format="trec", lines=bad)
    assert caught.value.message_dict == {"file": ["line 4, doc_id: 'd1' twice for 'b'"]}
    assert list(OfflineRanking.objects.values_list("keyword", flat=True)) == ["a"]
    assert OfflineRun.objects.get().keyword_count == 1
    assert not OfflineRunBlock.objects.exists()


def test_a_topic_block_past_the_cap_stops_the_reading_at_its_line(run, tiny_chunks):
    # Line 4 is "a"'s fourth result (cap 3); line 5 is bad alone but comes after it.
    lines = [*trec(("a", "d1", 1), ("a", "d2", 2), ("a", "d3", 3), ("a", "d4", 4)),
             b"a Q0 d5 five 1 t\n"]
    error = store_error(storing.trec_run_store, run=run, lines=lines, max_results=3)
    assert (error.line, error.field) == (4, "results")


def grouped_run(topics: int, results: int) -> Iterator[bytes]:
    for topic in range(topics):
        for rank in range(1, results + 1):
            yield f"q{topic} Q0 d{rank} {rank} 1 t\n".encode()


def peak_bytes(action) -> int:
    tracemalloc.start()
    try:
        action()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_the_stores_memory_does_not_grow_with_the_file(run, monkeypatch):
    # 150 topics of 10 and then of 100 results, each file generated line by line, with
    # chunks smaller than both files. The whole-file reading holds every ranking: its peak
    # grows with the lines; the store's holds a chunk at a time. (What the store keeps per
    # topic, a few hundred bytes to find it again, is bounded by the keyword cap; with the
    # topics ten times as many, the earlier version of this check failed on a run where
    # those bytes outweighed the chunk.)
    monkeypatch.setattr(storing, "STAGE_LINES", 300)
    monkeypatch.setattr(storing, "WRITE_DOCUMENTS", 300)
    monkeypatch.setattr(storing, "READ_CHUNK", 30)
    def store(results: int) -> int:
        with transaction.atomic():
            peak = peak_bytes(lambda: storing.trec_run_store(
                run=run, lines=grouped_run(150, results)))
            transaction.set_rollback(True)
        return peak

    small, large = store(10), store(100)
    whole_small = peak_bytes(lambda: parse_trec_run(grouped_run(150, 10)))
    whole_large = peak_bytes(lambda: parse_trec_run(grouped_run(150, 100)))
    assert whole_large > 5 * whole_small
    assert large < 2 * small, (small, large)
    assert large < whole_large / 5, (large, whole_large)
