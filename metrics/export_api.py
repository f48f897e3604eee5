"""The keyword metric table of an evaluation as CSV (the exports beside judgments')."""

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.views import APIView

from evaluations.models import Evaluation
from evaluations.selectors import evaluation_get_for_user
from metrics import core
from metrics.selectors import evaluation_keywords, evaluation_metric_configs, keyword_rows
from searchtweak.api_files import FileContentNegotiation
from searchtweak.csv_cells import csv_text


def metric_label(code: str, k: int, params: dict) -> str:
    return core.metric_column(code, k, params)


def metric_table_csv(evaluation: Evaluation) -> str:
    """`keyword,<code@k>...`: one line per keyword in order, an empty cell for null."""
    configs = evaluation_metric_configs(evaluation_id=evaluation.pk)
    keywords = list(evaluation_keywords(evaluation_id=evaluation.pk))
    return csv_text([
        ["keyword", *(metric_label(c.code, c.k, c.params) for c in configs)],
        *([row.keyword.text, *("" if v is None else repr(v) for v in row.values)]
          for row in keyword_rows(evaluation=evaluation, keywords=keywords)),
    ])


class EvaluationMetricTableApi(APIView):
    content_negotiation_class = FileContentNegotiation

    @extend_schema(
        responses={(200, "text/csv"): OpenApiTypes.STR},
        operation_id="evaluations_metric_table",
        description=(
            "The keyword metric table as CSV: `keyword` and one column per configured metric "
            "(`code@k`, params in brackets), an empty cell for a null value. Header "
            "`X-SearchTweak-Partial: true` while the evaluation is not finished."
        ),
    )
    def get(self, request: Request, evaluation_id: int) -> HttpResponse:
        evaluation = evaluation_get_for_user(user=request.user, evaluation_id=evaluation_id)
        response = HttpResponse(metric_table_csv(evaluation),
                                content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = (
            f'attachment; filename="evaluation-{evaluation.pk}-metrics.csv"')
        response["X-SearchTweak-Partial"] = (
            "false" if evaluation.status == Evaluation.Status.FINISHED else "true")
        return response
