"""REST API of endpoints and search models (docs/ARCHITECTURE.md, /api/v1/)."""

from typing import Any

from django.core.exceptions import ValidationError
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.exceptions import Throttled
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from evaluations import crypto, selectors
from evaluations.endpoints import services
from evaluations.endpoints.services import LIMIT_MAXIMUMS
from evaluations.models import Endpoint, SearchModel
from evaluations.services import keywords as keyword_services
from searchtweak.api_changes import sent_changes
from searchtweak.api_pagination import PageNumberPagination, paginated_response
from searchtweak.api_shared import (
    TEAM_PARAM,
    body_team,
    create_in_team_response,
    delete_or_keep_response,
    row_step_api,
    visible_team_ids,
)
from searchtweak.integers import api_id
from searchtweak.models import Role
from searchtweak.outbound_limits import TestsBusy

# --- endpoints ---------------------------------------------------------------------------


class MapperSerializer(serializers.Serializer):
    documents = serializers.CharField()
    id = serializers.CharField()
    name = serializers.CharField()
    image = serializers.CharField(allow_null=True, required=False, allow_blank=True)
    fields = serializers.DictField(child=serializers.CharField(), required=False)


class _ConfigurationHidingSerializer(serializers.Serializer):
    """Leaves out CONFIGURATION_FIELDS for a row of a team outside the context's
    `configuration_team_ids` (selectors.CONFIGURATION_ROLE); without that context the caller
    has already been let in with that role and every field is shown."""

    CONFIGURATION_FIELDS: tuple[str, ...] = ()

    def to_representation(self, instance: Any) -> dict[str, Any]:
        data = super().to_representation(instance)
        allowed = self.context.get("configuration_team_ids")
        if allowed is not None and instance.team_id not in allowed:
            for name in self.CONFIGURATION_FIELDS:
                data.pop(name, None)
        return data


CONFIGURATION_HELP = "Shown to admins of the team; lists leave it out for other members."


def _readable_secrets(endpoint: Endpoint) -> dict[str, str]:
    try:
        return services.endpoint_secret_headers(endpoint=endpoint)
    except crypto.SecretsUnreadable:
        return {}


# Output-only fields that read the whole endpoint. Not method fields: the schema marks
# read-only fields required, and lists leave these out below CONFIGURATION_ROLE.
class _HeadersField(serializers.DictField):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(source="*", child=serializers.CharField(), required=False, **kwargs)

    def to_representation(self, endpoint: Endpoint) -> dict[str, str]:
        masked = {name: crypto.mask(value)
                  for name, value in _readable_secrets(endpoint).items()}
        return {**endpoint.headers, **masked}


class _SecretHeaderNamesField(serializers.ListField):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(source="*", child=serializers.CharField(), required=False, **kwargs)

    def to_representation(self, endpoint: Endpoint) -> list[str]:
        return sorted(_readable_secrets(endpoint))


class EndpointOutputSerializer(_ConfigurationHidingSerializer):
    # The URL too: it can carry keys (?api_key=) and internal host names.
    CONFIGURATION_FIELDS = ("url", "headers", "secret_header_names", "timeout_seconds",
                            "max_concurrent_requests", "requests_per_minute",
                            "allow_cross_origin_redirects", "mapper")

    id = serializers.IntegerField()
    team = serializers.IntegerField(source="team_id")
    name = serializers.CharField()
    url = serializers.CharField(required=False, help_text=CONFIGURATION_HELP)
    method = serializers.CharField()
    headers = _HeadersField(
        help_text=f"Plain headers, and secret ones masked (••••abcd). {CONFIGURATION_HELP}")
    secret_header_names = _SecretHeaderNamesField(help_text=CONFIGURATION_HELP)
    timeout_seconds = serializers.FloatField(required=False, help_text=CONFIGURATION_HELP)
    max_concurrent_requests = serializers.IntegerField(
        allow_null=True, required=False, help_text=CONFIGURATION_HELP)
    requests_per_minute = serializers.IntegerField(
        allow_null=True, required=False, help_text=CONFIGURATION_HELP)
    allow_cross_origin_redirects = serializers.BooleanField(
        required=False, help_text=CONFIGURATION_HELP)
    mapper = MapperSerializer(required=False, help_text=CONFIGURATION_HELP)
    created_at = serializers.DateTimeField()
    archived_at = serializers.DateTimeField(allow_null=True)


