"""The keyword metric table of an evaluation as CSV (the exports beside judgments')."""

from collections.abc import Iterator
from itertools import islice

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.views import APIView

import metrics_engine as core
from evaluations.models import Evaluation
from evaluations.selectors import evaluation_get_for_user
from metrics.selectors import evaluation_keywords, evaluation_metric_configs, keyword_rows
from searchtweak.api_files import FileContentNegotiation, FileStreamResponse
from searchtweak.csv_cells import csv_lines

# Keywords read, and their values looked up, at a time: the table streams in these pages.
KEYWORD_PAGE = 1000


def metric_label(code: str, k: int, params: dict) -> str:
    return core.metric_column(code, k, params)


def metric_table_csv_stream(evaluation: Evaluation, *, with_bounds: bool = False
                            ) -> Iterator[str]:
    """`keyword,<code@k>...`: one line per keyword in order, an empty cell for null. With
    bounds, each metric's column is followed by `<code@k> lower`, `<code@k> upper` and
    `<code@k> exact` (docs/METRICS.md "Bounds under missing grades"): empty before the
    keyword's first recompute or where the bounds are null. Read KEYWORD_PAGE keywords at a
    time, so 100,000 keywords stream in the memory of one page."""
    configs = evaluation_metric_configs(evaluation_id=evaluation.pk)
    header = ["keyword"]
    for config in configs:
        label = metric_label(config.code, config.k, config.params)
        header += [label, f"{label} lower", f"{label} upper", f"{label} exact"] \
            if with_bounds else [label]

    def cells(row) -> list[str]:
        line = [row.keyword.text]
        for value, bounds in row.cells:
            line.append(_number(value))
            if with_bounds:
                known = bounds.lower is not None
                line += [_number(bounds.lower), _number(bounds.upper),
                         ("true" if bounds.exact else "false") if known else ""]
        return line

    def rows() -> Iterator[list[str]]:
        yield header
        keywords = evaluation_keywords(evaluation_id=evaluation.pk).iterator(
            chunk_size=KEYWORD_PAGE)
        while page := list(islice(keywords, KEYWORD_PAGE)):
            for row in keyword_rows(evaluation=evaluation, keywords=page):
                yield cells(row)

    return csv_lines(rows())


def metric_table_csv(evaluation: Evaluation, *, with_bounds: bool = False) -> str:
    return "".join(metric_table_csv_stream(evaluation, with_bounds=with_bounds))


def _number(value: float | None) -> str:
    return "" if value is None else repr(value)


class _TableOptions(serializers.Serializer):
    bounds = serializers.BooleanField(
        default=False, help_text="Add each metric's bounds under missing grades: `lower`, "
        "`upper` and `exact` columns after its value.")


class EvaluationMetricTableApi(APIView):
    content_negotiation_class = FileContentNegotiation

    @extend_schema(
        parameters=[_TableOptions],
        responses={(200, "text/csv"): OpenApiTypes.STR},
        operation_id="evaluations_metric_table",
        description=(
            "The keyword metric table as CSV: `keyword` and one column per configured metric "
            "(`code@k`, params in brackets), an empty cell for a null value; with "
            "`bounds=true`, each followed by its bounds under missing grades (`code@k lower`, "
            "`code@k upper`, `code@k exact`: `false` where wider sound bounds stand in). Header "
            "`X-SearchTweak-Partial: true` while the evaluation is not finished."
        ),
    )
    def get(self, request: Request, evaluation_id: int) -> FileStreamResponse:
        evaluation = evaluation_get_for_user(user=request.user, evaluation_id=evaluation_id)
        options = _TableOptions(data=request.query_params)
        options.is_valid(raise_exception=True)
        response = FileStreamResponse(
            metric_table_csv_stream(evaluation, with_bounds=options.validated_data["bounds"]),
            content_type="text/csv; charset=utf-8",
            filename=f"evaluation-{evaluation.pk}-metrics.csv")
        response["X-SearchTweak-Partial"] = (
            "false" if evaluation.status == Evaluation.Status.FINISHED else "true")
        return response
