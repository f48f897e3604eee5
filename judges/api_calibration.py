"""The judges' calibration and "counts" API: GET /api/v1/judges/{id}/calibration/ (leads),
POST /api/v1/judges/{id}/counts/ (admins)."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from evaluations.selectors import CONFIGURATION_ROLE
from judges import calibration, trust
from judges.access import judge_evaluation_get_for_user, judge_get_for_user
from searchtweak.models import Role


class JudgeCalibrationApi(APIView):
    class FilterSerializer(serializers.Serializer):
        evaluation = serializers.IntegerField(
            min_value=1, help_text="An evaluation of the judge's team.")

    class OutputSerializer(serializers.Serializer):
        class MetricSerializer(serializers.Serializer):
            metric = serializers.IntegerField(source="metric_id",
                                              help_text="The evaluation's metric config.")
            label = serializers.CharField()
            keyword_count = serializers.IntegerField(
                help_text="Keywords with a value from both the people's and the judge's "
                          "grades.")
            human_mean = serializers.FloatField(allow_null=True)
            judge_mean = serializers.FloatField(allow_null=True)
            mean_delta = serializers.FloatField(allow_null=True,
                                                help_text="Mean of judge - people.")
            spearman = serializers.FloatField(allow_null=True)
            kendall = serializers.FloatField(allow_null=True, help_text="Kendall's tau-b.")
            error = serializers.CharField(help_text="Why the metric could not be computed; "
                                                    "empty when it was.")

        judge = serializers.IntegerField(source="judge_id")
        evaluation = serializers.IntegerField(source="evaluation_id")
        scale = serializers.CharField(source="scale.code")
        grades = serializers.ListField(child=serializers.IntegerField(),
                                       help_text="The scale's grades: the confusion's order.")
        judge_snapshot_count = serializers.IntegerField(
            help_text="Results the judge graded (its newest answer of any run, shadow "
                      "included, else its slot's grade).")
        snapshot_count = serializers.IntegerField(help_text="... that people graded too.")
        pair_count = serializers.IntegerField(
            help_text="Judge x person pairs: each person's grade on a result pairs with the "
                      "judge's there.")
        exact_match_rate = serializers.FloatField(allow_null=True)
        kappa = serializers.FloatField(allow_null=True,
                                       help_text="Cohen's kappa, weighted as kappa_weighting.")
        kappa_weighting = serializers.ChoiceField(
            choices=["none", "quadratic"],
            help_text="none on a two-grade scale, quadratic on a longer one.")
        unweighted_kappa = serializers.FloatField(allow_null=True)
        confusion = serializers.ListField(
            child=serializers.ListField(child=serializers.IntegerField()),
            help_text="confusion[i][j]: pairs where the person gave grades[i] and the judge "
                      "grades[j].")
        metrics = MetricSerializer(many=True)

    @extend_schema(
        parameters=[FilterSerializer], responses=OutputSerializer,
        operation_id="judges_calibration",
        description="How the judge's grades agree with the people's on one evaluation of its "
                    "team (κ, exact match, confusion matrix) and each configured metric with "
                    "the judge's grades against the people's. Leads and above.",
    )
    def get(self, request: Request, judge_id: int) -> Response:
        judge = judge_get_for_user(user=request.user, judge_id=judge_id,
                                   minimum_role=Role.LEAD)
        filters = self.FilterSerializer(data=request.query_params)
        filters.is_valid(raise_exception=True)
        evaluation = judge_evaluation_get_for_user(
            user=request.user, judge=judge, evaluation_id=filters.validated_data["evaluation"])
        result = calibration.judge_calibration(judge=judge, evaluation=evaluation)
        return Response(self.OutputSerializer(result).data)


class JudgeCountsApi(APIView):
    class InputSerializer(serializers.Serializer):
        counts = serializers.BooleanField(
            help_text="true: the judge's grades fill slots (needs a finished shadow run); "
                      "false: it may only shadow.")

    class OutputSerializer(serializers.Serializer):
        id = serializers.IntegerField()
        name = serializers.CharField()
        counts = serializers.BooleanField()

    @extend_schema(request=InputSerializer, responses=OutputSerializer,
                   operation_id="judges_counts",
                   description="Let the judge's grades count, or take that back. Admins.")
    def post(self, request: Request, judge_id: int) -> Response:
        judge = judge_get_for_user(user=request.user, judge_id=judge_id,
                                   minimum_role=CONFIGURATION_ROLE)
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        judge = trust.judge_mark_counts(judge=judge, counts=serializer.validated_data["counts"],
                                        by=request.user)
        return Response(self.OutputSerializer(judge).data)
