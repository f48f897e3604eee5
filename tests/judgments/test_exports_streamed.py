"""Streamed exports: the bytes a download streams are the bytes the string-building
exports wrote before streaming (their code is kept below, verbatim, as the reference), read a
few rows at a time so that every chunk and piece boundary is crossed; and JSON Lines, the one
new format, answers each persona as the other exports do."""

import io
import json
import math
from collections import defaultdict, namedtuple
from datetime import UTC

import numpy as np
import pytest
from rest_framework.renderers import JSONRenderer
from rest_framework.test import APIClient

from evaluations.models import Snapshot
from judgments import exports, run_exports
from judgments.exports import (
    IMPORT_GRADER,
    _core_scale,
    _trec_token,
    format_value,
)
from judgments.models import FeedbackSlot
from metrics.export_api import metric_table_csv
from metrics_engine.aggregate import Aggregation
from searchtweak import csv_cells
from searchtweak.csv_cells import csv_text
from tests.metrics.builders import build_evaluation, set_grades, slot

pytestmark = pytest.mark.django_db


# --- the exports as they were before streaming (commit 7b037e2), the reference ----------
# Verbatim but for OldAggregated, the AggregatedJudgment of then (it held the Keyword).

OldAggregated = namedtuple("OldAggregated", ["keyword", "doc_id", "value"])


def _slots(evaluation):
    return (
        FeedbackSlot.objects.filter(evaluation=evaluation)
        .select_related("keyword", "snapshot", "user")
        .order_by("keyword__position", "snapshot__position", "index")
    )


def grader_name(slot):
    if slot.user is not None:
        return slot.user.username
    return IMPORT_GRADER if slot.reused_from_pool_id is not None else None


def grader_kind(slot):
    return slot.user.grader_kind if slot.user is not None else None


def old_slot_object(slot):
    return {
        "keyword": slot.keyword.text,
        "keyword_position": slot.keyword.position,
        "doc_id": slot.snapshot.doc_id,
        "position": slot.snapshot.position,
        "slot": slot.index,
        "grader": grader_name(slot),
        "grade": slot.grade,
        "graded_at": slot.graded_at.isoformat() if slot.graded_at else None,
        "unsure": slot.unsure,
        "note": slot.note,
        "reused": slot.reused_from_id is not None or slot.reused_from_pool_id is not None,
        "grader_kind": grader_kind(slot),
        "reason": slot.reason,
    }


def old_aggregated(evaluation):
    scale = _core_scale(evaluation)
    aggregation = Aggregation(scale, scale, {grade: grade for grade in scale.grades})
    grades = defaultdict(list)
    keywords = {}
    for s in _slots(evaluation).filter(grade__isnull=False).iterator(chunk_size=5000):
        keywords[s.keyword_id] = s.keyword
        grades[(s.keyword_id, s.snapshot.doc_id)].append(float(s.grade))
    if not grades:
        return []
    width = max(len(values) for values in grades.values())
    block = np.full((len(grades), width), np.nan)
    for row, values in enumerate(grades.values()):
        block[row, : len(values)] = values
    values = aggregation.aggregate(block)
    return [
        OldAggregated(keywords[keyword_id], doc_id, float(value))
        for ((keyword_id, doc_id), value) in zip(grades, values, strict=True)
        if not math.isnan(value)
    ]


def old_judgments_csv(evaluation):
    return csv_text([["keyword", "doc_id", "grade"]] + [
        [item.keyword.text, item.doc_id, format_value(item.value)]
        for item in old_aggregated(evaluation)
    ])


def old_slot_row(*, keyword, doc_id, grade, grader, kind, reason, unsure, note, position,
                 graded_at):
    return [keyword, doc_id, grade, grader, kind, reason, "true" if unsure else "false", note,
            "" if position is None else position,
            graded_at.astimezone(UTC).isoformat() if graded_at else ""]


def old_judgments_csv_per_grader(evaluation):
    return csv_text([exports.SLOT_COLUMNS] + [
        old_slot_row(keyword=s.keyword.text, doc_id=s.snapshot.doc_id, grade=s.grade,
                     grader=grader_name(s) or "", kind=grader_kind(s) or "",
                     reason=s.reason, unsure=s.unsure, note=s.note,
                     position=s.snapshot.position, graded_at=s.graded_at)
        for s in _slots(evaluation).filter(grade__isnull=False).iterator(chunk_size=5000)
    ])


def old_qrels(evaluation):
    return "".join(
        f"{item.keyword.position} 0 {_trec_token(item.doc_id)} {math.floor(item.value + 0.5)}\n"
        for item in old_aggregated(evaluation)
    )


