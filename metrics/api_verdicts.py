"""The CI gate and the stored regression verdicts of an evaluation (metrics.reports.verdicts)."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from evaluations.selectors import evaluation_get_for_user
from metrics.models import RegressionVerdict
from metrics.reports.verdicts import (
    gate_baseline_and_rule,
    gate_passed,
    regression_verdict_create,
    regression_verdicts,
)
from metrics_engine.verdicts import MAX_SEGMENT_LENGTH, MAX_SEGMENTS
from searchtweak import access
from searchtweak.api_pagination import PageNumberPagination, paginated_response
from searchtweak.integers import api_id
from searchtweak.models import Role

# Storing a verdict is a write about the team's evaluations: the role that changes them.
GATE_ROLE = Role.LEAD


class VerdictComparisonSerializer(serializers.Serializer):
    """One comparison of a metric: over every keyword, or a segment's, weighted or not."""

    verdict = serializers.ChoiceField(choices=RegressionVerdict.Verdict.choices)
    mean_delta = serializers.FloatField(
        allow_null=True, help_text="mean(run - baseline) over the keywords both have a value "
                                   "for (shared_count): the delta every page shows; "
                                   "Σ wᵢ·dᵢ / Σ wᵢ when weighted.")
    ci_low = serializers.FloatField(allow_null=True, help_text="95 % bootstrap interval.")
    ci_high = serializers.FloatField(allow_null=True)
    p = serializers.FloatField(allow_null=True, help_text="Randomization test p.")
    p_adjusted = serializers.FloatField(
        allow_null=True, help_text="p after Holm across every comparison of the verdict "
                                   "(metrics, segments, weighted or not).")
    coverage = serializers.FloatField(allow_null=True,
                                      help_text="Share of the run's keywords with a value.")
    covered_count = serializers.IntegerField()
    shared_count = serializers.IntegerField(
        help_text="Keywords with a value in both (and a weight above 0 when weighted): "
                  "what the statistics cover.")
    run_keyword_count = serializers.IntegerField()
    reason = serializers.CharField()
    decided_by = serializers.ChoiceField(
        choices=["same_results", "bounds", "statistics", ""], default="",
        help_text="What decided it: identical rankings (same results: cannot differ), the "
                  "bounds under missing grades (at any coverage), or the statistics; empty "
                  "when undecided.")
    delta_range = serializers.ListField(
        child=serializers.FloatField(), allow_null=True, default=None,
        help_text="[low, high]: where the mean change over the keywords both have can still "
                  "end once every result is graded; null when a side has no bounds yet.")

    class Meta:
        ref_name = "RegressionVerdictComparison"


class VerdictSegmentSerializer(VerdictComparisonSerializer):
    segment = serializers.CharField(allow_null=True,
                                    help_text="The tag; null for every keyword of the run.")
    weighted = serializers.BooleanField(help_text="Means weighted by the run's keyword "
                                                  "weights (traffic).")

    class Meta:
        ref_name = "RegressionVerdictSegment"


class VerdictMetricSerializer(VerdictComparisonSerializer):
    """The metric over every keyword of the run, unweighted; its `verdict` and `reason` sum
    up all its `segments` when the rule named segments or weighting."""

    class WorstSerializer(serializers.Serializer):
        keyword = serializers.CharField(help_text="The keyword's normalized text.")
        delta = serializers.FloatField()

    label = serializers.CharField()
    code = serializers.CharField()
    k = serializers.IntegerField()
    params = serializers.DictField()
    verdict = serializers.ChoiceField(
        choices=RegressionVerdict.Verdict.choices,
        help_text="The metric's verdict over all its comparisons (regressed if any is).")
    worst = WorstSerializer(many=True, help_text="The keywords that fell most.")
    segments = VerdictSegmentSerializer(
        many=True, default=list,
        help_text="Every comparison the rule asked for, the one over every keyword first: "
                  "weighted by traffic, and per segment; empty when it asked for none.")

    class Meta:
        ref_name = "RegressionVerdictMetric"


