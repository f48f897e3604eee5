from django.core.exceptions import ValidationError
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from evaluations.api_keywords import tags_output_field, weight_output_field
from evaluations.models import Keyword
from evaluations.selectors import evaluation_get_for_user
from evaluations.services.keywords import MAX_TAG_LENGTH
from metrics.models import RegressionVerdict
from metrics.reports.segments import (
    SegmentChoice,
    SegmentMeans,
    segment_means_of,
    segment_problem,
)
from metrics.selectors import (
    evaluation_metric_configs,
    keyword_rows,
    keywords_filtered,
    metric_configs,
    metric_label,
)
from searchtweak import access
from searchtweak.api_pagination import PageNumberPagination, paginated_response
from searchtweak.integers import api_integer


class KeywordListApi(APIView):
    # paginated_response answers {count, next, previous, results}; the schema says so.
    pagination_class = PageNumberPagination

    class FilterSerializer(serializers.Serializer):
        status = serializers.ChoiceField(choices=Keyword.FetchStatus.choices, required=False)
        search = serializers.CharField(required=False, max_length=500)

    class OutputSerializer(serializers.Serializer):
        class MetricValueSerializer(serializers.Serializer):
            code = serializers.CharField()
            k = serializers.IntegerField()
            params = serializers.DictField()
            value = serializers.FloatField(allow_null=True)
            lower = serializers.FloatField(
                allow_null=True, help_text="Where the value can still go once every ungraded "
                "slot is graded (docs/METRICS.md); null before the keyword's first recompute.")
            upper = serializers.FloatField(allow_null=True)
            bounds_exact = serializers.BooleanField(
                help_text="False: wider sound bounds, which contain the exact ones.")

        id = serializers.IntegerField()
        position = serializers.IntegerField()
        text = serializers.CharField()
        weight = weight_output_field()
        tags = tags_output_field()
        fetch_status = serializers.ChoiceField(choices=Keyword.FetchStatus.choices)
        fetch_error = serializers.CharField()
        snapshot_count = serializers.IntegerField()
        updating = serializers.BooleanField(
            help_text="A newer grade is being recomputed; the values are from before it."
        )
        metrics = MetricValueSerializer(many=True)

    @extend_schema(
        parameters=[FilterSerializer],
        responses=OutputSerializer(many=True),
        operation_id="evaluations_keywords_list",
        description="The evaluation's keywords in order, each with its metric values.",
    )
    def get(self, request: Request, evaluation_id: int) -> Response:
        evaluation = evaluation_get_for_user(user=request.user, evaluation_id=evaluation_id,
                                             minimum_role=access.READS_ROLE)
        filters = self.FilterSerializer(data=request.query_params)
        filters.is_valid(raise_exception=True)
        configs = evaluation_metric_configs(evaluation_id=evaluation.pk)

        def serialize_page(keywords: list[Keyword]) -> list[dict]:
            return [
                self.OutputSerializer({
                    "id": row.keyword.pk, "position": row.keyword.position,
                    "text": row.keyword.text, "weight": row.keyword.weight,
                    "tags": row.keyword.tags, "fetch_status": row.keyword.fetch_status,
                    "fetch_error": row.keyword.fetch_error,
                    "snapshot_count": row.snapshot_count, "updating": row.updating,
                    "metrics": [
                        {"code": c.code, "k": c.k, "params": c.params, "value": value,
                         "lower": bounds.lower, "upper": bounds.upper,
                         "bounds_exact": bounds.exact}
                        for c, (value, bounds) in zip(configs, row.cells, strict=True)
                    ],
                }).data
                for row in keyword_rows(evaluation=evaluation, keywords=keywords)
            ]

        return paginated_response(
            self, request, keywords_filtered(evaluation=evaluation, **filters.validated_data),
            serialize_page,
        )


