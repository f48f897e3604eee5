"""The N-way compare over the API: GET /api/v1/compare/?evaluation=1&evaluation=2&...

The same selector as the page (metrics.reports.compare_many); the keywords come one page at a
time, each with its churn against the reference.
"""

import math

from django.core.exceptions import ValidationError
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from evaluations.models import Keyword
from evaluations.selectors import evaluations_get_for_user
from evaluations.services.keywords import MAX_TAG_LENGTH
from metrics.reports import compare_many
from metrics.reports.segments import SegmentChoice, SegmentMeans, segment_problem
from searchtweak import access
from searchtweak.integers import api_id


@extend_schema_field({"type": "array", "items": {
    "type": "array", "items": {"type": "number", "format": "double", "nullable": True}}})
class FloatMatrixField(serializers.Field):
    """Per metric, per evaluation: numbers or null, passed through as they are (a page of
    50 keywords x 10 evaluations x the metrics is thousands of numbers; a FloatField per
    number took most of the answer's time)."""

    def to_representation(self, value: list[list[float | None]]) -> list[list[float | None]]:
        return value


class ManyStatsSerializer(serializers.Serializer):
    evaluation = serializers.IntegerField()
    mean = serializers.FloatField(allow_null=True)
    ci_low = serializers.FloatField(allow_null=True)
    ci_high = serializers.FloatField(allow_null=True)
    present_count = serializers.IntegerField(
        help_text="Compared keywords with a value.")
    coverage = serializers.FloatField(allow_null=True)
    delta = serializers.FloatField(
        allow_null=True, help_text="Mean of (this - reference) over the keywords "
                                   "both have a value for (the verdict's delta); with a "
                                   "segment or weights, over the keywords this evaluation "
                                   "tags, weighted when asked; null for the reference.")
    paired_count = serializers.IntegerField(
        allow_null=True, help_text="The keywords `delta` covers.")
    p = serializers.FloatField(allow_null=True,
                               help_text="Over the keywords every evaluation has.")
    p_adjusted = serializers.FloatField(allow_null=True, help_text="Holm-adjusted.")
    significant = serializers.BooleanField()
    lower = serializers.FloatField(
        allow_null=True, help_text="The mean's lower bound under missing grades over the "
                                   "compared keywords (docs/METRICS.md).")
    upper = serializers.FloatField(allow_null=True)
    bounds_exact = serializers.BooleanField()
    decided = serializers.ChoiceField(
        choices=["better", "worse"], allow_null=True,
        help_text="Against the reference whatever the ungraded results are; null while "
                  "open, for the reference, or while some keyword's bounds are pending.")
    rule_verdict = serializers.DictField(
        allow_null=True,
        help_text="Against the reference by the team's rule, as its verdict and a gate "
                  "decide: {verdict, decided_by, reason}; null for the reference.")


class ManyPairSerializer(serializers.Serializer):
    first = serializers.IntegerField()
    second = serializers.IntegerField()
    delta = serializers.FloatField(help_text="mean(second) - mean(first).")
    p = serializers.FloatField(help_text="Randomized Tukey HSD p.")
    significant = serializers.BooleanField()


class ManyOverlapSerializer(serializers.Serializer):
    evaluation = serializers.IntegerField()
    rbo = serializers.FloatField(allow_null=True)
    jaccard = serializers.FloatField()
    entered = serializers.ListField(child=serializers.CharField())
    left = serializers.ListField(child=serializers.CharField())


