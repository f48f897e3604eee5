"""A clicks run's learned grades with their evidence, as CSV or JSON Lines (the run's and
the calibration page link them): whoever may see the run may download them."""

import json
from collections.abc import Iterable, Iterator
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.views.decorators.http import require_GET

from behaviour import evidence
from judges import run_selectors
from searchtweak.csv_cells import csv_lines

CONTENT_TYPES = {"csv": "text/csv; charset=utf-8", "jsonl": "application/x-ndjson"}


@require_GET
@login_required
def run_learned_export(request: HttpRequest, run_id: int, fmt: str) -> HttpResponse:
    """Every learned grade of the run, one line each, streamed (a header line only, or
    nothing, for a run of a judge that learns nothing from clicks)."""
    run = run_selectors.run_get_for_user(user=request.user, run_id=run_id)
    records = evidence.export_records(run=run)
    if fmt == "csv":
        lines = csv_lines(_csv_rows(records))
    else:
        lines = (json.dumps(record, ensure_ascii=False) + "\n" for record in records)
    response = StreamingHttpResponse(lines, content_type=CONTENT_TYPES[fmt])
    response["Content-Disposition"] = (
        f'attachment; filename="judge-run-{run.pk}-learned.{fmt}"')
    return response


def _csv_rows(records: Iterable[dict[str, Any]]) -> Iterator[list]:
    yield list(evidence.EXPORT_FIELDS)
    for record in records:
        yield [record[field] for field in evidence.EXPORT_FIELDS]
