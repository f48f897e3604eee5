"""An evaluation's online metrics from one of its team's behaviour sources, over a window:
the figures the dashboard's "What users did" panel shows (JSON), and one line per keyword
as CSV, the dashboard's export; of every keyword, or of a segment's (`segment`: a tag
some of the evaluation's keywords carry, as the dashboard's segment selector). Every
member of the team reads."""

from collections.abc import Iterator
from datetime import date

from django.db.models import QuerySet
from django.http import Http404
from django.utils.text import slugify
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from behaviour.api import K_MAX, K_PARAM
from behaviour.core.online import online_metrics
from behaviour.models import BehaviourSource
from behaviour.selectors import KEYWORD_CHUNK, keyword_behaviours
from behaviour.summary import online_summary
from evaluations.models import Evaluation, Keyword
from evaluations.selectors import evaluation_get_for_user
from metrics.queries import Tagged
from searchtweak import access
from searchtweak.api_files import FileContentNegotiation, FileStreamResponse
from searchtweak.csv_cells import csv_lines
from searchtweak.integers import bounded

WINDOW_PARAMS = [
    OpenApiParameter("start_on", OpenApiTypes.DATE, description="First day of the window "
                     "(included); without start_on and end_on, the source's whole log."),
    OpenApiParameter("end_on", OpenApiTypes.DATE, description="Last day (included)."),
    K_PARAM,
    OpenApiParameter("segment", str, description="A tag: the figures of the evaluation's "
                     "keywords carrying it (a tag none carries is refused); without it, "
                     "every keyword's.")]
CSV_HEADER = ["keyword", "impressions", "clicks", "ctr_at_k", "first_click_rr",
              "abandonment", "mean_dwell_seconds", "searches"]


class _Window(serializers.Serializer):
    start_on = serializers.DateField(required=False)
    end_on = serializers.DateField(required=False)
    segment = serializers.CharField(required=False, max_length=100)

    def validate(self, data: dict) -> dict:
        if data.get("start_on") and data.get("end_on") and data["start_on"] > data["end_on"]:
            raise serializers.ValidationError({"end_on": "The window ends before it starts."})
        return data


def _read(request: Request, source_id: int, evaluation_id: int
          ) -> tuple[BehaviourSource, Evaluation, date | None, date | None, int, str,
                     QuerySet[Keyword]]:
    """The source, the evaluation, the window, k, the segment ("" for none) and the
    keywords it counts."""
    source = access.row_get_for_user(BehaviourSource.objects.all(), user=request.user,
                                     pk=source_id, what="behaviour source")
    evaluation = evaluation_get_for_user(user=request.user, evaluation_id=evaluation_id)
    if evaluation.team_id != source.team_id:
        # Both the caller's, but a source speaks for its own team's keywords only.
        raise Http404("No such evaluation.")
    window = _Window(data=request.query_params)
    window.is_valid(raise_exception=True)
    k = bounded(request.query_params.get("k", "10"), field="k", min_value=1, max_value=K_MAX)
    segment = window.validated_data.get("segment", "")
    keywords = evaluation.keywords.all()
    if segment:
        keywords = keywords.filter(Tagged(segment))
        if not keywords.exists():
            raise serializers.ValidationError({"segment": [
                f"No keyword of this evaluation carries the tag “{segment}”."]})
    return (source, evaluation, window.validated_data.get("start_on"),
            window.validated_data.get("end_on"), k, segment, keywords)


class OnlineFiguresSerializer(serializers.Serializer):
    source = serializers.IntegerField()
    evaluation = serializers.IntegerField()
    start_on = serializers.DateField(allow_null=True)
    end_on = serializers.DateField(allow_null=True)
    k = serializers.IntegerField()
    segment = serializers.CharField(help_text="The tag whose keywords these are; \"\": "
                                              "every keyword.")
    keywords_with_behaviour = serializers.IntegerField()
    searches = serializers.IntegerField()
    impressions = serializers.IntegerField()
    clicks = serializers.IntegerField()
    ctr_at_k = serializers.FloatField(allow_null=True, help_text="Pooled over impressions.")
    mean_ctr_at_k = serializers.FloatField(allow_null=True,
                                           help_text="Each keyword counting once.")
    ctr_by_position = serializers.ListField(child=serializers.FloatField(allow_null=True))
    first_click_rr = serializers.FloatField(allow_null=True)
    abandonment = serializers.FloatField(allow_null=True)
    mean_dwell_seconds = serializers.FloatField(allow_null=True)

    class Meta:
        ref_name = "BehaviourEvaluationOnline"