def old_trec_mapping(evaluation):
    return "".join(
        f"{position}\t{' '.join(text.split())}\n"
        for position, text in evaluation.keywords.order_by("position").values_list(
            "position", "text")
    )


def old_trec_run(evaluation):
    tag = f"searchtweak-{evaluation.pk}"
    snapshots = (
        Snapshot.objects.filter(keyword__evaluation=evaluation)
        .order_by("keyword__position", "position")
        .values_list("keyword__position", "position", "doc_id")
    )
    by_keyword = defaultdict(list)
    for keyword_position, position, doc_id in snapshots:
        by_keyword[keyword_position].append((position, doc_id))
    lines = []
    for keyword_position, results in by_keyword.items():
        for rank, (_position, doc_id) in enumerate(results, start=1):
            score = len(results) - rank + 1
            lines.append(f"{keyword_position} Q0 {_trec_token(doc_id)} {rank} {score} {tag}\n")
    return "".join(lines)


# --- fixture ------------------------------------------------------------------------------


@pytest.fixture
def mixed(personas, monkeypatch):
    """Graded, 3 graders: keywords with 1-3 grades per result, a document at two positions
    of one keyword, whitespace in a document id, a formula-like keyword and note, ungraded
    results; read 2 rows (and aggregated 2 pairs) at a time, written in 8-character pieces."""
    monkeypatch.setattr(exports, "EXPORT_CHUNK", 2)
    monkeypatch.setattr(run_exports, "EXPORT_CHUNK", 2)
    monkeypatch.setattr(csv_cells, "STREAM_PIECE_CHARS", 8)
    evaluation = build_evaluation(
        team=personas.team, scale="graded", strategy=3,
        keywords={"Laptop": ["d1", "d2", "d3"], "=phone\tcase": ["p 1", "p2", "p 1"],
                  "tv": ["t1"], "radio": ["r1", "r2"], "café": ["c1"]},
        metrics=[("ndcg", 3, {})])
    graders = [personas.owner, personas.lead, personas.grader]
    set_grades(graders, [
        (slot(evaluation, "laptop", 1, 0), 3), (slot(evaluation, "laptop", 1, 1), 3),
        (slot(evaluation, "laptop", 1, 2), 2), (slot(evaluation, "laptop", 2, 0), 0),
        (slot(evaluation, "=phone\tcase", 1, 0), 1), (slot(evaluation, "=phone\tcase", 3, 1), 2),
        (slot(evaluation, "=phone\tcase", 2, 0), 3), (slot(evaluation, "tv", 1, 2), 2),
        (slot(evaluation, "radio", 2, 0), 1), (slot(evaluation, "radio", 2, 1), 2),
        (slot(evaluation, "café", 1, 0), 0),
    ])
    FeedbackSlot.objects.filter(pk=slot(evaluation, "laptop", 2, 0).pk).update(
        unsure=True, note="=HYPERLINK(x)")
    return evaluation


def _url(evaluation, query):
    return f"/api/v1/evaluations/{evaluation.pk}/judgments/{query}"


def _streamed(client, url) -> tuple[list[bytes], bytes]:
    response = client.get(url)
    assert response.status_code == 200
    assert response.streaming
    pieces = list(response.streaming_content)
    return pieces, b"".join(pieces)


@pytest.mark.parametrize(("query", "old"), [
    ("?format=csv", old_judgments_csv),
    ("?format=csv&per_grader=true", old_judgments_csv_per_grader),
    ("?format=trec", old_qrels),
    ("?format=trec_mapping", old_trec_mapping),
    ("?format=trec_run", old_trec_run),
])
def test_a_streamed_export_is_the_old_export_byte_for_byte(personas, mixed, query, old):
    client = APIClient()
    client.force_authenticate(personas.owner)
    pieces, body = _streamed(client, _url(mixed, query))
    assert len(pieces) > 3  # streamed in pieces, not one string
    assert body == old(mixed).encode()


def test_the_reference_values_are_the_hand_checked_ones(mixed):
    # Laptop d1 3,3,2 -> 2.6667; d2 0; phone "p 1" at positions 1 and 3 pools 1 and 2 -> 1.5;
    # p2 3; tv t1 2; radio r2 1,2 -> 1.5; café c1 0.
    assert exports.judgments_csv(mixed) == (
        "keyword,doc_id,grade\nLaptop,d1,2.6667\nLaptop,d2,0\n'=phone\tcase,p 1,1.5\n"
        "'=phone\tcase,p2,3\ntv,t1,2\nradio,r2,1.5\ncafé,c1,0\n")
    assert exports.qrels(mixed) == (
        "1 0 d1 3\n1 0 d2 0\n2 0 p_1 2\n2 0 p2 3\n3 0 t1 2\n4 0 r2 2\n5 0 c1 0\n")