class EndpointInputSerializer(serializers.Serializer):
    team = api_id(required=False)
    name = serializers.CharField(max_length=100)
    url = serializers.CharField(max_length=2000)
    method = serializers.ChoiceField(choices=Endpoint.Method.choices, default="GET")
    headers = serializers.DictField(child=serializers.CharField(allow_blank=True),
                                    required=False)
    secret_headers = serializers.DictField(child=serializers.CharField(allow_blank=True),
                                           required=False,
                                           help_text="Stored encrypted, shown back masked.")
    timeout_seconds = serializers.FloatField(default=10.0)
    max_concurrent_requests = serializers.IntegerField(
        min_value=1, max_value=LIMIT_MAXIMUMS["max_concurrent_requests"], allow_null=True,
        required=False,
        help_text="Requests at once, over all workers together; null: no limit (default 16).")
    requests_per_minute = serializers.IntegerField(
        min_value=1, max_value=LIMIT_MAXIMUMS["requests_per_minute"], allow_null=True,
        required=False,
        help_text="Requests started per minute, over all workers; null (default): no limit.")
    allow_cross_origin_redirects = serializers.BooleanField(
        required=False, help_text="Follow redirects to other hosts, without any of the "
                                  "endpoint's headers (default false: such a redirect fails).")
    mapper = serializers.JSONField()
    archived = serializers.BooleanField(required=False)


class EndpointListApi(APIView):
    # paginated_response answers {count, next, previous, results}; the schema says so.
    pagination_class = PageNumberPagination

    @extend_schema(responses=EndpointOutputSerializer(many=True), parameters=[TEAM_PARAM],
                   operation_id="endpoints_list")
    def get(self, request: Request) -> Response:
        endpoints = Endpoint.objects.filter(team_id__in=visible_team_ids(request))
        if request.query_params.get("archived") != "true":
            endpoints = endpoints.filter(archived_at=None)
        context = {"configuration_team_ids":
                   selectors.configuration_team_ids(user=request.user)}
        return paginated_response(self, request, endpoints, lambda page: EndpointOutputSerializer(
            page, many=True, context=context).data)

    @extend_schema(request=EndpointInputSerializer, responses={201: EndpointOutputSerializer},
                   operation_id="endpoints_create")
    def post(self, request: Request) -> Response:
        return create_in_team_response(
            request, team=body_team(request, minimum_role=Role.ADMIN),
            input_serializer=EndpointInputSerializer, drop=("archived",),
            create=lambda team, data: services.endpoint_create(
                team=team, created_by=request.user, **data),
            output=lambda endpoint: EndpointOutputSerializer(endpoint).data)


class EndpointDetailApi(APIView):
    @extend_schema(responses=EndpointOutputSerializer, operation_id="endpoints_retrieve")
    def get(self, request: Request, endpoint_id: int) -> Response:
        endpoint = selectors.endpoint_get_for_user(
            user=request.user, endpoint_id=endpoint_id,
            minimum_role=selectors.CONFIGURATION_ROLE)
        return Response(EndpointOutputSerializer(endpoint).data)

    @extend_schema(request=EndpointInputSerializer, responses=EndpointOutputSerializer,
                   operation_id="endpoints_partial_update")
    def patch(self, request: Request, endpoint_id: int) -> Response:
        endpoint = selectors.endpoint_get_for_user(user=request.user, endpoint_id=endpoint_id,
                                                   minimum_role=Role.ADMIN)
        changes = sent_changes(EndpointInputSerializer, request)
        endpoint = services.endpoint_update(endpoint=endpoint, **changes)
        return Response(EndpointOutputSerializer(endpoint).data)

    @extend_schema(responses={204: None, 200: EndpointOutputSerializer},
                   operation_id="endpoints_destroy",
                   description="Deletes an unused endpoint (204); archives one that search "
                               "models use and returns it (200).")
    def delete(self, request: Request, endpoint_id: int) -> Response:
        endpoint = selectors.endpoint_get_for_user(user=request.user, endpoint_id=endpoint_id,
                                                   minimum_role=Role.ADMIN)
        return delete_or_keep_response(services.endpoint_delete(endpoint=endpoint),
                                       lambda: EndpointOutputSerializer(endpoint).data)


EndpointRestoreApi = row_step_api(
    "EndpointRestoreApi",
    load=lambda request, endpoint_id: selectors.endpoint_get_for_user(
        user=request.user, endpoint_id=endpoint_id, minimum_role=Role.ADMIN),
    step=lambda endpoint, _request: services.endpoint_restore(endpoint=endpoint),
    output=lambda endpoint: EndpointOutputSerializer(endpoint).data,
    request=None, responses=EndpointOutputSerializer, operation_id="endpoints_restore",
    description="Brings an archived endpoint back (admins); a no-op on an active one.")


# --- search models -----------------------------------------------------------------------


class _ModelHeadersField(serializers.DictField):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(source="*", child=serializers.CharField(), required=False, **kwargs)

    def to_representation(self, model: SearchModel) -> dict[str, str]:
        return services.search_model_headers_shown(model=model)