class EvaluationOnlineApi(APIView):
    @extend_schema(parameters=WINDOW_PARAMS, responses=OnlineFiguresSerializer,
                   operation_id="behaviour_source_evaluation_online",
                   description="The evaluation's online metrics from the source over the "
                               "window, pooled over its keywords' searches (docs/METRICS.md, "
                               "online metrics); nulls where a figure is undefined.")
    def get(self, request: Request, source_id: int, evaluation_id: int) -> Response:
        source, evaluation, start_on, end_on, k, segment, keywords = _read(
            request, source_id, evaluation_id)
        found = online_summary(source=source, k=k, start_on=start_on, end_on=end_on,
                               keyword_texts=keywords.values("normalized_text"))
        pooled = found.pooled
        return Response(OnlineFiguresSerializer({
            "source": source.pk, "evaluation": evaluation.pk, "start_on": start_on,
            "end_on": end_on, "k": k, "segment": segment,
            "keywords_with_behaviour": found.keywords_with_behaviour,
            "searches": pooled.searches if pooled else 0, "impressions": found.impressions,
            "clicks": found.clicks, "ctr_at_k": pooled and pooled.ctr_at_k,
            "mean_ctr_at_k": found.mean_ctr_at_k,
            "ctr_by_position": pooled.ctr_by_position if pooled else [],
            "first_click_rr": pooled and pooled.first_click_rr,
            "abandonment": pooled and pooled.abandonment,
            "mean_dwell_seconds": pooled and pooled.mean_dwell_seconds}).data)


def online_csv_stream(*, source: BehaviourSource, evaluation: Evaluation, k: int,
                      start_on: date | None, end_on: date | None,
                      keywords: QuerySet[Keyword] | None = None) -> Iterator[str]:
    """One line per keyword of the evaluation (or of `keywords`, some of them), in its
    order; empty cells where a figure is undefined or the keyword has no behaviour in the
    window. Read KEYWORD_CHUNK keywords at a time (three statements each), so 100,000
    keywords stream in the memory of one chunk."""
    def rows() -> Iterator[list[str]]:
        yield CSV_HEADER
        texts = (evaluation.keywords.all() if keywords is None else keywords).order_by(
            "position").values_list("text", "normalized_text")
        for start in range(0, texts.count(), KEYWORD_CHUNK):
            chunk = list(texts[start:start + KEYWORD_CHUNK])
            found = keyword_behaviours(source=source, keywords=[n for _t, n in chunk],
                                       start_on=start_on, end_on=end_on)
            for text, normalized in chunk:
                behaviour = found.get(normalized)
                if behaviour is None:
                    yield [text, "0", "0", "", "", "", "", "0"]
                    continue
                metrics = online_metrics(behaviour, k=k)
                yield [text, str(int(behaviour.impressions.sum())),
                       str(int(behaviour.clicks.sum())), _number(metrics.ctr_at_k),
                       _number(metrics.first_click_rr), _number(metrics.abandonment),
                       _number(metrics.mean_dwell_seconds), str(metrics.searches)]

    return csv_lines(rows())


def _number(value: float | None) -> str:
    return "" if value is None else repr(value)


class EvaluationOnlineCsvApi(APIView):
    content_negotiation_class = FileContentNegotiation

    @extend_schema(parameters=WINDOW_PARAMS, responses={(200, "text/csv"): OpenApiTypes.STR},
                   operation_id="behaviour_source_evaluation_online_csv",
                   description="The evaluation's online metrics per keyword as CSV: "
                               f"`{','.join(CSV_HEADER)}`, keywords in the evaluation's "
                               "order, empty cells where a figure is undefined.")
    def get(self, request: Request, source_id: int, evaluation_id: int) -> FileStreamResponse:
        source, evaluation, start_on, end_on, k, _segment, keywords = _read(
            request, source_id, evaluation_id)
        name = slugify(evaluation.name) or f"evaluation-{evaluation.pk}"
        return FileStreamResponse(
            online_csv_stream(source=source, evaluation=evaluation, k=k, start_on=start_on,
                              end_on=end_on, keywords=keywords),
            content_type="text/csv; charset=utf-8", filename=f"{name}-online.csv")
