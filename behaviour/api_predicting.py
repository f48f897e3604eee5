"""REST API of "do offline metrics predict behaviour?": one evaluation's metric against a
behaviour source's CTR@k or first-click RR per keyword (every member reads)."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from behaviour.predicting import ONLINE_MEASURES, offline_vs_behaviour, prediction_inputs
from evaluations.selectors import evaluation_get_for_user
from searchtweak.integers import ID_MAX

K_MAX = 1000


class IntervalSerializer(serializers.Serializer):
    low = serializers.FloatField()
    high = serializers.FloatField()

    class Meta:
        ref_name = "BehaviourFitInterval"


class EvaluationBehaviourFitApi(APIView):
    class InputSerializer(serializers.Serializer):
        source = serializers.IntegerField(min_value=1, max_value=ID_MAX, required=False)
        metric = serializers.IntegerField(min_value=1, max_value=ID_MAX, required=False)
        online = serializers.ChoiceField(choices=list(ONLINE_MEASURES), default="ctr")
        k = serializers.IntegerField(min_value=1, max_value=K_MAX, default=10)
        start_on = serializers.DateField(required=False)
        end_on = serializers.DateField(required=False)

        def validate(self, data):
            if data.get("start_on") and data.get("end_on") and data["start_on"] > data["end_on"]:
                raise serializers.ValidationError({"end_on": "The window ends before it "
                                                             "starts."})
            return data

    class CorrelationSerializer(serializers.Serializer):
        keyword_count = serializers.IntegerField(help_text="Keywords with both values.")
        spearman = serializers.FloatField(allow_null=True)
        kendall = serializers.FloatField(allow_null=True, help_text="Kendall's τ-b.")
        spearman_interval = IntervalSerializer(allow_null=True)
        kendall_interval = IntervalSerializer(allow_null=True)
        resamples = serializers.IntegerField()
        used = serializers.IntegerField(help_text="Resamples with a correlation (not all "
                                                  "tied).")
        confidence = serializers.FloatField()
        seed = serializers.IntegerField()

    class PointSerializer(serializers.Serializer):
        keyword_id = serializers.IntegerField()
        text = serializers.CharField()
        offline = serializers.FloatField(allow_null=True)
        online = serializers.FloatField(allow_null=True)
        disagreement = serializers.FloatField(
            allow_null=True, help_text="|offline rank - online rank|, ranks scaled to 0..1.")

    class OutputSerializer(serializers.Serializer):
        metric_id = serializers.IntegerField()
        metric_label = serializers.CharField()
        online = serializers.CharField()
        online_label = serializers.CharField()
        k = serializers.IntegerField()
        correlation = serializers.SerializerMethodField()
        points = serializers.SerializerMethodField()
        disagreeing = serializers.SerializerMethodField(
            help_text="The keywords of greatest disagreement, greatest first.")

        def get_correlation(self, found) -> dict:
            return EvaluationBehaviourFitApi.CorrelationSerializer(found.correlation).data

        def get_points(self, found) -> list[dict]:
            return EvaluationBehaviourFitApi.PointSerializer(found.points, many=True).data

        def get_disagreeing(self, found) -> list[dict]:
            return EvaluationBehaviourFitApi.PointSerializer(found.disagreeing, many=True).data

    @extend_schema(
        parameters=[InputSerializer],
        responses=OutputSerializer, operation_id="evaluation_behaviour_fit",
        description="Per keyword one configured metric (default: the first) against CTR@k "
                    "or first-click RR of a behaviour source (default: the team's newest) "
                    "over a window of days, their Spearman and Kendall rank correlation "
                    "with a seeded 95% bootstrap interval, and the keywords where they "
                    "disagree most. 400 naming `source` or `metric` when the team has "
                    "no source or the evaluation no metric.")
    def get(self, request: Request, evaluation_id: int) -> Response:
        evaluation = evaluation_get_for_user(user=request.user, evaluation_id=evaluation_id)
        given = self.InputSerializer(data=request.query_params)
        given.is_valid(raise_exception=True)
        data = given.validated_data
        inputs = prediction_inputs(user=request.user, evaluation=evaluation,
                                   source_id=data.get("source"), metric_id=data.get("metric"))
        if inputs.source is None:
            raise serializers.ValidationError(
                {"source": "The team has no behaviour source: import one first."})
        if inputs.metric is None:
            raise serializers.ValidationError(
                {"metric": "The evaluation has no metric configured."})
        found = offline_vs_behaviour(
            evaluation=evaluation, source=inputs.source, metric=inputs.metric,
            online=data["online"], k=data["k"], start_on=data.get("start_on"),
            end_on=data.get("end_on"))
        return Response(self.OutputSerializer(found).data)

