"""The grading API (DESIGN.md): the next slot, grading a snapshot, the snapshots with slots.

Each view checks access, validates shape, calls one service and serializes; the rules are
the services', shared with the grading page.
"""

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from evaluations.selectors import evaluation_get_for_user
from judgments import selectors, services
from metrics.core.scales import is_integer
from searchtweak.api_pagination import paginated_response


class GradeField(serializers.Field):
    """A JSON integer: "3", 1.5 and true are not grades (METRICS.md, Invalid input)."""

    default_error_messages = {"invalid": "A grade must be a JSON integer, not {value!r}."}

    def to_internal_value(self, data):
        if not is_integer(data):
            self.fail("invalid", value=data)
        return int(data)

    def to_representation(self, value):
        return value


class SlotOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    index = serializers.IntegerField()
    user = serializers.CharField(source="user.username", allow_null=True, default=None)
    grade = serializers.IntegerField(allow_null=True)
    unsure = serializers.BooleanField()
    note = serializers.CharField()
    assigned_at = serializers.DateTimeField(allow_null=True)
    lease_expires_at = serializers.DateTimeField(allow_null=True)
    graded_at = serializers.DateTimeField(allow_null=True)
    reused_from = serializers.IntegerField(source="reused_from_id", allow_null=True)


class AssignedSlotOutputSerializer(SlotOutputSerializer):
    evaluation = serializers.IntegerField(source="evaluation_id")
    snapshot = serializers.IntegerField(source="snapshot_id")
    keyword = serializers.CharField(source="keyword.text")
    position = serializers.IntegerField(source="snapshot.position")
    doc_id = serializers.CharField(source="snapshot.doc_id")
    name = serializers.CharField(source="snapshot.name")
    image = serializers.CharField(source="snapshot.image")
    fields = serializers.JSONField(source="snapshot.fields")


class EvaluationNextApi(APIView):
    @extend_schema(request=None, responses={
        200: AssignedSlotOutputSerializer, 204: OpenApiResponse(description="Nothing left")},
        operation_id="evaluations_next")
    def post(self, request: Request, evaluation_id: int) -> Response:
        evaluation = evaluation_get_for_user(user=request.user, evaluation_id=evaluation_id)
        slot = services.slot_claim_next(
            user=request.user, team=evaluation.team, evaluation=evaluation)
        if slot is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        return Response(AssignedSlotOutputSerializer(slot).data)


class SnapshotGradeApi(APIView):
    class InputSerializer(serializers.Serializer):
        grade = GradeField()
        unsure = serializers.BooleanField(default=False)
        note = serializers.CharField(default="", allow_blank=True, max_length=2000)

    @extend_schema(request=InputSerializer, responses={
        200: AssignedSlotOutputSerializer,
        409: OpenApiResponse(description="Every slot belongs to someone else")},
        operation_id="snapshots_grade")
    def post(self, request: Request, snapshot_id: int) -> Response:
        snapshot = selectors.snapshot_get_for_user(user=request.user, snapshot_id=snapshot_id)
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            slot = services.snapshot_grade(
                user=request.user, snapshot=snapshot, **serializer.validated_data)
        except services.SlotConflict as conflict:
            return Response({"detail": str(conflict)}, status=status.HTTP_409_CONFLICT)
        return Response(AssignedSlotOutputSerializer(slot).data)


class EvaluationSnapshotListApi(APIView):
    class OutputSerializer(serializers.Serializer):
        id = serializers.IntegerField()
        keyword = serializers.CharField(source="keyword.text")
        keyword_id = serializers.IntegerField()
        position = serializers.IntegerField()
        doc_id = serializers.CharField()
        name = serializers.CharField()
        image = serializers.CharField()
        fields = serializers.JSONField()
        slots = SlotOutputSerializer(many=True, source="slots.all")

    @extend_schema(responses=OutputSerializer(many=True), operation_id="evaluations_snapshots")
    def get(self, request: Request, evaluation_id: int) -> Response:
        evaluation = evaluation_get_for_user(user=request.user, evaluation_id=evaluation_id)
        keyword_id = request.query_params.get("keyword")
        snapshots = selectors.evaluation_snapshots(
            evaluation=evaluation,
            keyword_id=int(keyword_id) if keyword_id and keyword_id.isdigit() else None,
        )
        return paginated_response(self, request, snapshots,
                                  lambda page: self.OutputSerializer(page, many=True).data)
