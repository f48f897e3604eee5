"""REST API of evaluations (docs/ARCHITECTURE.md, /api/v1/); endpoints and search models
are in endpoints.api. The team helpers every API shares are searchtweak.api_shared's."""

from collections.abc import Callable
from typing import Any

from django.core.exceptions import ValidationError
from django.db.models import Prefetch
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

import metrics_engine as core
from evaluations import selectors
from evaluations.api_keywords import KEYWORDS_HELP, keywords_field
from evaluations.events import By
from evaluations.models import Evaluation, EvaluationMetric, KeywordSet, SearchModel
from evaluations.query_sets import services as query_set_services
from evaluations.services import configuration, lifecycle
from searchtweak.api_changes import sent_changes
from searchtweak.api_pagination import PageNumberPagination, paginated_response
from searchtweak.api_shared import (
    TEAM_PARAM,
    body_team,
    create_in_team_response,
    row_step_api,
    visible_team_ids,
)
from searchtweak.integers import api_id, api_integer, bounded
from searchtweak.models import Role, Team

# --- evaluations -------------------------------------------------------------------------


class MetricConfigSerializer(serializers.Serializer):
    """One metric: an object, or its name alone as a string ("ndcg@10" is
    {"code": "ndcg@10"})."""

    code = serializers.CharField(
        max_length=50, help_text="A metric code, or a name people use for it (P@10, map, "
                                 "ndcg_cut_10), stored as the code.")
    k = api_integer(min_value=1, max_value=EvaluationMetric.K_MAX, required=False,
                    help_text="Required unless the code carries it (ndcg@10).")
    params = serializers.JSONField(required=False, default=dict)

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        return super().to_internal_value({"code": data} if isinstance(data, str) else data)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        try:
            code, named_k = core.resolve_metric_name(attrs.get("code"))
        except core.MetricInputError as error:
            raise serializers.ValidationError({"code": error.problem}) from None
        k = attrs.get("k", named_k)
        if k is None:
            raise serializers.ValidationError(
                {"k": "This field is required unless the code carries it (e.g. ndcg@10)."})
        try:
            bounded(k, field="k", min_value=1, max_value=EvaluationMetric.K_MAX)
        except ValidationError as error:
            raise serializers.ValidationError(error.message_dict) from None
        if named_k is not None and k != named_k:
            raise serializers.ValidationError(
                {"k": f"{k} differs from the cutoff in code {attrs['code']!r}."})
        return {**attrs, "code": code, "k": k}


class EvaluationOutputSerializer(serializers.Serializer):
    class MetricSerializer(MetricConfigSerializer):
        k = serializers.IntegerField()
        value = serializers.FloatField(allow_null=True)
        keyword_count = serializers.IntegerField()
        lower = serializers.FloatField(
            allow_null=True, help_text="The mean of the keywords' lower bounds under missing "
            "grades (docs/METRICS.md); every keyword with results counts, graded or not.")
        upper = serializers.FloatField(allow_null=True,
                                       help_text="The mean of the keywords' upper bounds.")
        bounds_exact = serializers.BooleanField(
            help_text="False: some keyword's bounds are wider sound bounds, not exact.")

    class FetchSerializer(serializers.Serializer):
        total = serializers.IntegerField()
        fetched = serializers.IntegerField()
        failed = serializers.IntegerField()
        class ErrorSerializer(serializers.Serializer):
            error = serializers.CharField()
            keyword = serializers.CharField(help_text="The first keyword with this error.")
            keyword_count = serializers.IntegerField()

        pending = serializers.IntegerField()
        percent = serializers.IntegerField()
        all_failed = serializers.BooleanField(help_text="Every keyword failed: nothing to grade.")
        errors = ErrorSerializer(many=True, required=False, help_text=(
            "The first distinct errors of failed keywords (on one evaluation, not in lists)."))

    id = serializers.IntegerField()
    team = serializers.IntegerField(source="team_id")
    model = serializers.IntegerField(source="model_id")
    name = serializers.CharField()
    description = serializers.CharField()
    status = serializers.CharField()
    progress = serializers.FloatField(help_text="Share of feedback slots graded, 0..100.")
    scale = serializers.CharField()
    strategy = serializers.IntegerField()
    transformers = serializers.JSONField()
    tags = serializers.ListField(child=serializers.CharField())
    guidelines = serializers.CharField()
    reuse_grades = serializers.CharField()
    show_position = serializers.BooleanField()
    shuffle_results = serializers.BooleanField()
    grading_order = serializers.CharField()
    gold_rate = serializers.FloatField(
        help_text="Share of each grader's claims that hand out a gold item (0 to 0.5).")
    second_grader_below_gold_bar = serializers.BooleanField(
        help_text="Under strategy 13: a result graded only by graders below the team's gold "
                  "bar gets a further slot.")
    auto_finish = serializers.BooleanField()
    keyword_count = serializers.IntegerField(source="fetch.total")
    fetch = FetchSerializer(help_text="Keywords fetched / failed / total.")
    metrics = MetricSerializer(many=True)
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    archived_at = serializers.DateTimeField(allow_null=True)
    # --- query sets ---
    class QuerySetVersionSerializer(serializers.Serializer):
        id = serializers.IntegerField()
        query_set = serializers.IntegerField(source="query_set_id")
        number = serializers.IntegerField()

        class Meta:
            ref_name = "EvaluationQuerySetVersion"

    query_set_version = QuerySetVersionSerializer(
        allow_null=True, help_text="The query set version whose keywords it was created "
                                   "with; null for typed keywords.")


