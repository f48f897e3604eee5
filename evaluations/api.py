"""REST API of endpoints, search models and evaluations (docs/ARCHITECTURE.md, /api/v1/)."""

from typing import Any

from django.core.exceptions import ValidationError
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from evaluations import crypto, selectors, services
from evaluations.models import Endpoint, Evaluation, SearchModel
from metrics import core
from searchtweak import access
from searchtweak.api_pagination import PageNumberPagination, paginated_response
from searchtweak.models import Role, Team, User


def _team_for_create(*, user: User, team_id: Any, minimum_role: str) -> Team:
    """The team named in the request, or the caller's current team; checked before the
    input so a caller without the role learns nothing from validation errors."""
    if team_id is not None:
        try:
            team_id = int(team_id)
        except (TypeError, ValueError):
            raise ValidationError({"team": "must be a team id"}) from None
    return access.team_or_current_access(user=user, team_id=team_id,
                                         minimum_role=minimum_role).team


def _requested_team(request: Request) -> Any:
    # The body may be any JSON (a string, a list): the serializer then answers 400, and
    # the team falls back to the caller's current one meanwhile.
    return request.data.get("team") if isinstance(request.data, dict) else None


def _visible_team_ids(request: Request) -> list[int]:
    ids = access.visible_team_ids(user=request.user)
    wanted = request.query_params.get("team")
    if wanted:
        ids = [team_id for team_id in ids if str(team_id) == wanted]
    return ids


TEAM_PARAM = OpenApiParameter("team", int, description="Only this team's objects.")


# --- endpoints ---------------------------------------------------------------------------


class MapperSerializer(serializers.Serializer):
    documents = serializers.CharField()
    id = serializers.CharField()
    name = serializers.CharField()
    image = serializers.CharField(allow_null=True, required=False, allow_blank=True)
    fields = serializers.DictField(child=serializers.CharField(), required=False)


class EndpointOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    team = serializers.IntegerField(source="team_id")
    name = serializers.CharField()
    url = serializers.CharField()
    method = serializers.CharField()
    headers = serializers.SerializerMethodField(
        help_text="Plain headers, and secret ones masked (••••abcd)."
    )
    secret_header_names = serializers.SerializerMethodField()
    timeout_seconds = serializers.FloatField()
    mapper = MapperSerializer()
    created_at = serializers.DateTimeField()
    archived_at = serializers.DateTimeField(allow_null=True)

    def _secrets(self, endpoint: Endpoint) -> dict[str, str]:
        try:
            return services.endpoint_secret_headers(endpoint=endpoint)
        except crypto.SecretsUnreadable:
            return {}

    def get_headers(self, endpoint: Endpoint) -> dict[str, str]:
        masked = {name: crypto.mask(value) for name, value in self._secrets(endpoint).items()}
        return {**endpoint.headers, **masked}

    def get_secret_header_names(self, endpoint: Endpoint) -> list[str]:
        return sorted(self._secrets(endpoint))


class EndpointInputSerializer(serializers.Serializer):
    team = serializers.IntegerField(required=False)
    name = serializers.CharField(max_length=100)
    url = serializers.CharField(max_length=2000)
    method = serializers.ChoiceField(choices=Endpoint.Method.choices, default="GET")
    headers = serializers.DictField(child=serializers.CharField(allow_blank=True),
                                    required=False)
    secret_headers = serializers.DictField(child=serializers.CharField(allow_blank=True),
                                           required=False,
                                           help_text="Stored encrypted, shown back masked.")
    timeout_seconds = serializers.FloatField(default=10.0)
    mapper = serializers.JSONField()
    archived = serializers.BooleanField(required=False)


class EndpointListApi(APIView):
    # paginated_response answers {count, next, previous, results}; the schema says so.
    pagination_class = PageNumberPagination

    @extend_schema(responses=EndpointOutputSerializer(many=True), parameters=[TEAM_PARAM],
                   operation_id="endpoints_list")
    def get(self, request: Request) -> Response:
        endpoints = Endpoint.objects.filter(team_id__in=_visible_team_ids(request))
        if request.query_params.get("archived") != "true":
            endpoints = endpoints.filter(archived_at=None)
        return paginated_response(self, request, endpoints,
                                  lambda page: EndpointOutputSerializer(page, many=True).data)

    @extend_schema(request=EndpointInputSerializer, responses={201: EndpointOutputSerializer},
                   operation_id="endpoints_create")
    def post(self, request: Request) -> Response:
        team = _team_for_create(user=request.user, team_id=_requested_team(request),
                                minimum_role=Role.ADMIN)
        serializer = EndpointInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = dict(serializer.validated_data)
        data.pop("archived", None)
        data.pop("team", None)
        endpoint = services.endpoint_create(team=team, created_by=request.user, **data)
        return Response(EndpointOutputSerializer(endpoint).data, status=status.HTTP_201_CREATED)


