"""A team's grading scales and transformers through the API, as admins keep them on /scales/.

The views call the services the pages call (scale_create, scale_update, scale_delete,
transformer_save, transformer_delete), so a rule holds for both. Reading needs the admin
role too, as the page does: 404 outside the caller's teams, 403 below admin.
"""

import re
from typing import Any

from django.core.exceptions import ValidationError
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from judgments import scale_writes, selectors
from judgments.api import GradeField
from judgments.models import Scale, Transformer
from searchtweak import access
from searchtweak.api_pagination import PageNumberPagination, paginated_response
from searchtweak.api_shared import create_in_team_response
from searchtweak.integers import ID_MAX, api_id, api_integer, bounded
from searchtweak.models import Role, Team, User

_INTEGER = re.compile(r"-?\d+")
_DEFAULT_COLOR = "#5b6675"  # what the page stores for a grade written without a colour

TEAM_PARAM = OpenApiParameter(
    "team", int, description="The team (default: the caller's current team).")


def _team_for_admin(*, user: User, team_id: Any) -> Team:
    """The team named in the request, or the caller's current team, checked before the
    input so a caller without the role learns nothing from validation errors."""
    if team_id == "":
        team_id = None
    if team_id is not None:
        # An id from the query string or the JSON body; true, 1.5, "a" or an id beyond
        # any row's name no team.
        try:
            team_id = bounded(team_id, field="team", min_value=1, max_value=ID_MAX)
        except ValidationError:
            raise ValidationError({"team": "must be a team id"}) from None
    return access.team_or_current_access(user=user, team_id=team_id, minimum_role=Role.ADMIN,
                                         reason=selectors.ADMIN_REASON).team


def _body_team(request: Request) -> Any:
    # Any JSON may arrive (a list, a string): the serializer answers 400 for it then.
    return request.data.get("team") if isinstance(request.data, dict) else None


def _unchangeable(request: Request, current: dict[str, str]) -> None:
    """A PATCH may repeat what names the object, not change it."""
    if not isinstance(request.data, dict):
        return
    for field, value in current.items():
        if field in request.data and request.data[field] != value:
            raise ValidationError({field: f"cannot change (it is {value!r}); create another."})


# --- scales ---


class ScaleLabelSerializer(serializers.Serializer):
    label = serializers.CharField(max_length=100)
    color = serializers.RegexField(r"^#[0-9a-fA-F]{6}$", default=_DEFAULT_COLOR,
                                   help_text="#rrggbb")


class ScaleOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    team = serializers.IntegerField(source="team_id")
    code = serializers.CharField(help_text="What evaluations name as their `scale`.")
    name = serializers.CharField()
    lo = serializers.IntegerField()
    hi = serializers.IntegerField()
    labels = serializers.DictField(child=ScaleLabelSerializer(),
                                   help_text="Every grade lo..hi, keyed by the grade.")
    created_at = serializers.DateTimeField()


class ScaleInputSerializer(serializers.Serializer):
    team = api_id(required=False)
    code = serializers.SlugField(max_length=50)
    name = serializers.CharField(max_length=100)
    lo = serializers.IntegerField(min_value=0, max_value=10)
    hi = serializers.IntegerField(min_value=0, max_value=10)
    labels = serializers.DictField(
        child=ScaleLabelSerializer(),
        help_text='One entry per grade lo..hi: {"1": {"label": "Bad", "color": "#d92d20"}}.')

    def validate_labels(self, labels: dict[str, dict]) -> dict[str, dict]:
        normalized: dict[str, dict] = {}
        for key, entry in labels.items():
            if not _INTEGER.fullmatch(str(key).strip()):
                raise serializers.ValidationError(f"{key!r} is not a grade.")
            grade = str(int(key))
            if grade in normalized:
                raise serializers.ValidationError(f"grade {grade} appears twice.")
            # A PATCH validates partially, which skips the colour's default.
            normalized[grade] = {"label": entry["label"],
                                 "color": entry.get("color", _DEFAULT_COLOR)}
        return normalized


def _scale_data(scale: Scale) -> dict:
    return ScaleOutputSerializer(scale).data


class ScaleListApi(APIView):
    # paginated_response answers {count, next, previous, results}; the schema says so.
    pagination_class = PageNumberPagination

    @extend_schema(
        parameters=[TEAM_PARAM], responses=ScaleOutputSerializer(many=True),
        operation_id="scales_list",
        description="The team's own scales. The built-in `binary`, `graded` and `detail` "
        "(docs/METRICS.md) are every team's and are not listed.")
    def get(self, request: Request) -> Response:
        team = _team_for_admin(user=request.user, team_id=request.query_params.get("team"))
        return paginated_response(self, request, selectors.team_scales(team=team),
                                  lambda page: ScaleOutputSerializer(page, many=True).data)

    @extend_schema(request=ScaleInputSerializer, responses={201: ScaleOutputSerializer},
                   operation_id="scales_create")
    def post(self, request: Request) -> Response:
        return create_in_team_response(
            request, team=_team_for_admin(user=request.user, team_id=_body_team(request)),
            input_serializer=ScaleInputSerializer,
            create=lambda team, data: scale_writes.scale_create(team=team, **data),
            output=_scale_data)