class BoundsDecisionSerializer(serializers.Serializer):
    lower_a = serializers.FloatField(allow_null=True)
    upper_a = serializers.FloatField(allow_null=True)
    lower_b = serializers.FloatField(allow_null=True)
    upper_b = serializers.FloatField(allow_null=True)
    exact = serializers.BooleanField(help_text="False: some bounds are wider sound bounds.")
    decided = serializers.ChoiceField(
        choices=["a", "b"], allow_null=True,
        help_text="The better side whatever the ungraded results are; null while open.")
    open_slot_count = serializers.IntegerField(
        help_text="Ungraded slots the metric reads on both sides: at most this many grades "
                  "stand between now and a decision.")
    pending = serializers.BooleanField(
        help_text="Some shared keyword's bounds are not computed yet: never decided then.")
    text = serializers.CharField()
    same_results = serializers.BooleanField(
        help_text="Every shared keyword has the same results on both sides: they cannot "
                  "differ.")


class RuleVerdictSerializer(serializers.Serializer):
    verdict = serializers.ChoiceField(choices=RegressionVerdict.Verdict.choices)
    decided_by = serializers.ChoiceField(
        choices=["same_results", "bounds", "statistics", ""],
        help_text="What decided: identical rankings, the bounds, the statistics; empty "
                  "when undecided.")
    reason = serializers.CharField()