class SearchModelOutputSerializer(_ConfigurationHidingSerializer):
    CONFIGURATION_FIELDS = ("body", "body_format", "headers")

    id = serializers.IntegerField()
    team = serializers.IntegerField(source="team_id")
    endpoint = serializers.IntegerField(
        source="endpoint_id", allow_null=True,
        help_text="Null for an offline model (its rankings come from an uploaded run).")
    name = serializers.CharField()
    description = serializers.CharField()
    params = serializers.JSONField()
    body = serializers.CharField(allow_null=True, required=False, help_text=CONFIGURATION_HELP)
    body_format = serializers.CharField(required=False, help_text=CONFIGURATION_HELP)
    headers = _ModelHeadersField(
        help_text=f"Plain headers, and sensitive ones masked (••••abcd). {CONFIGURATION_HELP}")
    default_keywords = serializers.SerializerMethodField()
    created_at = serializers.DateTimeField()
    archived_at = serializers.DateTimeField(allow_null=True)

    def get_default_keywords(self, model: SearchModel) -> list[str]:
        return keyword_services.keywords_clean(model.default_keywords.splitlines()).keywords


class SearchModelInputSerializer(serializers.Serializer):
    team = api_id(required=False)
    endpoint = api_id()
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
        models = SearchModel.objects.filter(team_id__in=visible_team_ids(request))
        if request.query_params.get("archived") != "true":
            models = models.filter(archived_at=None)
        context = {"configuration_team_ids":
                   selectors.configuration_team_ids(user=request.user)}
        return paginated_response(self, request, models, lambda page: SearchModelOutputSerializer(
            page, many=True, context=context).data)

    @extend_schema(request=SearchModelInputSerializer,
                   responses={201: SearchModelOutputSerializer}, operation_id="models_create")
    def post(self, request: Request) -> Response:
        return create_in_team_response(
            request, team=body_team(request, minimum_role=Role.ADMIN),
            input_serializer=SearchModelInputSerializer, drop=("archived",),
            create=lambda team, data: services.search_model_create(
                team=team, created_by=request.user, **_model_changes(request, data, team.pk)),
            output=lambda model: SearchModelOutputSerializer(model).data)


class SearchModelDetailApi(APIView):
    @extend_schema(responses=SearchModelOutputSerializer, operation_id="models_retrieve")
    def get(self, request: Request, model_id: int) -> Response:
        model = selectors.search_model_get_for_user(
            user=request.user, model_id=model_id, minimum_role=selectors.CONFIGURATION_ROLE)
        return Response(SearchModelOutputSerializer(model).data)

    @extend_schema(request=SearchModelInputSerializer, responses=SearchModelOutputSerializer,
                   operation_id="models_partial_update")
    def patch(self, request: Request, model_id: int) -> Response:
        model = selectors.search_model_get_for_user(user=request.user, model_id=model_id,
                                                    minimum_role=Role.ADMIN)
        changes = _model_changes(request, sent_changes(SearchModelInputSerializer, request),
                                 model.team_id)
        model = services.search_model_update(model=model, **changes)
        return Response(SearchModelOutputSerializer(model).data)

    @extend_schema(responses={204: None, 200: SearchModelOutputSerializer},
                   operation_id="models_destroy",
                   description="Deletes an unused model (204); archives one that evaluations "
                               "use and returns it (200).")
    def delete(self, request: Request, model_id: int) -> Response:
        model = selectors.search_model_get_for_user(user=request.user, model_id=model_id,
                                                    minimum_role=Role.ADMIN)
        return delete_or_keep_response(services.search_model_delete(model=model),
                                       lambda: SearchModelOutputSerializer(model).data)


SearchModelRestoreApi = row_step_api(
    "SearchModelRestoreApi",
    load=lambda request, model_id: selectors.search_model_get_for_user(
        user=request.user, model_id=model_id, minimum_role=Role.ADMIN),
    step=lambda model, _request: services.search_model_restore(model=model),
    output=lambda model: SearchModelOutputSerializer(model).data,
    request=None, responses=SearchModelOutputSerializer, operation_id="models_restore",
    description="Brings an archived search model back (admins); 400 while its endpoint is "
                "archived.")


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
        raw = serializers.CharField(help_text="The response body (first 64 KB); empty "
                                    "unless the caller is an admin of the model's team.")

        class Meta:
            ref_name = "ModelTestResult"

    @extend_schema(request=InputSerializer, responses=OutputSerializer,
                   operation_id="models_test")
    def post(self, request: Request, model_id: int) -> Response:
        model = selectors.search_model_get_for_user(user=request.user, model_id=model_id,
                                                    minimum_role=Role.LEAD)
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            result = services.search_model_test(model=model,
                                                query=serializer.validated_data["query"])
        except TestsBusy as error:
            raise Throttled(detail=error.reason) from None
        documents = [{"position": position, "doc_id": doc.doc_id, "name": doc.name,
                      "image": doc.image, "fields": doc.fields}
                     for position, doc in enumerate(result.documents or [], start=1)]
        return Response(self.OutputSerializer({
            "ok": result.ok, "status_code": result.status_code,
            "duration_ms": result.duration_ms, "error": result.error,
            "error_field": result.error_field, "documents": documents,
            "raw": result.raw if selectors.raw_preview_visible(
                user=request.user, team_id=model.team_id) else "",
        }).data)
