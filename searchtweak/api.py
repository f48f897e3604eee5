from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from searchtweak import access, services
from searchtweak.models import Role
from searchtweak.selectors import (
    current_membership,
    invitee_warning,
    memberships_of_user,
    team_get_for_user,
    team_members,
)


class MembershipSerializer(serializers.Serializer):
    team = serializers.IntegerField(source="team_id")
    team_name = serializers.CharField(source="team.name")
    role = serializers.ChoiceField(choices=Role.choices)


class MeApi(APIView):
    class OutputSerializer(serializers.Serializer):
        id = serializers.IntegerField()
        username = serializers.CharField()
        email = serializers.EmailField()
        current_team = serializers.IntegerField(allow_null=True)
        memberships = MembershipSerializer(many=True)

    @extend_schema(responses=OutputSerializer, operation_id="me")
    def get(self, request: Request) -> Response:
        user = request.user
        current = current_membership(user=user)
        data = {
            "id": user.pk, "username": user.username, "email": user.email,
            "current_team": current.team_id if current else None,
            "memberships": memberships_of_user(user=user),
        }
        return Response(self.OutputSerializer(data).data)


class TeamOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    created_at = serializers.DateTimeField()


class TeamListApi(APIView):
    class InputSerializer(serializers.Serializer):
        name = serializers.CharField(max_length=100)

    @extend_schema(responses=TeamOutputSerializer(many=True), operation_id="teams_list")
    def get(self, request: Request) -> Response:
        memberships = memberships_of_user(user=request.user)
        return Response([TeamOutputSerializer(m.team).data for m in memberships])

    @extend_schema(request=InputSerializer, responses={201: TeamOutputSerializer},
                   operation_id="teams_create")
    def post(self, request: Request) -> Response:
        access.check_team_creation(user=request.user)
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        team = services.team_create(user=request.user, **serializer.validated_data)
        return Response(TeamOutputSerializer(team).data, status=status.HTTP_201_CREATED)


class TeamDetailApi(APIView):
    class OutputSerializer(TeamOutputSerializer):
        class MemberSerializer(serializers.Serializer):
            id = serializers.IntegerField()
            username = serializers.CharField(source="user.username")
            role = serializers.ChoiceField(choices=Role.choices)

        members = MemberSerializer(many=True)

    @extend_schema(responses=OutputSerializer, operation_id="teams_retrieve")
    def get(self, request: Request, team_id: int) -> Response:
        team = team_get_for_user(user=request.user, team_id=team_id)
        team.members = team_members(team=team)
        return Response(self.OutputSerializer(team).data)


class InvitationCreateApi(APIView):
    class InputSerializer(serializers.Serializer):
        invitee = serializers.CharField(max_length=254)
        role = serializers.ChoiceField(choices=Role.choices, default=Role.GRADER)

    class OutputSerializer(serializers.Serializer):
        id = serializers.IntegerField()
        invitee = serializers.CharField()
        role = serializers.CharField()
        link = serializers.CharField()
        emailed = serializers.BooleanField(
            help_text="Whether the link was e-mailed to the invitee (an e-mail address; "
                      "without EMAIL_URL the mail is printed on the server's console).")
        warning = serializers.CharField(
            allow_null=True, help_text="Why the invitation may never be accepted: a "
                                       "username that no account has.")
        expires_at = serializers.DateTimeField()

    @extend_schema(request=InputSerializer, responses={201: OutputSerializer},
                   operation_id="teams_invitations_create")
    def post(self, request: Request, team_id: int) -> Response:
        team = team_get_for_user(user=request.user, team_id=team_id, minimum_role=Role.ADMIN)
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        invitation = services.invitation_create(
            team=team, invited_by=request.user, **serializer.validated_data
        )
        invitation.link = request.build_absolute_uri(f"/invitations/{invitation.token}/")
        invitation.emailed = services.invitation_send(invitation=invitation,
                                                      link=invitation.link)
        invitation.warning = invitee_warning(invitee=invitation.invitee)
        return Response(self.OutputSerializer(invitation).data, status=status.HTTP_201_CREATED)