class EvaluationCompareApi(APIView):
    """B against A over their shared keywords: GET /evaluations/{a}/compare/{b}/."""

    class FilterSerializer(serializers.Serializer):
        metric = api_integer(
            required=False, default=None, allow_null=True,
            help_text="Index of the shared metric whose absolute change orders the "
                      "keywords; absent: the largest absolute change of any shared metric.")
        k = serializers.IntegerField(required=False, min_value=1, max_value=1000,
                                     help_text="Depth of RBO (default: the largest k).")
        p = serializers.FloatField(required=False, default=0.9, min_value=0.01,
                                   max_value=0.99, help_text="Persistence of RBO.")
        segment = serializers.CharField(
            required=False, default="", allow_blank=True, max_length=MAX_TAG_LENGTH,
            help_text="Compare only the shared keywords B tags with this tag (a segment); "
                      "empty: every shared keyword.")
        weighted = serializers.BooleanField(
            required=False, default=False,
            help_text="Weigh each keyword by its weight in B (its traffic) in each side's "
                      "mean, the mean delta and the bounds; the interval, the tests and the "
                      "rule's verdict weigh every keyword alike.")

    class OutputSerializer(serializers.Serializer):
        class EvaluationRefSerializer(serializers.Serializer):
            id = serializers.IntegerField()
            name = serializers.CharField()
            status = serializers.CharField()

        class MetricSerializer(serializers.Serializer):
            code = serializers.CharField()
            k = serializers.IntegerField()
            params = serializers.DictField()
            keyword_count = serializers.IntegerField(
                help_text="Shared keywords with a value on both sides; every statistic of "
                          "the metric covers these.")
            mean_a = serializers.FloatField(allow_null=True)
            mean_b = serializers.FloatField(allow_null=True)
            delta = serializers.FloatField(allow_null=True)
            wins = serializers.IntegerField()
            losses = serializers.IntegerField()
            ties = serializers.IntegerField()
            t_test_p = serializers.FloatField(allow_null=True)
            randomization_p = serializers.FloatField(allow_null=True)
            ci_low = serializers.FloatField(allow_null=True)
            ci_high = serializers.FloatField(allow_null=True)
            verdict = serializers.CharField()
            direction = serializers.ChoiceField(choices=["better", "worse", "same", "unknown"])
            grading_only_count = serializers.IntegerField(
                help_text="Keywords with identical rankings (RBO 1) whose value differs.")
            ranking_note = serializers.CharField(
                allow_null=True, help_text="Set when the value moved although the rankings "
                                           "did not: a grading difference, not a ranking one.")
            bounds = BoundsDecisionSerializer(
                help_text="Each side's mean bounds over the shared keywords (docs/METRICS.md) "
                          "and whether they decide the comparison.")
            rule_verdict = RuleVerdictSerializer(
                help_text="B against A by the team's rule, as B's stored verdict and a gate "
                          "decide: bounds first (at any coverage), then the statistics.")
            weight_sum = serializers.IntegerField(
                allow_null=True, help_text="With `weighted`: the sum of B's weights over the "
                                           "keywords with a value on both sides; else null.")

        class KeywordSerializer(serializers.Serializer):
            text = serializers.CharField()
            keyword_a = serializers.IntegerField()
            keyword_b = serializers.IntegerField()
            values_a = serializers.ListField(child=serializers.FloatField(allow_null=True))
            values_b = serializers.ListField(child=serializers.FloatField(allow_null=True))
            deltas = serializers.ListField(child=serializers.FloatField(allow_null=True))
            rbo = serializers.FloatField(allow_null=True)
            same_ranking = serializers.BooleanField(
                help_text="A and B returned the same documents in the same order.")

        a = EvaluationRefSerializer()
        b = EvaluationRefSerializer()
        segment = serializers.CharField(help_text="The tag compared; empty: every keyword.")
        weighted = serializers.BooleanField()
        shared_keyword_count = serializers.IntegerField(
            help_text="Shared keywords compared (those B tags with `segment`, if given).")
        only_a_count = serializers.IntegerField()
        only_b_count = serializers.IntegerField()
        rbo_k = serializers.IntegerField()
        mean_rbo = serializers.FloatField(allow_null=True)
        identical_rankings = serializers.BooleanField(
            help_text="Every shared keyword has the same results in A and B (RBO 1).")
        verdict = serializers.ChoiceField(
            choices=RegressionVerdict.Verdict.choices,
            help_text="B against A over every compared metric by `rule`.")
        reasons = serializers.ListField(child=serializers.CharField(),
                                        help_text="The overall reason first, then per metric.")
        rule = serializers.DictField(help_text="The team's rule the verdict follows.")
        metrics = MetricSerializer(many=True)
        only_a_metrics = serializers.ListField(
            child=serializers.CharField(),
            help_text="Metrics configured in A only (labels): not compared.")
        only_b_metrics = serializers.ListField(
            child=serializers.CharField(),
            help_text="Metrics configured in B only (labels): not compared.")
        sort_metric = serializers.IntegerField(
            allow_null=True, help_text="The metric index that ordered the keywords; null: "
                                       "the largest change of any shared metric.")
        keywords = KeywordSerializer(many=True, help_text="Sorted by the largest absolute "
                                                          "change (see sort_metric).")

    @extend_schema(parameters=[FilterSerializer], responses=OutputSerializer,
                   operation_id="evaluations_compare")
    def get(self, request: Request, evaluation_id: int, other_id: int) -> Response:
        from metrics.reports.comparisons import evaluation_comparison

        a = evaluation_get_for_user(user=request.user, evaluation_id=evaluation_id,
                                             minimum_role=access.READS_ROLE)
        b = evaluation_get_for_user(user=request.user, evaluation_id=other_id,
                                    minimum_role=access.READS_ROLE)
        filters = self.FilterSerializer(data=request.query_params)
        filters.is_valid(raise_exception=True)
        choice = SegmentChoice(filters.validated_data["segment"].strip().lower(),
                               filters.validated_data["weighted"])
        problem = segment_problem(
            means=SegmentMeans({}, []), segment=choice.segment, owner=f"B ({b.name})",
            keywords=Keyword.objects.filter(evaluation=b)) if choice.segment else None
        if problem:
            raise ValidationError({"segment": problem})
        comparison = evaluation_comparison(
            a=a, b=b, sort_index=filters.validated_data["metric"],
            rbo_k=filters.validated_data.get("k"), rbo_p=filters.validated_data["p"],
            choice=choice,
        )
        return Response(self.OutputSerializer({
            "a": a, "b": b, "segment": choice.segment, "weighted": choice.weighted,
            "shared_keyword_count": comparison.shared_count,
            "only_a_count": comparison.only_a_count, "only_b_count": comparison.only_b_count,
            "rbo_k": comparison.rbo_k, "mean_rbo": comparison.mean_rbo,
            "identical_rankings": comparison.identical_rankings,
            "verdict": str(comparison.outcome.verdict), "reasons": comparison.outcome.reasons,
            "rule": comparison.rule.as_dict(),
            "metrics": [{
                "code": m.config_a.code, "k": m.config_a.k, "params": m.config_a.params,
                "keyword_count": m.result.keyword_count, "mean_a": m.result.mean_a,
                "mean_b": m.result.mean_b, "delta": m.result.mean_delta,
                "wins": m.result.wins, "losses": m.result.losses, "ties": m.result.ties,
                "t_test_p": m.result.t_test_p, "randomization_p": m.result.randomization_p,
                "ci_low": m.ci[0] if m.ci else None, "ci_high": m.ci[1] if m.ci else None,
                "verdict": m.verdict, "direction": m.direction,
                "grading_only_count": m.grading_only_count, "ranking_note": m.ranking_note,
                "bounds": {
                    "lower_a": m.decision.a.lower, "upper_a": m.decision.a.upper,
                    "lower_b": m.decision.b.lower, "upper_b": m.decision.b.upper,
                    "exact": m.decision.a.exact and m.decision.b.exact,
                    "decided": {1: "b", -1: "a"}.get(m.decision.winner),
                    "open_slot_count": m.decision.open_slot_count,
                    "pending": m.decision.pending, "text": m.decision.text,
                    "same_results": m.decision.same_results,
                },
                "rule_verdict": {"verdict": str(m.rule_verdict.verdict),
                                 "decided_by": str(m.rule_verdict.decided_by),
                                 "reason": m.rule_verdict.reason},
                "weight_sum": m.weight_sum,
            } for m in comparison.metrics],
            "only_a_metrics": comparison.only_a_metrics,
            "only_b_metrics": comparison.only_b_metrics,
            "sort_metric": comparison.sort_index,
            "keywords": [{
                "text": row.text, "keyword_a": row.keyword_a_id, "keyword_b": row.keyword_b_id,
                "values_a": row.values_a, "values_b": row.values_b, "deltas": row.deltas,
                "rbo": row.rbo, "same_ranking": row.same_ranking,
            } for row in comparison.keywords],
        }).data)