def _evaluation_data(evaluation: Evaluation, *, counted: bool = False) -> dict:
    if not hasattr(evaluation, "progress"):
        # Not read through a selector (just created or changed by a service).
        evaluation.progress = selectors.evaluation_progress(evaluation_id=evaluation.pk)
    if counted:
        progress = selectors.fetch_progress_counted(evaluation)
        configs = list(evaluation.metric_configs.all())
    else:
        progress = selectors.fetch_progress(evaluation=evaluation)
        configs = selectors.metric_configs_of(evaluation=evaluation)
    evaluation.fetch = {**progress.as_dict(), "all_failed": progress.all_failed}
    if not counted:
        evaluation.fetch["errors"] = [vars(error) for error in selectors.fetch_errors(
            evaluation=evaluation)] if progress.failed else []
    evaluation.metrics = configs
    return EvaluationOutputSerializer(evaluation).data


class EvaluationInputSerializer(serializers.Serializer):
    team = api_id(required=False)
    name = serializers.CharField(max_length=200)
    description = serializers.CharField(required=False, allow_blank=True, default="")
    model = api_id()
    scale = serializers.CharField(max_length=50)
    strategy = api_integer(
        help_text="1 or 3 graders per result, or 13: 1 grader, up to 3 where it matters.")
    keywords = keywords_field(
        required=False, help_text=f"{KEYWORDS_HELP} Required unless query_set is given.")
    # --- query sets ---
    query_set = api_id(
        required=False, help_text="On create, instead of keywords: the id of a query set of "
                                  "the team, whose current version's keywords are used and "
                                  "recorded as query_set_version.")
    metrics = MetricConfigSerializer(many=True)
    transformers = serializers.JSONField(required=False, default=dict)
    tags = serializers.ListField(child=serializers.CharField(max_length=50), required=False,
                                 default=list)
    guidelines = serializers.CharField(required=False, allow_blank=True, default="")
    reuse_grades = serializers.ChoiceField(choices=Evaluation.Reuse.choices, required=False,
                                           default=Evaluation.Reuse.NONE)
    show_position = serializers.BooleanField(required=False, default=False)
    shuffle_results = serializers.BooleanField(
        required=False, default=False,
        help_text="Hand each grader a keyword's results in their own stable random order, "
                  "without the engine's position (not with show_position).")
    grading_order = serializers.ChoiceField(
        choices=Evaluation.GradingOrder.choices, required=False,
        default=Evaluation.GradingOrder.POSITION,
        help_text="position: keyword then position order; decisive: first the top results "
                  "of the keywords with the widest bounds of the first metric (not with "
                  "shuffle_results).")
    gold_rate = serializers.FloatField(
        required=False, default=0.05, min_value=0, max_value=0.5,
        help_text="Share of each grader's claims that hand out one of the team's gold items "
                  "(results with a known answer, graded to measure the grader, never counted "
                  "in metrics): 0 to 0.5, default 0.05.")
    second_grader_below_gold_bar = serializers.BooleanField(
        required=False, default=False,
        help_text="Strategy 13 only: a result graded only by graders below the team's gold "
                  "bar (accuracy on its gold items) gets a further slot, up to 3.")
    auto_finish = serializers.BooleanField(required=False, default=True)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if self.partial:
            return attrs
        if "keywords" in attrs and "query_set" in attrs:
            raise serializers.ValidationError(
                {"query_set": "Give keywords or query_set, not both."})
        if "keywords" not in attrs and "query_set" not in attrs:
            raise serializers.ValidationError({"keywords": "This field is required."})
        return attrs


