"""The keyword metric table of an evaluation as CSV (the exports beside judgments'), or its
segment means: one row per metric, segment and weighting; and the evaluation as an
Elasticsearch `_rank_eval` body (metrics.rank_eval)."""

import json
from collections.abc import Iterator
from itertools import islice

from django.utils import timezone
from django.utils.text import slugify
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.views import APIView

import metrics_engine as core
from audit.models import Action
from audit.services import audit_record
from evaluations.models import Evaluation
from evaluations.selectors import evaluation_get_for_user
from metrics.rank_eval import rank_eval_body
from metrics.reports.segments import segment_means_of
from metrics.selectors import (
    evaluation_keywords,
    evaluation_metric_configs,
    keyword_rows,
    metric_configs,
)
from searchtweak import access
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


SEGMENT_HEADER = ["metric", "segment", "weighted", "value", "keyword_count", "weight_sum",
                  "lower", "upper", "bounds_exact"]


def segment_table_csv_stream(evaluation: Evaluation) -> Iterator[str]:
    """`metric,segment,weighted,value,keyword_count,weight_sum,lower,upper,bounds_exact`:
    each metric's stored mean over every keyword (segment empty) and over each tag's
    keywords, plain (`weighted` false) then weighted by traffic; metrics in their order,
    segments as the dashboard lists them (docs/METRICS.md, "Weighted means and segments").
    Empty cells for null; `weight_sum` is Σ weight over the keywords with a value (their
    count when plain). Two queries at any size."""
    configs = metric_configs(evaluation.pk)
    means = segment_means_of(configs)

    def rows() -> Iterator[list[str]]:
        yield SEGMENT_HEADER
        for config in configs:
            label = metric_label(config.code, config.k, config.params)
            for segment in ["", *means.tags]:
                for weighted in (False, True):
                    mean = means.means.get((config.pk, segment, weighted))
                    if mean is None:
                        continue
                    yield [label, segment, _boolean(weighted), _number(mean.value),
                           str(mean.keyword_count), str(mean.weight_sum), _number(mean.lower),
                           _number(mean.upper), _boolean(mean.bounds_exact)]

    return csv_lines(rows())


def _boolean(value: bool) -> str:
    return "true" if value else "false"


def _number(value: float | None) -> str:
    return "" if value is None else repr(value)


class _TableOptions(serializers.Serializer):
    bounds = serializers.BooleanField(
        default=False, help_text="Add each metric's bounds under missing grades: `lower`, "
        "`upper` and `exact` columns after its value.")
    segments = serializers.BooleanField(
        default=False, help_text="Instead of one line per keyword, the segment means: one "
        "line per metric, segment (empty: every keyword; else a tag) and weighting, with "
        "`value`, `keyword_count`, `weight_sum`, `lower`, `upper` and `bounds_exact`.")


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
            "`code@k upper`, `code@k exact`: `false` where wider sound bounds stand in). With "
            "`segments=true`, the segment means instead: `metric,segment,weighted,value,"
            "keyword_count,weight_sum,lower,upper,bounds_exact`, one line per metric, segment "
            "(empty: every keyword) and weighting. Header `X-SearchTweak-Partial: true` while "
            "the evaluation is not finished."
        ),
    )
    def get(self, request: Request, evaluation_id: int) -> FileStreamResponse:
        # The dashboard's table as a file: what a viewer reads on the page.
        evaluation = evaluation_get_for_user(user=request.user, evaluation_id=evaluation_id,
                                             minimum_role=access.READS_ROLE)
        options = _TableOptions(data=request.query_params)
        options.is_valid(raise_exception=True)
        if options.validated_data["segments"]:
            lines = segment_table_csv_stream(evaluation)
            filename = f"evaluation-{evaluation.pk}-segments.csv"
        else:
            lines = metric_table_csv_stream(evaluation,
                                            with_bounds=options.validated_data["bounds"])
            filename = f"evaluation-{evaluation.pk}-metrics.csv"
        audit_record(action=Action.EXPORT_DOWNLOADED, actor=request.user,
                     team_id=evaluation.team_id, object_type="evaluation",
                     object_id=evaluation.pk, after={"format": "metric_table_csv"})
        response = FileStreamResponse(lines, content_type="text/csv; charset=utf-8",
                                      filename=filename)
        response["X-SearchTweak-Partial"] = (
            "false" if evaluation.status == Evaluation.Status.FINISHED else "true")
        return response


class _RankEvalOptions(serializers.Serializer):
    metric = serializers.CharField(
        required=False, allow_blank=True, help_text="One of the evaluation's metrics as "
        "code@k (`ndcg@10`); default the first Elasticsearch has.")
    index = serializers.CharField(
        required=False, allow_blank=True, max_length=255, help_text="The index each rating "
        "names; default the one in the endpoint's URL (`/<index>/_search`).")
    field = serializers.CharField(
        required=False, allow_blank=True, max_length=255, default="title", help_text="For a "
        "model whose endpoint is not Elasticsearch's _search: the field the match query "
        "searches.")


class EvaluationRankEvalApi(APIView):
    content_negotiation_class = FileContentNegotiation

    @extend_schema(
        parameters=[_RankEvalOptions],
        responses={(200, "application/json"): OpenApiTypes.OBJECT},
        operation_id="evaluations_rank_eval",
        description=(
            "The evaluation as the body of an Elasticsearch `_rank_eval` request for one of "
            "its metrics (Elasticsearch takes one a body): `requests` (one a keyword with "
            "graded results: `id` the keyword, `request` the model's JSON body with the "
            "keyword in it when the endpoint is Elasticsearch's `_search`, else `template_id` "
            "and `params` of a `match` query on `field`), `ratings` (`_index`, `_id`, "
            "`rating`: the aggregate grade rounded half up) and `metric`: precision → "
            "`precision` (ignore_unlabeled), recall → `recall`, rr → `mean_reciprocal_rank`, "
            "dcg/ndcg → `dcg` (normalize), err → `expected_reciprocal_rank`. Where "
            "Elasticsearch computes differently, header `X-SearchTweak-Notes` says how. 400 "
            "on `metric` for a metric it lacks, on `index` when none is known."),
    )
    def get(self, request: Request, evaluation_id: int) -> FileStreamResponse:
        # The ratings are every grade's aggregate: for those who see everyone's grades.
        evaluation = evaluation_get_for_user(user=request.user, evaluation_id=evaluation_id,
                                             minimum_role=access.GRADES_ROLE)
        options = _RankEvalOptions(data=request.query_params)
        options.is_valid(raise_exception=True)
        data = options.validated_data
        made = rank_eval_body(evaluation, metric=data.get("metric"), index=data.get("index"),
                              field_name=data["field"])
        name = slugify(evaluation.name)[:60].strip("-") or str(evaluation.pk)
        audit_record(action=Action.EXPORT_DOWNLOADED, actor=request.user,
                     team_id=evaluation.team_id, object_type="evaluation",
                     object_id=evaluation.pk,
                     after={"format": "rank_eval", "metric": made.metric_label})
        response = FileStreamResponse(
            iter([json.dumps(made.body, ensure_ascii=False, indent=1) + "\n"]),
            content_type="application/json", disposition="attachment",
            filename=f"searchtweak-{name}-rank-eval-{made.metric_label.replace('@', '-at-')}-"
                     f"{timezone.localdate():%Y%m%d}.json")
        response["X-SearchTweak-Partial"] = (
            "false" if evaluation.status == Evaluation.Status.FINISHED else "true")
        if made.notes:
            response["X-SearchTweak-Notes"] = " ".join(made.notes)
        return response