class EvaluationCompareManyApi(APIView):
    """2 to 10 evaluations side by side against a reference."""

    class FilterSerializer(serializers.Serializer):
        evaluation = serializers.ListField(
            child=api_id(), min_length=1,
            max_length=compare_many.MAX_EVALUATIONS * 2,
            help_text="The evaluations to compare (repeat the parameter), 2 to 10, "
                      "one team, one scale.")
        reference = api_id(
            required=False,
            help_text="The evaluation the others are measured against (default: the first).")
        mode = serializers.ChoiceField(
            choices=list(compare_many.MODES), default="reference",
            help_text="reference: each against the reference, Holm-adjusted; tukey: all "
                      "pairs with a randomized Tukey HSD.")
        sort = serializers.RegexField(
            r"^(change|text|m\d{1,3})$", default="change",
            help_text="change: the largest |Δ| of any metric; m<i>: of the i-th metric; text.")
        dir = serializers.ChoiceField(choices=["asc", "desc"], required=False)
        show = serializers.ChoiceField(choices=["", "changed"], default="",
                                       help_text="changed: keywords with some Δ ≠ 0 only.")
        page = serializers.IntegerField(min_value=1, default=1)
        page_size = serializers.IntegerField(min_value=1, max_value=1000, default=50)
        segment = serializers.CharField(
            required=False, default="", allow_blank=True, max_length=MAX_TAG_LENGTH,
            help_text="Only the keywords carrying this tag: each mean over those its "
                      "evaluation tags, each delta and test over those the run tags; empty: "
                      "every shared keyword.")
        weighted = serializers.BooleanField(
            required=False, default=False,
            help_text="Means and deltas weigh each keyword by its weight (the run's for a "
                      "delta); intervals, p-values and pairs weigh every keyword alike.")

    class OutputSerializer(serializers.Serializer):
        class EvaluationRefSerializer(serializers.Serializer):
            id = serializers.IntegerField()
            name = serializers.CharField()
            status = serializers.CharField()
            scale = serializers.CharField()

        class MetricSerializer(serializers.Serializer):
            code = serializers.CharField()
            k = serializers.IntegerField()
            params = serializers.DictField()
            label = serializers.CharField()
            evaluations = ManyStatsSerializer(many=True)
            complete_count = serializers.IntegerField(
                help_text="tukey: keywords with a value in every evaluation.")
            pairs = ManyPairSerializer(many=True)

        class KeywordSerializer(serializers.Serializer):
            text = serializers.CharField()
            keyword_ids = serializers.ListField(child=serializers.IntegerField())
            values = FloatMatrixField(help_text="Per metric, per evaluation.")
            deltas = FloatMatrixField(help_text="Per metric, per evaluation, to the reference.")
            changed = serializers.BooleanField()
            overlaps = ManyOverlapSerializer(many=True, help_text="Per other evaluation.")

        evaluations = EvaluationRefSerializer(many=True)
        reference = serializers.IntegerField()
        segment = serializers.CharField(help_text="The tag compared; empty: every keyword.")
        weighted = serializers.BooleanField()
        mode = serializers.CharField()
        resamples = serializers.IntegerField()
        shared_keyword_count = serializers.IntegerField()
        changed_count = serializers.IntegerField()
        not_shared_count = serializers.IntegerField()
        unshared_metrics = serializers.ListField(child=serializers.CharField())
        rbo_k = serializers.IntegerField()
        metrics = MetricSerializer(many=True)
        keyword_count = serializers.IntegerField(help_text="After the `show` filter.")
        page = serializers.IntegerField()
        page_count = serializers.IntegerField()
        keywords = KeywordSerializer(many=True)

    @extend_schema(parameters=[FilterSerializer], responses=OutputSerializer,
                   operation_id="evaluations_compare_many")
    def get(self, request: Request) -> Response:
        filters = self.FilterSerializer(data=request.query_params)
        filters.is_valid(raise_exception=True)
        data = filters.validated_data
        ids = data["evaluation"]
        evaluations = evaluations_get_for_user(user=request.user, evaluation_ids=ids,
                                               minimum_role=access.READS_ROLE)
        reference_id = data.get("reference") or ids[0]
        reference = next((e for e in evaluations if e.pk == reference_id), None)
        sort = data["sort"]
        choice = SegmentChoice(data["segment"].strip().lower(), data["weighted"])
        problem = segment_problem(
            means=SegmentMeans({}, []), segment=choice.segment,
            keywords=Keyword.objects.filter(evaluation__in=evaluations),
            owner="the evaluations compared") if choice.segment else None
        if problem:
            raise ValidationError({"segment": problem})
        comparison = compare_many.evaluations_compare_many(
            evaluations=evaluations, reference=reference, mode=data["mode"], sort=sort,
            descending=data.get("dir", "asc" if sort == "text" else "desc") == "desc",
            show=data["show"], choice=choice)
        size = data["page_size"]
        page_count = max(1, math.ceil(len(comparison.keywords) / size))
        if data["page"] > page_count:
            raise ValidationError({"page": f"There are {page_count} pages."})
        start = (data["page"] - 1) * size
        rows = comparison.keywords[start:start + size]
        compare_many.keyword_overlaps(comparison=comparison, rows=rows)
        return Response(self.OutputSerializer(_payload(comparison, rows, data["page"],
                                                       page_count)).data)


def _payload(comparison: compare_many.ManyComparison, rows, page: int,
             page_count: int) -> dict:
    ids = [e.pk for e in comparison.evaluations]
    return {
        "evaluations": comparison.evaluations, "reference": comparison.reference.pk,
        "segment": comparison.choice.segment, "weighted": comparison.choice.weighted,
        "mode": comparison.mode, "resamples": comparison.resamples,
        "shared_keyword_count": comparison.shared_count,
        "changed_count": comparison.changed_count,
        "not_shared_count": comparison.not_shared_count,
        "unshared_metrics": comparison.unshared_metrics, "rbo_k": comparison.rbo_k,
        "metrics": [{
            "code": m.stats[0].config.code, "k": m.stats[0].config.k,
            "params": m.stats[0].config.params, "label": m.label,
            "evaluations": [{
                "evaluation": s.evaluation.pk, "mean": s.summary.mean,
                "ci_low": s.summary.ci[0] if s.summary.ci else None,
                "ci_high": s.summary.ci[1] if s.summary.ci else None,
                "present_count": s.summary.present_count, "coverage": s.summary.coverage,
                "delta": s.delta, "paired_count": s.delta_count,
                "p": s.test.p if s.test else None,
                "p_adjusted": s.test.p_adjusted if s.test else None,
                "significant": s.significant,
                "lower": s.bounds.lower if s.bounds else None,
                "upper": s.bounds.upper if s.bounds else None,
                "bounds_exact": s.bounds.exact if s.bounds else True,
                "decided": {1: "better", -1: "worse"}.get(s.decision),
                "rule_verdict": {"verdict": str(s.rule_verdict.verdict),
                                 "decided_by": str(s.rule_verdict.decided_by),
                                 "reason": s.rule_verdict.reason} if s.rule_verdict else None,
            } for s in m.stats],
            "complete_count": m.complete_count,
            "pairs": [{"first": first.pk, "second": second.pk, "delta": pair.mean_delta,
                       "p": pair.p, "significant": significant}
                      for first, second, pair, significant in m.named_pairs],
        } for m in comparison.metrics],
        "keyword_count": len(comparison.keywords), "page": page, "page_count": page_count,
        "keywords": [{
            "text": row.text, "keyword_ids": row.keyword_ids, "values": row.values,
            "deltas": row.deltas, "changed": row.changed,
            "overlaps": [{"evaluation": ids[e], "rbo": o.rbo, "jaccard": o.jaccard,
                          "entered": o.entered, "left": o.left}
                         for e, o in enumerate(row.overlaps or []) if o is not None],
        } for row in rows],
    }