def _evaluation_create(request: Request, team: Team, data: dict[str, Any]) -> Evaluation:
    """With `query_set`: its current version's keywords (the query set services)."""
    data = _resolve_model(data, team.pk)
    if "query_set" not in data:
        return configuration.evaluation_create(team=team, created_by=request.user, **data)
    query_set = KeywordSet.objects.filter(pk=data.pop("query_set"), team_id=team.pk).first()
    if query_set is None:
        raise ValidationError({"query_set": "No such query set in this team."})
    return query_set_services.evaluation_create_from_query_set(
        query_set=query_set, team=team, created_by=request.user, **data)


def _resolve_model(data: dict[str, Any], team_id: int) -> dict[str, Any]:
    if "model" in data:
        model = SearchModel.objects.filter(pk=data["model"], team_id=team_id).first()
        if model is None:
            raise ValidationError({"model": "No such search model in this team."})
        data["model"] = model
    if "metrics" in data:
        data["metrics"] = [dict(item) for item in data["metrics"]]
    return data


class EvaluationListApi(APIView):
    # paginated_response answers {count, next, previous, results}; the schema says so.
    pagination_class = PageNumberPagination

    @extend_schema(responses=EvaluationOutputSerializer(many=True),
                   parameters=[TEAM_PARAM, OpenApiParameter("status", str)],
                   operation_id="evaluations_list")
    def get(self, request: Request) -> Response:
        evaluations = selectors.evaluations_with_counts(
            Evaluation.objects.filter(team_id__in=visible_team_ids(request))
        ).prefetch_related(Prefetch("metric_configs",
                                    queryset=EvaluationMetric.objects.with_stored_mean())
                           ).select_related("query_set_version")
        if request.query_params.get("status"):
            evaluations = evaluations.filter(status=request.query_params["status"])
        if request.query_params.get("archived") != "true":
            evaluations = evaluations.filter(archived_at=None)
        return paginated_response(
            self, request, evaluations,
            lambda page: [_evaluation_data(evaluation, counted=True) for evaluation in page])

    @extend_schema(request=EvaluationInputSerializer,
                   responses={201: EvaluationOutputSerializer}, operation_id="evaluations_create")
    def post(self, request: Request) -> Response:
        return create_in_team_response(
            request, team=body_team(request, minimum_role=Role.LEAD),
            input_serializer=EvaluationInputSerializer,
            create=lambda team, data: _evaluation_create(request, team, data),
            output=_evaluation_data)