class ScaleDetailApi(APIView):
    @extend_schema(responses=ScaleOutputSerializer, operation_id="scales_retrieve")
    def get(self, request: Request, scale_id: int) -> Response:
        return Response(_scale_data(
            selectors.scale_get_for_user(user=request.user, scale_id=scale_id)))

    @extend_schema(
        request=ScaleInputSerializer, responses=ScaleOutputSerializer,
        operation_id="scales_partial_update",
        description="Name, labels and colours may always change; the range only while no "
        "evaluation uses the scale. The code cannot change: evaluations refer to it.")
    def patch(self, request: Request, scale_id: int) -> Response:
        scale = selectors.scale_get_for_user(user=request.user, scale_id=scale_id)
        _unchangeable(request, {"code": scale.code})
        serializer = ScaleInputSerializer(data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        changes = {key: value for key, value in serializer.validated_data.items()
                   if key in ("name", "lo", "hi", "labels")}
        current = {"name": scale.name, "lo": scale.lo, "hi": scale.hi, "labels": scale.labels}
        scale = scale_writes.scale_update(scale=scale, **(current | changes))
        return Response(_scale_data(scale))

    @extend_schema(
        responses={204: None}, operation_id="scales_destroy",
        description="Deletes a scale no evaluation uses, with the team's transformers from "
        "and to it; a scale in use answers 400 on `code`.")
    def delete(self, request: Request, scale_id: int) -> Response:
        scale = selectors.scale_get_for_user(user=request.user, scale_id=scale_id)
        scale_writes.scale_delete(scale=scale)
        return Response(status=status.HTTP_204_NO_CONTENT)


# --- transformers ---


class TransformerOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    team = serializers.IntegerField(source="team_id")
    source = serializers.CharField(help_text="The code of the scale grades come from.")
    target = serializers.CharField(help_text="The code of the scale they become grades of.")
    mapping = serializers.DictField(child=api_integer(),
                                    help_text="Every source grade → a target grade.")
    updated_at = serializers.DateTimeField()


class TransformerInputSerializer(serializers.Serializer):
    team = api_id(required=False)
    source = serializers.CharField(max_length=50)
    target = serializers.CharField(max_length=50)
    mapping = serializers.DictField(
        child=GradeField(), allow_empty=True,
        help_text='Every grade of the source → a grade of the target: {"0": 0, "1": 1}.')


class TransformerListApi(APIView):
    pagination_class = PageNumberPagination

    @extend_schema(
        parameters=[TEAM_PARAM], responses=TransformerOutputSerializer(many=True),
        operation_id="transformers_list",
        description="The team's own transformers; a pair of built-in scales without one "
        "uses the docs/METRICS.md default.")
    def get(self, request: Request) -> Response:
        team = _team_for_admin(user=request.user, team_id=request.query_params.get("team"))
        return paginated_response(
            self, request, selectors.team_transformers(team=team),
            lambda page: TransformerOutputSerializer(page, many=True).data)

    @extend_schema(
        request=TransformerInputSerializer,
        responses={201: TransformerOutputSerializer, 200: TransformerOutputSerializer},
        operation_id="transformers_create",
        description="Create the team's transformer source → target (201), or replace the "
        "mapping of the one it has (200), as the page's form does. Every grade of the "
        "source must be mapped: `{\"mapping\": [\"grade 2 is not mapped\"]}` otherwise.")
    def post(self, request: Request) -> Response:
        team = _team_for_admin(user=request.user, team_id=_body_team(request))
        serializer = TransformerInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        existed = selectors.transformer_for_pair(
            team=team, source=data["source"], target=data["target"]) is not None
        transformer = scale_writes.transformer_save(
            team=team, source=data["source"], target=data["target"], mapping=data["mapping"])
        return Response(TransformerOutputSerializer(transformer).data,
                        status=status.HTTP_200_OK if existed else status.HTTP_201_CREATED)


class TransformerDetailApi(APIView):
    @extend_schema(responses=TransformerOutputSerializer, operation_id="transformers_retrieve")
    def get(self, request: Request, transformer_id: int) -> Response:
        transformer = selectors.transformer_get_for_user(
            user=request.user, transformer_id=transformer_id)
        return Response(TransformerOutputSerializer(transformer).data)

    @extend_schema(
        request=TransformerInputSerializer, responses=TransformerOutputSerializer,
        operation_id="transformers_partial_update",
        description="Replace the mapping; source and target name the transformer and "
        "cannot change.")
    def patch(self, request: Request, transformer_id: int) -> Response:
        transformer: Transformer = selectors.transformer_get_for_user(
            user=request.user, transformer_id=transformer_id)
        _unchangeable(request, {"source": transformer.source, "target": transformer.target})
        serializer = TransformerInputSerializer(data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        if "mapping" not in serializer.validated_data:
            raise ValidationError({"mapping": "This field is required."})
        transformer = scale_writes.transformer_save(
            team=transformer.team, source=transformer.source, target=transformer.target,
            mapping=serializer.validated_data["mapping"])
        return Response(TransformerOutputSerializer(transformer).data)

    @extend_schema(responses={204: None}, operation_id="transformers_destroy",
                   description="The default (docs/METRICS.md) applies again, if there is one.")
    def delete(self, request: Request, transformer_id: int) -> Response:
        transformer = selectors.transformer_get_for_user(
            user=request.user, transformer_id=transformer_id)
        scale_writes.transformer_delete(transformer=transformer)
        return Response(status=status.HTTP_204_NO_CONTENT)
