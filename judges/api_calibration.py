"""The judges' calibration and "counts" API: GET /api/v1/judges/{id}/calibration/ (leads),
POST /api/v1/judges/{id}/counts/ (admins), GET/PUT /api/v1/judges/trust-policy/ (the
team's bar: leads read, admins change)."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from evaluations.selectors import CONFIGURATION_ROLE
from judges import calibration, trust
from judges.access import judge_evaluation_get_for_user, judge_get_for_user
from judges.api_judges import team_id_param
from searchtweak import access
from searchtweak.api_shared import TEAM_PARAM
from searchtweak.integers import api_id
from searchtweak.models import Role, Team


class CountsRecordSerializer(serializers.Serializer):
    """Who let the judge's grades count, when, on which figures, and why when overriding."""

    counts = serializers.BooleanField()
    counts_granted_by = serializers.CharField(
        source="counts_granted_by.username", allow_null=True, default=None,
        help_text="Who let its grades count (null: it does not count).")
    counts_granted_at = serializers.DateTimeField(allow_null=True)
    counts_evidence = serializers.DictField(
        help_text="The figures then: evaluation_id, evaluation_name, pair_count, kappa, "
                  "kappa_weighting, exact_match_rate, the bar (min_pairs, min_kappa), "
                  "shortfalls.")
    counts_override_reason = serializers.CharField(
        help_text="Not empty: the figures fell short and an admin let it count anyway.")


class JudgeCalibrationApi(APIView):
    class FilterSerializer(serializers.Serializer):
        evaluation = api_id(help_text="An evaluation of the judge's team.")

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
            correlation_warning = serializers.CharField(
                help_text="Not empty when fewer than 5 keywords make Spearman and Kendall "
                          "mostly chance.")
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

        class PositionSerializer(serializers.Serializer):
            label = serializers.CharField(
                help_text='The person\'s shown position: "1".."10", "11+" or "not recorded".')
            pair_count = serializers.IntegerField()
            exact_match_count = serializers.IntegerField()
            exact_match_rate = serializers.FloatField(allow_null=True)
            mean_difference = serializers.FloatField(
                allow_null=True, help_text="Mean of the person's grade minus the judge's.")

        by_position = PositionSerializer(
            many=True, help_text="The pairs grouped by where the person was shown the result "
                                 "(position bias); only groups with pairs.")

    @extend_schema(
        parameters=[FilterSerializer], responses=OutputSerializer,
        operation_id="judges_calibration",
        description="How the judge's grades agree with the people's on one evaluation of its "
                    "team (κ, exact match, confusion matrix, agreement by the people's shown "
                    "position) and each configured metric with "
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
            help_text="true: the judge's grades fill slots (needs a finished shadow run "
                      "whose figures clear the team's bar, or an override_reason); false: "
                      "it may only shadow.")
        evaluation = api_id(
            required=False, allow_null=True, default=None,
            help_text="The evaluation whose shadow run is the evidence; default the "
                      "judge's newest finished shadow run's.")
        override_reason = serializers.CharField(
            required=False, allow_blank=True, default="", max_length=trust.MAX_REASON_CHARS,
            help_text="Needed when the figures fall short of the team's bar; kept beside "
                      "the judge with who, when and the figures.")

    class OutputSerializer(CountsRecordSerializer):
        id = serializers.IntegerField()
        name = serializers.CharField()

    @extend_schema(request=InputSerializer, responses=OutputSerializer,
                   operation_id="judges_counts",
                   description="Let the judge's grades count, or take that back. Admins. "
                               "Below the team's bar (trust-policy) a 400 on "
                               "override_reason says why, unless a reason is given.")
    def post(self, request: Request, judge_id: int) -> Response:
        judge = judge_get_for_user(user=request.user, judge_id=judge_id,
                                   minimum_role=CONFIGURATION_ROLE)
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        evaluation = judge_evaluation_get_for_user(
            user=request.user, judge=judge, evaluation_id=data["evaluation"]) \
            if data["evaluation"] else None
        judge = trust.judge_mark_counts(judge=judge, counts=data["counts"], by=request.user,
                                        evaluation=evaluation,
                                        override_reason=data["override_reason"])
        return Response(self.OutputSerializer(judge).data)


class JudgeTrustPolicyApi(APIView):
    class InputSerializer(serializers.Serializer):
        min_pairs = serializers.IntegerField(min_value=1, max_value=trust.MAX_MIN_PAIRS)
        min_kappa = serializers.FloatField(min_value=-1, max_value=1)
        monthly_budget = serializers.DecimalField(
            max_digits=12, decimal_places=4, min_value=0, required=False, allow_null=True,
            default=None, help_text="Left out or null: no monthly cap.")
        monthly_budget_currency = serializers.CharField(
            max_length=3, required=False, default="USD",
            help_text="The budget's currency (ISO 4217); a judge priced in another makes no "
                      "paid call while the budget is set.")

    class OutputSerializer(serializers.Serializer):
        team = serializers.IntegerField(source="team_id")
        min_pairs = serializers.IntegerField(
            help_text="Judge x person pairs needed on the evaluation it shadowed.")
        min_kappa = serializers.FloatField(
            help_text="κ needed there (quadratic-weighted on scales of more than two grades).")
        monthly_budget = serializers.DecimalField(
            max_digits=12, decimal_places=4, allow_null=True,
            help_text="The most the team's judge runs may spend a calendar month at the "
                      "judges' prices (a run pauses before a call would pass it); null: none.")
        monthly_budget_currency = serializers.CharField(
            help_text="The monthly budget's currency.")

    @extend_schema(parameters=[TEAM_PARAM], responses=OutputSerializer,
                   operation_id="judges_trust_policy",
                   description="The team's bar for letting a judge's grades count. Leads.")
    def get(self, request: Request) -> Response:
        team = _policy_team(request, minimum_role=Role.LEAD)
        return Response(self.OutputSerializer(trust.trust_policy(team_id=team.pk)).data)

    @extend_schema(parameters=[TEAM_PARAM], request=InputSerializer, responses=OutputSerializer,
                   operation_id="judges_trust_policy_update",
                   description="Change the team's bar. Admins.")
    def put(self, request: Request) -> Response:
        team = _policy_team(request, minimum_role=CONFIGURATION_ROLE)
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        policy = trust.trust_policy_update(team=team, by=request.user,
                                           **serializer.validated_data)
        return Response(self.OutputSerializer(policy).data)


def _policy_team(request: Request, *, minimum_role: str) -> Team:
    """?team= (default the caller's current team), checked before any input is read."""
    return access.team_or_current_access(
        user=request.user, team_id=team_id_param(request.query_params.get("team")),
        minimum_role=minimum_role).team