class EvaluationDetailApi(APIView):
    @extend_schema(responses=EvaluationOutputSerializer, operation_id="evaluations_retrieve")
    def get(self, request: Request, evaluation_id: int) -> Response:
        evaluation = selectors.evaluation_get_for_user(user=request.user,
                                                       evaluation_id=evaluation_id)
        return Response(_evaluation_data(evaluation))

    @extend_schema(request=EvaluationInputSerializer, responses=EvaluationOutputSerializer,
                   operation_id="evaluations_partial_update")
    def patch(self, request: Request, evaluation_id: int) -> Response:
        evaluation = selectors.evaluation_get_for_user(
            user=request.user, evaluation_id=evaluation_id, minimum_role=Role.LEAD)
        changes = sent_changes(EvaluationInputSerializer, request)
        changes = _resolve_model(changes, evaluation.team_id)
        evaluation = configuration.evaluation_update(evaluation=evaluation, **changes)
        return Response(_evaluation_data(evaluation))

    @extend_schema(responses={204: None}, operation_id="evaluations_destroy")
    def delete(self, request: Request, evaluation_id: int) -> Response:
        evaluation = selectors.evaluation_get_for_user(
            user=request.user, evaluation_id=evaluation_id, minimum_role=Role.LEAD)
        lifecycle.evaluation_delete(evaluation=evaluation, user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class EvaluationCloneApi(APIView):
    class InputSerializer(serializers.Serializer):
        name = serializers.CharField(max_length=200, required=False,
                                     help_text='Default: "<name> (copy)".')

        class Meta:
            ref_name = "EvaluationCloneInput"

    @extend_schema(request=InputSerializer, responses={201: EvaluationOutputSerializer},
                   operation_id="evaluations_clone",
                   description="A new pending evaluation with the same model, keywords, "
                               "metrics and settings; nothing fetched or graded (leads).")
    def post(self, request: Request, evaluation_id: int) -> Response:
        evaluation = selectors.evaluation_get_for_user(
            user=request.user, evaluation_id=evaluation_id, minimum_role=Role.LEAD)
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        clone = configuration.evaluation_clone(evaluation=evaluation, created_by=request.user,
                                               name=serializer.validated_data.get("name"))
        return Response(_evaluation_data(clone), status=status.HTTP_201_CREATED)


def _led_evaluation(request: Request, evaluation_id: int) -> Evaluation:
    return selectors.evaluation_get_for_user(user=request.user, evaluation_id=evaluation_id,
                                             minimum_role=Role.LEAD)


def _fetching_step(service: Callable[..., Evaluation]
                   ) -> Callable[[Evaluation, Request], Evaluation]:
    """A fetching action, then the status its tasks left (they may have run already,
    eagerly, without a broker)."""
    def step(evaluation: Evaluation, request: Request) -> Evaluation:
        evaluation = service(evaluation=evaluation, by=By.API, user=request.user)
        evaluation.refresh_from_db()
        return evaluation
    return step


EvaluationArchiveApi = row_step_api(
    "EvaluationArchiveApi", load=_led_evaluation,
    step=lambda evaluation, request: lifecycle.evaluation_archive(
        evaluation=evaluation, by=By.API, user=request.user),
    output=_evaluation_data, request=None, responses=EvaluationOutputSerializer,
    operation_id="evaluations_archive",
    description="Hides it from lists and dashboards, keeping everything (leads); 400 while "
                "fetching.")

EvaluationRestoreApi = row_step_api(
    "EvaluationRestoreApi", load=_led_evaluation,
    step=lambda evaluation, request: lifecycle.evaluation_restore(
        evaluation=evaluation, by=By.API, user=request.user),
    output=_evaluation_data, request=None, responses=EvaluationOutputSerializer,
    operation_id="evaluations_restore", description="Brings an archived evaluation back (leads).")

EvaluationStartApi = row_step_api(
    "EvaluationStartApi", load=_led_evaluation, step=_fetching_step(lifecycle.evaluation_start),
    output=_evaluation_data, request=None, responses=EvaluationOutputSerializer,
    operation_id="evaluations_start")

EvaluationPauseApi = row_step_api(
    "EvaluationPauseApi", load=_led_evaluation, step=_fetching_step(lifecycle.evaluation_pause),
    output=_evaluation_data, request=None, responses=EvaluationOutputSerializer,
    operation_id="evaluations_pause")

EvaluationFinishApi = row_step_api(
    "EvaluationFinishApi", load=_led_evaluation,
    step=_fetching_step(lifecycle.evaluation_finish), output=_evaluation_data, request=None,
    responses=EvaluationOutputSerializer, operation_id="evaluations_finish")

EvaluationRetryFailedApi = row_step_api(
    "EvaluationRetryFailedApi", load=_led_evaluation,
    step=_fetching_step(lifecycle.evaluation_retry_failed), output=_evaluation_data,
    request=None, responses=EvaluationOutputSerializer, operation_id="evaluations_retry_failed",
    description="Fetch the failed keywords again; without any, nothing changes.")
