"""A team's audit trail through the API, for its owners (the page's rows, filtered and
paginated)."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from audit.models import Action
from audit.selectors import team_events
from searchtweak.api_pagination import PageNumberPagination, paginated_response
from searchtweak.models import Role
from searchtweak.selectors import team_get_for_user


class AuditEventSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    at = serializers.DateTimeField()
    actor_id = serializers.IntegerField(
        allow_null=True, help_text="The user who acted; null for a rule or a worker.")
    actor = serializers.CharField(
        source="actor_label", help_text="The actor's username when the event was written.")
    action = serializers.CharField(help_text="One of the actions listed for `action`.")
    action_label = serializers.CharField()
    object_type = serializers.CharField()
    object_id = serializers.CharField()
    client_address = serializers.IPAddressField(allow_null=True)
    changes = serializers.DictField(
        child=serializers.ListField(),
        help_text='{"field": [before, after]} of the fields that changed; a secret\'s '
                  'values read "********".')


class TeamAuditApi(APIView):
    """The team's events, newest first; owners only."""

    pagination_class = PageNumberPagination

    class FilterSerializer(serializers.Serializer):
        action = serializers.ChoiceField(choices=Action.choices, required=False)
        actor = serializers.CharField(required=False, max_length=150,
                                      help_text="The actor's username, exactly.")
        object_type = serializers.CharField(required=False, max_length=40,
                                            help_text="e.g. evaluation, endpoint, webhook.")
        since = serializers.DateTimeField(required=False,
                                          help_text="Events at or after this instant.")
        until = serializers.DateTimeField(required=False,
                                          help_text="Events at or before this instant.")

        def validate(self, data: dict) -> dict:
            if data.get("since") and data.get("until") and data["since"] > data["until"]:
                raise serializers.ValidationError({"until": "It comes before `since`."})
            return data

    @extend_schema(parameters=[FilterSerializer], responses=AuditEventSerializer(many=True),
                   operation_id="teams_audit_list")
    def get(self, request: Request, team_id: int) -> Response:
        team = team_get_for_user(user=request.user, team_id=team_id, minimum_role=Role.OWNER)
        filters = self.FilterSerializer(data=request.query_params)
        filters.is_valid(raise_exception=True)
        events = team_events(team_id=team.pk, **filters.validated_data)
        return paginated_response(self, request, events,
                                  lambda page: AuditEventSerializer(page, many=True).data)
