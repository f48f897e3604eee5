"""The triage API: GET /api/v1/evaluations/{id}/triage/ (the results where a judge and
people disagree, the largest impact first) and POST .../triage/{snapshot_id}/adjudicate/
(one answer for every graded slot of the result). Leads, like the page."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from evaluations.selectors import evaluation_get_for_user
from judges import triage
from judgments.adjudication import snapshot_adjudicate
from judgments.api import GradeField
from searchtweak import access


class EvaluationTriageApi(APIView):
    class OutputSerializer(serializers.Serializer):
        class RowSerializer(serializers.Serializer):
            class ShadowSerializer(serializers.Serializer):
                judge = serializers.IntegerField(source="judge_id")
                judge_name = serializers.CharField(source="judge")
                grade = serializers.IntegerField()

            snapshot = serializers.IntegerField(source="snapshot_id")
            keyword = serializers.CharField()
            keyword_id = serializers.IntegerField()
            position = serializers.IntegerField()
            doc_id = serializers.CharField()
            judge_grades = serializers.ListField(
                child=serializers.IntegerField(), help_text="The judges' slots' grades.")
            people_grades = serializers.ListField(
                child=serializers.IntegerField(),
                help_text="Every other graded slot's grade (people, imported judgments).")
            shadow_grades = ShadowSerializer(
                many=True, read_only=True,
                help_text="Shadow runs' answers (each judge's newest), which count nowhere.")
            impact = serializers.FloatField(
                allow_null=True,
                help_text="|keyword value with the judges' answers (counting and shadow) - "
                          "with the people's| of the first metric; null when either is null "
                          "or there is no metric.")
            adjudicated_grade = serializers.IntegerField(
                allow_null=True, help_text="A lead's earlier decision here, if any.")
            adjudicated_gold = serializers.BooleanField()

        evaluation = serializers.IntegerField(source="evaluation_id")
        metric = serializers.CharField(
            source="metric_label",
            help_text="The label of the metric the impacts are of: the evaluation's first.")
        metric_error = serializers.CharField(
            help_text="Why no impact could be computed; empty when they were.")
        results = RowSerializer(many=True, source="rows")

    @extend_schema(responses=OutputSerializer, operation_id="evaluations_triage",
                   description="The evaluation's results where an LLM judge and people gave "
                               "different grades, the largest impact on the keyword's value "
                               "first. Leads and above.")
    def get(self, request: Request, evaluation_id: int) -> Response:
        evaluation = evaluation_get_for_user(user=request.user, evaluation_id=evaluation_id,
                                             minimum_role=access.GRADES_ROLE)
        found = triage.evaluation_triage(evaluation=evaluation,
                                         visibility=access.grade_visibility(user=request.user))
        return Response(self.OutputSerializer(found).data)


class SnapshotAdjudicateApi(APIView):
    class InputSerializer(serializers.Serializer):
        grade = GradeField(help_text="A grade of the evaluation's scale.")
        gold = serializers.BooleanField(required=False, default=False,
                                        help_text="Mark the answer gold.")

    class OutputSerializer(serializers.Serializer):
        snapshot = serializers.IntegerField(source="snapshot_id")
        grade = serializers.IntegerField()
        gold = serializers.BooleanField()
        decided_by = serializers.CharField(source="decided_by.username", allow_null=True,
                                           default=None)
        decided_at = serializers.DateTimeField()

    @extend_schema(request=InputSerializer, responses=OutputSerializer,
                   operation_id="evaluations_triage_adjudicate",
                   description="Settle a result: every graded slot of it (the judges' and "
                               "the people's) takes `grade`, written as a lead's grade, and "
                               "its keyword's values are recomputed. Leads and above.")
    def post(self, request: Request, evaluation_id: int, snapshot_id: int) -> Response:
        evaluation = evaluation_get_for_user(user=request.user, evaluation_id=evaluation_id,
                                             minimum_role=access.GRADES_ROLE)
        snapshot = triage.triage_snapshot_get(evaluation=evaluation, snapshot_id=snapshot_id)
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        answer = snapshot_adjudicate(lead=request.user, evaluation=evaluation,
                                     snapshot=snapshot, **serializer.validated_data)
        return Response(self.OutputSerializer(answer).data)