class VerdictOutputSerializer(serializers.Serializer):
    verdict_id = serializers.IntegerField(source="pk")
    verdict = serializers.ChoiceField(choices=RegressionVerdict.Verdict.choices)
    baseline = serializers.IntegerField(source="baseline_id", allow_null=True)
    baseline_name = serializers.CharField()
    reasons = serializers.ListField(child=serializers.CharField(),
                                    help_text="The overall reason first, then per metric.")
    metrics = VerdictMetricSerializer(many=True)
    rule = serializers.DictField()
    source = serializers.ChoiceField(choices=RegressionVerdict.Source.choices)
    standing = serializers.BooleanField(
        help_text="The verdict of the team's rule (on finish) or the schedule's: what the "
                  "dashboard shows. A gate call's or the command's is not.")
    rule_text = serializers.CharField(help_text="Who decided and by which rule, in words.")
    created_at = serializers.DateTimeField()

    class Meta:
        ref_name = "RegressionVerdict"


class EvaluationGateApi(APIView):
    """POST /evaluations/{id}/gate/: judge the evaluation against a baseline, store the
    verdict and answer pass/fail."""

    class InputSerializer(serializers.Serializer):
        baseline = api_id(
            required=False, help_text="The baseline evaluation's id; default: for a "
            "schedule's run the baseline its schedule chose, else the team's.")
        undecided = serializers.ChoiceField(
            choices=["pass", "fail"], default="pass",
            help_text="Whether an undecided verdict passes the gate.")
        min_coverage = serializers.FloatField(
            required=False, min_value=0.0, max_value=1.0,
            help_text="Share of the run's keywords that must have a value (default 0.9, or "
                      "the schedule's for a schedule's run).")
        min_shared_keywords = serializers.IntegerField(
            required=False, min_value=1, max_value=100_000,
            help_text="Fewest keywords with a value in both (default 5).")
        threshold = serializers.FloatField(
            required=False, min_value=0.0, max_value=1_000_000.0,
            help_text="Count a change only beyond this absolute size (e.g. 0.01; default "
                      "none, or the schedule's for a schedule's run).")
        metrics = serializers.ListField(
            child=serializers.CharField(max_length=100), required=False, max_length=50,
            help_text='Compare only these metrics, e.g. ["ndcg@10"]; default: every '
                      "metric configured in both.")
        segments = serializers.ListField(
            child=serializers.CharField(max_length=MAX_SEGMENT_LENGTH), required=False,
            max_length=MAX_SEGMENTS,
            help_text='Also judge the keywords carrying each of these tags apart, e.g. '
                      '["tail", "lang:de"] (default: none, or the schedule\'s).')
        weighted = serializers.BooleanField(
            required=False, help_text="Also judge the means weighted by the run's keyword "
                                      "weights, overall and per segment (default false, or "
                                      "the schedule's).")

        class Meta:
            ref_name = "EvaluationGateInput"

    class OutputSerializer(VerdictOutputSerializer):
        passed = serializers.BooleanField()

        class Meta:
            ref_name = "EvaluationGateOutput"

    @extend_schema(request=InputSerializer, responses=OutputSerializer,
                   operation_id="evaluations_gate")
    def post(self, request: Request, evaluation_id: int) -> Response:
        evaluation = evaluation_get_for_user(user=request.user, evaluation_id=evaluation_id,
                                             minimum_role=GATE_ROLE)
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        baseline, rule = gate_baseline_and_rule(
            evaluation=evaluation, baseline_id=data.get("baseline"),
            rule_fields={name: data.get(name) for name in (
                "min_coverage", "min_shared_keywords", "threshold", "segments", "weighted")})
        verdict = regression_verdict_create(
            evaluation=evaluation, baseline=baseline, rule=rule,
            source=RegressionVerdict.Source.GATE, user=request.user, metrics=data.get("metrics"))
        passed = gate_passed(verdict.verdict, undecided_passes=data["undecided"] == "pass")
        verdict.passed = passed
        return Response(self.OutputSerializer(verdict).data)


class EvaluationVerdictListApi(APIView):
    pagination_class = PageNumberPagination

    @extend_schema(responses=VerdictOutputSerializer(many=True),
                   operation_id="evaluations_verdicts_list",
                   description="The evaluation's stored regression verdicts, newest first.")
    def get(self, request: Request, evaluation_id: int) -> Response:
        evaluation = evaluation_get_for_user(user=request.user, evaluation_id=evaluation_id,
                                             minimum_role=access.READS_ROLE)
        return paginated_response(
            self, request, regression_verdicts(evaluation=evaluation),
            lambda rows: [VerdictOutputSerializer(row).data for row in rows])