class EndpointDetailApi(APIView):
    @extend_schema(responses=EndpointOutputSerializer, operation_id="endpoints_retrieve")
    def get(self, request: Request, endpoint_id: int) -> Response:
        endpoint = selectors.endpoint_get_for_user(user=request.user, endpoint_id=endpoint_id)
        return Response(EndpointOutputSerializer(endpoint).data)

    @extend_schema(request=EndpointInputSerializer, responses=EndpointOutputSerializer,
                   operation_id="endpoints_partial_update")
    def patch(self, request: Request, endpoint_id: int) -> Response:
        endpoint = selectors.endpoint_get_for_user(user=request.user, endpoint_id=endpoint_id,
                                                   minimum_role=Role.ADMIN)
        serializer = EndpointInputSerializer(data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        changes = dict(serializer.validated_data)
        changes.pop("team", None)
        # Partial: only keys the caller sent, not the serializer's defaults.
        changes = {key: value for key, value in changes.items() if key in request.data}
        endpoint = services.endpoint_update(endpoint=endpoint, **changes)
        return Response(EndpointOutputSerializer(endpoint).data)

    @extend_schema(responses={204: None, 200: EndpointOutputSerializer},
                   operation_id="endpoints_destroy",
                   description="Deletes an unused endpoint (204); archives one that search "
                               "models use and returns it (200).")
    def delete(self, request: Request, endpoint_id: int) -> Response:
        endpoint = selectors.endpoint_get_for_user(user=request.user, endpoint_id=endpoint_id,
                                                   minimum_role=Role.ADMIN)
        if services.endpoint_delete(endpoint=endpoint):
            return Response(status=status.HTTP_204_NO_CONTENT)
        return Response(EndpointOutputSerializer(endpoint).data)


class EndpointRestoreApi(APIView):
    @extend_schema(request=None, responses=EndpointOutputSerializer,
                   operation_id="endpoints_restore",
                   description="Brings an archived endpoint back (admins); a no-op on an "
                               "active one.")
    def post(self, request: Request, endpoint_id: int) -> Response:
        endpoint = selectors.endpoint_get_for_user(user=request.user, endpoint_id=endpoint_id,
                                                   minimum_role=Role.ADMIN)
        endpoint = services.endpoint_restore(endpoint=endpoint)
        return Response(EndpointOutputSerializer(endpoint).data)


# --- search models -----------------------------------------------------------------------


class SearchModelOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    team = serializers.IntegerField(source="team_id")
    endpoint = serializers.IntegerField(source="endpoint_id")
    name = serializers.CharField()
    description = serializers.CharField()
    params = serializers.JSONField()
    body = serializers.CharField(allow_null=True)
    body_format = serializers.CharField()
    headers = serializers.JSONField()
    default_keywords = serializers.SerializerMethodField()
    created_at = serializers.DateTimeField()
    archived_at = serializers.DateTimeField(allow_null=True)

    def get_default_keywords(self, model: SearchModel) -> list[str]:
        return services.keywords_clean(model.default_keywords.splitlines()).keywords


class SearchModelInputSerializer(serializers.Serializer):
    team = serializers.IntegerField(required=False)
    endpoint = serializers.IntegerField()
    name = serializers.CharField(max_length=100)
    description = serializers.CharField(required=False, allow_blank=True, default="")
    params = serializers.JSONField(required=False, default=dict)
    body = serializers.CharField(required=False, allow_null=True, allow_blank=True,
                                 default=None, trim_whitespace=False)
    body_format = serializers.ChoiceField(choices=SearchModel.BodyFormat.choices,
                                          default=SearchModel.BodyFormat.JSON)
    headers = serializers.DictField(child=serializers.CharField(allow_blank=True),
                                    required=False, default=dict)
    default_keywords = serializers.ListField(child=serializers.CharField(max_length=500),
                                             required=False, default=list)
    archived = serializers.BooleanField(required=False)


def _model_changes(request: Request, data: dict[str, Any], team_id: int) -> dict[str, Any]:
    if "endpoint" in data:
        # A foreign or missing endpoint is bad input here, not a missing page.
        endpoint = Endpoint.objects.filter(pk=data["endpoint"], team_id=team_id).first()
        if endpoint is None:
            raise ValidationError({"endpoint": "No such endpoint in this team."})
        data["endpoint"] = endpoint
    if "default_keywords" in data:
        data["default_keywords"] = "\n".join(data["default_keywords"])
    return data


class SearchModelListApi(APIView):
    # paginated_response answers {count, next, previous, results}; the schema says so.
    pagination_class = PageNumberPagination

    @extend_schema(responses=SearchModelOutputSerializer(many=True), parameters=[TEAM_PARAM],
                   operation_id="models_list")
    def get(self, request: Request) -> Response:
        models = SearchModel.objects.filter(team_id__in=_visible_team_ids(request))
        if request.query_params.get("archived") != "true":
            models = models.filter(archived_at=None)
        return paginated_response(self, request, models,
                                  lambda page: SearchModelOutputSerializer(page, many=True).data)

    @extend_schema(request=SearchModelInputSerializer,
                   responses={201: SearchModelOutputSerializer}, operation_id="models_create")
    def post(self, request: Request) -> Response:
        team = _team_for_create(user=request.user, team_id=_requested_team(request),
                                minimum_role=Role.ADMIN)
        serializer = SearchModelInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = dict(serializer.validated_data)
        data.pop("archived", None)
        data.pop("team", None)
        data = _model_changes(request, data, team.pk)
        model = services.search_model_create(team=team, created_by=request.user, **data)
        return Response(SearchModelOutputSerializer(model).data, status=status.HTTP_201_CREATED)


class SearchModelDetailApi(APIView):
    @extend_schema(responses=SearchModelOutputSerializer, operation_id="models_retrieve")
    def get(self, request: Request, model_id: int) -> Response:
        model = selectors.search_model_get_for_user(user=request.user, model_id=model_id)
        return Response(SearchModelOutputSerializer(model).data)

    @extend_schema(request=SearchModelInputSerializer, responses=SearchModelOutputSerializer,
                   operation_id="models_partial_update")
    def patch(self, request: Request, model_id: int) -> Response:
        model = selectors.search_model_get_for_user(user=request.user, model_id=model_id,
                                                    minimum_role=Role.ADMIN)
        serializer = SearchModelInputSerializer(data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        changes = {key: value for key, value in serializer.validated_data.items()
                   if key in request.data and key != "team"}
        changes = _model_changes(request, changes, model.team_id)
        model = services.search_model_update(model=model, **changes)
        return Response(SearchModelOutputSerializer(model).data)

    @extend_schema(responses={204: None, 200: SearchModelOutputSerializer},
                   operation_id="models_destroy",
                   description="Deletes an unused model (204); archives one that evaluations "
                               "use and returns it (200).")
    def delete(self, request: Request, model_id: int) -> Response:
        model = selectors.search_model_get_for_user(user=request.user, model_id=model_id,
                                                    minimum_role=Role.ADMIN)
        if services.search_model_delete(model=model):
            return Response(status=status.HTTP_204_NO_CONTENT)
        return Response(SearchModelOutputSerializer(model).data)


class SearchModelRestoreApi(APIView):
    @extend_schema(request=None, responses=SearchModelOutputSerializer,
                   operation_id="models_restore",
                   description="Brings an archived search model back (admins); 400 while its "
                               "endpoint is archived.")
    def post(self, request: Request, model_id: int) -> Response:
        model = selectors.search_model_get_for_user(user=request.user, model_id=model_id,
                                                    minimum_role=Role.ADMIN)
        model = services.search_model_restore(model=model)
        return Response(SearchModelOutputSerializer(model).data)


class SearchModelTestApi(APIView):
    class InputSerializer(serializers.Serializer):
        query = serializers.CharField(max_length=500)

        class Meta:
            ref_name = "ModelTestInput"  # nested names repeat across apps' schemas

    class OutputSerializer(serializers.Serializer):
        class DocumentSerializer(serializers.Serializer):
            position = serializers.IntegerField()
            doc_id = serializers.CharField()
            name = serializers.CharField()
            image = serializers.CharField()
            fields = serializers.JSONField()

        ok = serializers.BooleanField()
        status_code = serializers.IntegerField(allow_null=True)
        duration_ms = serializers.IntegerField()
        error = serializers.CharField()
        error_field = serializers.CharField(help_text="The mapper field that failed, if any.")
        documents = DocumentSerializer(many=True)
        raw = serializers.CharField(help_text="The response body (first 64 KB).")

        class Meta:
            ref_name = "ModelTestResult"

    @extend_schema(request=InputSerializer, responses=OutputSerializer,
                   operation_id="models_test")
    def post(self, request: Request, model_id: int) -> Response:
        model = selectors.search_model_get_for_user(user=request.user, model_id=model_id,
                                                    minimum_role=Role.LEAD)
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        result = services.search_model_test(model=model, query=serializer.validated_data["query"])
        documents = [{"position": position, "doc_id": doc.doc_id, "name": doc.name,
                      "image": doc.image, "fields": doc.fields}
                     for position, doc in enumerate(result.documents or [], start=1)]
        return Response(self.OutputSerializer({
            "ok": result.ok, "status_code": result.status_code,
            "duration_ms": result.duration_ms, "error": result.error,
            "error_field": result.error_field, "documents": documents, "raw": result.raw,
        }).data)


# --- evaluations -------------------------------------------------------------------------


class MetricConfigSerializer(serializers.Serializer):
    code = serializers.CharField(
        max_length=50, help_text="A metric code, or a name people use for it (P@10, map, "
                                 "ndcg_cut_10), stored as the code.")
    k = serializers.IntegerField(required=False,
                                 help_text="Required unless the code carries it (ndcg@10).")
    params = serializers.JSONField(required=False, default=dict)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        try:
            code, named_k = core.resolve_metric_name(attrs.get("code"))
        except core.MetricInputError as error:
            raise serializers.ValidationError({"code": error.problem}) from None
        k = attrs.get("k", named_k)
        if k is None:
            raise serializers.ValidationError(
                {"k": "This field is required unless the code carries it (e.g. ndcg@10)."})
        if named_k is not None and k != named_k:
            raise serializers.ValidationError(
                {"k": f"{k} differs from the cutoff in code {attrs['code']!r}."})
        return {**attrs, "code": code, "k": k}


class EvaluationOutputSerializer(serializers.Serializer):
    class MetricSerializer(MetricConfigSerializer):
        k = serializers.IntegerField()
        value = serializers.FloatField(allow_null=True)
        keyword_count = serializers.IntegerField()

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
    auto_finish = serializers.BooleanField()
    keyword_count = serializers.IntegerField(source="fetch.total")
    fetch = FetchSerializer(help_text="Keywords fetched / failed / total.")
    metrics = MetricSerializer(many=True)
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    archived_at = serializers.DateTimeField(allow_null=True)


def _evaluation_data(evaluation: Evaluation, *, counted: bool = False) -> dict:
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
    team = serializers.IntegerField(required=False)
    name = serializers.CharField(max_length=200)
    description = serializers.CharField(required=False, allow_blank=True, default="")
    model = serializers.IntegerField()
    scale = serializers.CharField(max_length=50)
    strategy = serializers.IntegerField()
    keywords = serializers.ListField(child=serializers.CharField(max_length=500,
                                                                 allow_blank=True))
    metrics = MetricConfigSerializer(many=True)
    transformers = serializers.JSONField(required=False, default=dict)
    tags = serializers.ListField(child=serializers.CharField(max_length=50), required=False,
                                 default=list)
    guidelines = serializers.CharField(required=False, allow_blank=True, default="")
    reuse_grades = serializers.ChoiceField(choices=Evaluation.Reuse.choices, required=False,
                                           default=Evaluation.Reuse.NONE)
    show_position = serializers.BooleanField(required=False, default=False)
    auto_finish = serializers.BooleanField(required=False, default=True)


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
            Evaluation.objects.filter(team_id__in=_visible_team_ids(request))
        ).prefetch_related("metric_configs")
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
        team = _team_for_create(user=request.user, team_id=_requested_team(request),
                                minimum_role=Role.LEAD)
        serializer = EvaluationInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = dict(serializer.validated_data)
        data.pop("team", None)
        data = _resolve_model(data, team.pk)
        evaluation = services.evaluation_create(team=team, created_by=request.user, **data)
        return Response(_evaluation_data(evaluation), status=status.HTTP_201_CREATED)


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
        serializer = EvaluationInputSerializer(data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        changes = {key: value for key, value in serializer.validated_data.items()
                   if key in request.data and key != "team"}
        changes = _resolve_model(changes, evaluation.team_id)
        evaluation = services.evaluation_update(evaluation=evaluation, **changes)
        return Response(_evaluation_data(evaluation))

    @extend_schema(responses={204: None}, operation_id="evaluations_destroy")
    def delete(self, request: Request, evaluation_id: int) -> Response:
        evaluation = selectors.evaluation_get_for_user(
            user=request.user, evaluation_id=evaluation_id, minimum_role=Role.LEAD)
        services.evaluation_delete(evaluation=evaluation)
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
        clone = services.evaluation_clone(evaluation=evaluation, created_by=request.user,
                                          name=serializer.validated_data.get("name"))
        return Response(_evaluation_data(clone), status=status.HTTP_201_CREATED)


class EvaluationArchiveApi(APIView):
    @extend_schema(request=None, responses=EvaluationOutputSerializer,
                   operation_id="evaluations_archive",
                   description="Hides it from lists and dashboards, keeping everything "
                               "(leads); 400 while fetching.")
    def post(self, request: Request, evaluation_id: int) -> Response:
        evaluation = selectors.evaluation_get_for_user(
            user=request.user, evaluation_id=evaluation_id, minimum_role=Role.LEAD)
        evaluation = services.evaluation_archive(evaluation=evaluation)
        return Response(_evaluation_data(evaluation))


class EvaluationRestoreApi(APIView):
    @extend_schema(request=None, responses=EvaluationOutputSerializer,
                   operation_id="evaluations_restore",
                   description="Brings an archived evaluation back (leads).")
    def post(self, request: Request, evaluation_id: int) -> Response:
        evaluation = selectors.evaluation_get_for_user(
            user=request.user, evaluation_id=evaluation_id, minimum_role=Role.LEAD)
        evaluation = services.evaluation_restore(evaluation=evaluation)
        return Response(_evaluation_data(evaluation))


class _EvaluationActionApi(APIView):
    service = staticmethod(services.evaluation_start)

    def post(self, request: Request, evaluation_id: int) -> Response:
        evaluation = selectors.evaluation_get_for_user(
            user=request.user, evaluation_id=evaluation_id, minimum_role=Role.LEAD)
        evaluation = type(self).service(evaluation=evaluation)
        evaluation.refresh_from_db()
        return Response(_evaluation_data(evaluation))


class EvaluationStartApi(_EvaluationActionApi):
    service = staticmethod(services.evaluation_start)

    @extend_schema(request=None, responses=EvaluationOutputSerializer,
                   operation_id="evaluations_start")
    def post(self, request: Request, evaluation_id: int) -> Response:
        return super().post(request, evaluation_id)


class EvaluationPauseApi(_EvaluationActionApi):
    service = staticmethod(services.evaluation_pause)

    @extend_schema(request=None, responses=EvaluationOutputSerializer,
                   operation_id="evaluations_pause")
    def post(self, request: Request, evaluation_id: int) -> Response:
        return super().post(request, evaluation_id)


class EvaluationFinishApi(_EvaluationActionApi):
    service = staticmethod(services.evaluation_finish)

    @extend_schema(request=None, responses=EvaluationOutputSerializer,
                   operation_id="evaluations_finish")
    def post(self, request: Request, evaluation_id: int) -> Response:
        return super().post(request, evaluation_id)


class EvaluationRetryFailedApi(_EvaluationActionApi):
    service = staticmethod(services.evaluation_retry_failed)

    @extend_schema(request=None, responses=EvaluationOutputSerializer,
                   operation_id="evaluations_retry_failed",
                   description="Fetch the failed keywords again; without any, nothing changes.")
    def post(self, request: Request, evaluation_id: int) -> Response:
        return super().post(request, evaluation_id)