def test_the_metric_table_streams_the_same_bytes_in_pages(personas, mixed, monkeypatch):
    whole = metric_table_csv(mixed, with_bounds=True)
    monkeypatch.setattr("metrics.export_api.KEYWORD_PAGE", 2)
    client = APIClient()
    client.force_authenticate(personas.owner)
    _pieces, body = _streamed(
        client, f"/api/v1/evaluations/{mixed.pk}/metric-table/?bounds=true")
    assert body == whole.encode()
    assert [line.split(",")[0] for line in whole.splitlines()] == [
        "keyword", "Laptop", "'=phone\tcase", "tv", "radio", "café"]


@pytest.mark.parametrize("query", ["?format=json", "?format=json&download=1"])
def test_the_json_export_streams_what_the_json_renderer_wrote(personas, mixed, query):
    """Before streaming the API answered JSONRenderer().render(judgments_json(...)); a note
    with a line separator (U+2028, which the renderer escapes) and one with quotes too."""
    FeedbackSlot.objects.filter(pk=slot(mixed, "tv", 1, 2).pk).update(
        unsure=True, note='line\u2028sep "quoted" \u2029 é')
    reference = JSONRenderer().render(exports.judgments_json(mixed))
    assert b"\\u2028" in reference and "é".encode() in reference
    # The objects are the slot objects' of before (read as value rows now).
    assert exports.judgments_json(mixed)["judgments"] == [
        old_slot_object(s) for s in _slots(mixed).iterator(chunk_size=5000)]
    client = APIClient()
    client.force_authenticate(personas.owner)
    pieces, body = _streamed(client, _url(mixed, query))
    assert len(pieces) > 3
    assert body == reference
    assert len(json.loads(body)["judgments"]) == 30  # 10 results x 3 slots


def test_an_empty_evaluation_streams_an_empty_json_list(personas):
    evaluation = build_evaluation(team=personas.team, keywords={}, metrics=[])
    client = APIClient()
    client.force_authenticate(personas.owner)
    _pieces, body = _streamed(client, _url(evaluation, "?format=json"))
    assert body == JSONRenderer().render(exports.judgments_json(evaluation))
    assert json.loads(body)["judgments"] == []


# --- JSON Lines ---------------------------------------------------------------------------


def test_jsonl_is_the_json_exports_judgments_one_a_line(personas, mixed):
    client = APIClient()
    client.force_authenticate(personas.owner)
    whole = client.get(_url(mixed, "?format=json")).json()
    response = client.get(_url(mixed, "?format=jsonl"))
    assert response["Content-Type"] == "application/jsonl; charset=utf-8"
    assert response["X-SearchTweak-Partial"] == "true"
    assert response["Content-Disposition"] == (
        f'attachment; filename="{exports.filename(mixed, "jsonl")}"')
    assert exports.filename(mixed, "jsonl").endswith(".jsonl")
    text = b"".join(response.streaming_content).decode()
    lines = text.splitlines()
    assert len(lines) == 3 * 10 == len(whole["judgments"])
    assert [json.loads(line) for line in lines] == whole["judgments"]
    assert '"keyword":"café"' in text  # UTF-8 kept, compact
    first = json.loads(lines[0])
    assert (first["keyword"], first["doc_id"], first["slot"], first["grader"],
            first["grade"]) == ("Laptop", "d1", 0, "owner", 3)


def test_jsonl_reads_back_with_a_json_lines_reader(personas, mixed):
    client = APIClient()
    client.force_authenticate(personas.owner)
    body = client.get(_url(mixed, "?format=jsonl")).content
    rows = list(map(json.loads, io.StringIO(body.decode())))
    graded = [row for row in rows if row["grade"] is not None]
    assert len(graded) == 11


@pytest.mark.parametrize(("persona", "status"), [
    ("owner", 200), ("admin", 200), ("lead", 200), ("grader", 403), ("outsider", 404),
    (None, 401)])
@pytest.mark.parametrize("query", ["?format=jsonl", "?format=csv", "?format=trec_run"])
def test_each_streamed_export_answers_each_persona_as_the_json_export(personas, mixed,
                                                                       persona, status, query):
    client = APIClient()
    if persona:
        client.force_authenticate(getattr(personas, persona))
    assert client.get(_url(mixed, "?format=json")).status_code == status
    assert client.get(_url(mixed, query)).status_code == status


def test_the_feedback_page_links_the_jsonl_export_beside_the_others(client, personas, mixed):
    client.force_login(personas.lead)
    html = client.get(f"/feedback/evaluations/{mixed.pk}/").content.decode()
    assert f'href="/api/v1/evaluations/{mixed.pk}/judgments/?format=jsonl"' in html
