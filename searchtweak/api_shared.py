"""The steps the REST API views of every app share, written once: which team a call names
(or the caller's current one), creating a row in a team, and answering a delete that may
keep a used row instead.

Who may act is still searchtweak.access's and what happens is still the service's: these
carry the API's part (which team, which status code). The HTML views' counterparts are in
searchtweak.views_shared.
"""

from collections.abc import Callable
from typing import Any, TypeVar

from django.core.exceptions import ValidationError
from django.db.models import Model
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from searchtweak import access
from searchtweak.integers import ID_MAX, bounded
from searchtweak.models import Team, User

T = TypeVar("T")
M = TypeVar("M", bound=Model)

TEAM_PARAM = OpenApiParameter("team", int, description="Only this team's objects.")


def team_for_create(*, user: User, team_id: Any, minimum_role: str) -> Team:
    """The team named in the request, or the caller's current team; checked before the
    input so a caller without the role learns nothing from validation errors."""
    if team_id is not None:
        try:
            team_id = bounded(team_id, field="team", min_value=1, max_value=ID_MAX)
        except ValidationError:
            raise ValidationError({"team": "must be a team id"}) from None
    return access.team_or_current_access(user=user, team_id=team_id,
                                         minimum_role=minimum_role).team


def requested_team(request: Request) -> Any:
    # The body may be any JSON (a string, a list): the serializer then answers 400, and
    # the team falls back to the caller's current one meanwhile.
    return request.data.get("team") if isinstance(request.data, dict) else None


def body_team(request: Request, *, minimum_role: str) -> Team:
    """The team a create call works in: the body's `team`, else the caller's current one,
    once the caller holds `minimum_role` there."""
    return team_for_create(user=request.user, team_id=requested_team(request),
                           minimum_role=minimum_role)


def visible_team_ids(request: Request) -> list[int]:
    """The caller's teams a list may show, narrowed to ?team= when given."""
    ids = access.visible_team_ids(user=request.user)
    wanted = request.query_params.get("team")
    if wanted:
        ids = [team_id for team_id in ids if str(team_id) == wanted]
    return ids


def create_in_team_response(request: Request, *, team: Team,
                            input_serializer: type[serializers.Serializer],
                            create: Callable[[Team, dict[str, Any]], T],
                            output: Callable[[T], Any], drop: tuple[str, ...] = ()) -> Response:
    """POST of a list that creates a row in `team`: pass the team as resolved by
    body_team (or the API's own access step), so the role is checked before the input is
    read and a caller without it learns nothing from validation errors. Then the input is
    validated, `create(team, data)` (one service call) runs with `team` and the `drop`
    fields left out of `data`, and a 201 answers `output(row)`."""
    serializer = input_serializer(data=request.data)
    serializer.is_valid(raise_exception=True)
    data = dict(serializer.validated_data)
    for name in ("team", *drop):
        data.pop(name, None)
    return Response(output(create(team, data)), status=status.HTTP_201_CREATED)


def delete_or_keep_response(deleted: bool, kept: Callable[[], Any]) -> Response:
    """A DELETE whose service deletes an unused row (204) or keeps a used one, archived or
    deactivated, and answers it as it is now (200, `kept()`)."""
    if deleted:
        return Response(status=status.HTTP_204_NO_CONTENT)
    return Response(kept())


def row_step_api(name: str, *, load: Callable[[Request, int], M],
                 step: Callable[[M, Request], M], output: Callable[[M], Any],
                 **schema: Any) -> type[APIView]:
    """The generic lifecycle view of one resource kind: an APIView whose POST loads the row
    the URL names through its access function (`load(request, pk)`: 404 / 403 as the rule
    says), runs `step(row, request)` (one service: archive, restore, start…; the request
    says who acts) and answers `output(row)` with the row as the service left it.
    `schema` is its extend_schema."""

    @extend_schema(**schema)
    def post(self: APIView, request: Request, **url_ids: int) -> Response:
        (pk,) = url_ids.values()
        return Response(output(step(load(request, pk), request)))

    # Named as the module that builds it (where `load` is written), as a class statement
    # there would be: tracebacks and the browsable API point at that module.
    return type(name, (APIView,), {"post": post, "__doc__": None,
                                   "__module__": load.__module__})