class EvaluationMetricsApi(APIView):
    """GET /evaluations/{id}/metrics/: each configured metric's mean over every keyword and
    its segment means (docs/METRICS.md, "Weighted means and segments")."""

    class OutputSerializer(serializers.Serializer):
        class MetricSerializer(serializers.Serializer):
            class SegmentSerializer(serializers.Serializer):
                segment = serializers.CharField(
                    help_text="A tag: the mean over the keywords carrying it; empty: over "
                              "every keyword.")
                weighted = serializers.BooleanField(
                    help_text="Weighted by the keywords' weights (their traffic); keywords "
                              "of weight 0 are left out.")
                value = serializers.FloatField(allow_null=True)
                keyword_count = serializers.IntegerField(
                    help_text="Keywords of the segment with a value (of weight above 0 when "
                              "weighted).")
                weight_sum = serializers.IntegerField(
                    help_text="Their weights' sum (their count when not weighted).")
                lower = serializers.FloatField(allow_null=True)
                upper = serializers.FloatField(allow_null=True)
                bounds_exact = serializers.BooleanField()

            id = serializers.IntegerField()
            code = serializers.CharField()
            k = serializers.IntegerField()
            params = serializers.DictField()
            label = serializers.CharField()
            value = serializers.FloatField(allow_null=True)
            keyword_count = serializers.IntegerField()
            lower = serializers.FloatField(allow_null=True)
            upper = serializers.FloatField(allow_null=True)
            bounds_exact = serializers.BooleanField()
            segments = SegmentSerializer(
                many=True, help_text="Every keyword first, then each tag (head, torso, "
                                     "tail first, then by name); plain before weighted.")

        evaluation = serializers.IntegerField()
        tags = serializers.ListField(child=serializers.CharField(),
                                     help_text="The tags the segments cover, in their order.")
        metrics = MetricSerializer(many=True)

    @extend_schema(responses=OutputSerializer, operation_id="evaluations_metrics")
    def get(self, request: Request, evaluation_id: int) -> Response:
        evaluation = evaluation_get_for_user(user=request.user, evaluation_id=evaluation_id,
                                             minimum_role=access.READS_ROLE)
        configs = metric_configs(evaluation.pk)
        means = segment_means_of(configs)
        return Response(self.OutputSerializer({
            "evaluation": evaluation.pk, "tags": means.tags,
            "metrics": [{
                "id": config.pk, "code": config.code, "k": config.k, "params": config.params,
                "label": metric_label(config), "value": config.value,
                "keyword_count": config.keyword_count, "lower": config.lower,
                "upper": config.upper, "bounds_exact": config.bounds_exact,
                "segments": [vars(mean) for segment in ["", *means.tags]
                             for weighted in (False, True)
                             if (mean := means.means.get((config.pk, segment, weighted)))],
            } for config in configs],
        }).data)
