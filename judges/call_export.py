"""A judge's call log as JSON Lines: one object per call, the same fields for the page's
export and the API's. The request is stored redacted (judges.core.redaction), so nothing
here has to hide a key."""

import json
from collections.abc import Iterable, Iterator
from typing import Any

from django.db.models import QuerySet

from judges.models import JudgeCall

JSONL_CONTENT_TYPE = "application/x-ndjson"
CALL_FIELDS = ("id", "run", "status", "http_status", "started_at", "latency_ms", "tokens_in",
               "tokens_out", "pair_count", "request", "answer", "error", "is_test")
# Rows fetched per round trip while streaming: a long log never sits in memory whole.
CHUNK_SIZE = 500


def call_record(call: JudgeCall) -> dict[str, Any]:
    return {
        "id": call.pk, "run": call.run_id, "status": call.status,
        "http_status": call.http_status, "started_at": call.started_at.isoformat(),
        "latency_ms": call.latency_ms, "tokens_in": call.tokens_in,
        "tokens_out": call.tokens_out, "pair_count": call.pair_count,
        "request": call.request, "answer": call.answer, "error": call.error,
        "is_test": call.is_test,
    }


def calls_jsonl(calls: QuerySet[JudgeCall] | Iterable[JudgeCall]) -> Iterator[str]:
    """One line per call, streamed in chunks."""
    rows = calls.iterator(chunk_size=CHUNK_SIZE) if isinstance(calls, QuerySet) else calls
    for call in rows:
        yield json.dumps(call_record(call), ensure_ascii=False) + "\n"


def export_filename(judge_id: int) -> str:
    return f"judge-{judge_id}-calls.jsonl"
