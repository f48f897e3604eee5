"""REST API of clicks graders: list a team's and read one (leads and admins, as judges are
listed), make and change one (admins); and a judge run's learned grades with their
evidence (whoever may read the run, as its CSV and JSON Lines). Its runs, calibration and
counts switch are the judges' API's: a clicks grader is a judge (`judge` is its id
there)."""

from django.core.exceptions import ValidationError
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from behaviour import evidence, learning
from behaviour.models import BehaviourSource, ClickGrader
from behaviour.selectors import click_grader_get_for_user
from judges import run_selectors
from judges import selectors as judge_selectors
from judges.api_judges import team_id_param
from searchtweak import access
from searchtweak.api_changes import sent_changes
from searchtweak.api_pagination import PageNumberPagination, paginated_response
from searchtweak.api_shared import TEAM_PARAM, body_team, create_in_team_response
from searchtweak.integers import ID_MAX, api_id


class ClickGraderOutputSerializer(serializers.Serializer):
    judge = serializers.IntegerField(source="judge_id", help_text="Its judge's id: runs, "
                                     "calibration and counts are the judges' API's.")
    name = serializers.CharField(source="judge.name")
    team = serializers.IntegerField(source="judge.team_id")
    source = serializers.IntegerField(source="source_id")
    click_model = serializers.CharField(help_text="coec or pbm.")
    start_on = serializers.DateField(allow_null=True)
    end_on = serializers.DateField(allow_null=True)
    min_impressions = serializers.IntegerField()
    cuts = serializers.ListField(child=serializers.FloatField(),
                                 help_text="Empty: even cuts of the evaluation's scale.")
    tags = serializers.ListField(child=serializers.CharField(), source="judge.tags")
    is_active = serializers.BooleanField(source="judge.is_active")
    counts = serializers.BooleanField(source="judge.counts")

    class Meta:
        ref_name = "ClickGrader"


class ClickGraderInputSerializer(serializers.Serializer):
    team = api_id(required=False)
    name = serializers.CharField(max_length=100)
    source = serializers.IntegerField(min_value=1, max_value=ID_MAX)
    click_model = serializers.ChoiceField(choices=ClickGrader.Model.values)
    start_on = serializers.DateField(required=False, allow_null=True, default=None)
    end_on = serializers.DateField(required=False, allow_null=True, default=None)
    min_impressions = serializers.IntegerField(min_value=1,
                                               max_value=learning.MAX_MIN_IMPRESSIONS,
                                               default=10)
    cuts = serializers.ListField(child=serializers.FloatField(), required=False, default=list,
                                 help_text="n - 1 rising numbers in (0, 1) for a scale of n "
                                           "grades; empty: even cuts.")
    tags = serializers.ListField(child=serializers.CharField(max_length=100), required=False,
                                 default=list)


class ClickGraderChangeSerializer(ClickGraderInputSerializer):
    """PATCH: any of these; what is not sent keeps its value."""

    team = None
    is_active = serializers.BooleanField(required=False)

    class Meta:
        ref_name = "ClickGraderChange"


def _create(request: Request, team, data: dict) -> ClickGrader:
    data["source"] = access.row_get_for_user(
        BehaviourSource.objects.filter(team=team), user=request.user, pk=data["source"],
        what="behaviour source")
    return learning.click_grader_create(team=team, by=request.user, **data)


class ClickGraderListApi(APIView):
    pagination_class = PageNumberPagination

    @extend_schema(responses=ClickGraderOutputSerializer(many=True), parameters=[TEAM_PARAM],
                   operation_id="click_graders_list",
                   description="The clicks graders of one team (?team=, default your "
                               "current one), for leads and admins.")
    def get(self, request: Request) -> Response:
        membership = access.team_or_current_access(
            user=request.user, team_id=team_id_param(request.query_params.get("team")),
            minimum_role=judge_selectors.LIST_ROLE)
        graders = ClickGrader.objects.filter(judge__team_id=membership.team_id).select_related(
            "judge").order_by("judge__name")
        return paginated_response(self, request, graders, lambda page: (
            ClickGraderOutputSerializer(page, many=True).data))

    @extend_schema(request=ClickGraderInputSerializer,
                   responses={201: ClickGraderOutputSerializer},
                   operation_id="click_graders_create",
                   description="A judge of provider clicks that learns its grades from a "
                               "behaviour source of the team; it does not count until a "
                               "shadow run calibrates it.")
    def post(self, request: Request) -> Response:
        return create_in_team_response(
            request, team=body_team(request,
                                    minimum_role=judge_selectors.CONFIGURATION_ROLE),
            input_serializer=ClickGraderInputSerializer,
            create=lambda team, data: _create(request, team, data),
            output=lambda grader: ClickGraderOutputSerializer(grader).data)


class ClickGraderDetailApi(APIView):
    @extend_schema(responses=ClickGraderOutputSerializer, operation_id="click_graders_retrieve",
                   description="One clicks grader by its judge's id, for leads and admins.")
    def get(self, request: Request, judge_id: int) -> Response:
        grader = click_grader_get_for_user(user=request.user, judge_id=judge_id,
                                           minimum_role=judge_selectors.LIST_ROLE)
        return Response(ClickGraderOutputSerializer(grader).data)

    @extend_schema(request=ClickGraderChangeSerializer, responses=ClickGraderOutputSerializer,
                   operation_id="click_graders_partial_update",
                   description="Change how it learns (source, model, days, minimum, cuts) or "
                               "its name, tags, active flag; admins. The grades it learned "
                               "already keep theirs, with the settings they were learned "
                               "with; its next run uses the new ones. A 400 names each bad "
                               "field and changes nothing.")
    def patch(self, request: Request, judge_id: int) -> Response:
        grader = click_grader_get_for_user(user=request.user, judge_id=judge_id,
                                           minimum_role=judge_selectors.CONFIGURATION_ROLE)
        changes = sent_changes(ClickGraderChangeSerializer, request, leave_out=())
        if "source" in changes:
            changes["source"] = _team_source(grader, changes["source"])
        grader = learning.click_grader_update(grader=grader, by=request.user, **changes)
        return Response(ClickGraderOutputSerializer(grader).data)


def _team_source(grader: ClickGrader, source_id: int) -> BehaviourSource:
    source = BehaviourSource.objects.filter(team_id=grader.judge.team_id, pk=source_id).first()
    if source is None:
        raise ValidationError({"source": "The team has no behaviour source with this id."})
    return source


class LearnedGradeSerializer(serializers.Serializer):
    keyword = serializers.CharField()
    doc_id = serializers.CharField()
    position = serializers.IntegerField(help_text="The result's rank in its keyword, 1 first.")
    status = serializers.CharField(help_text="The run item's: done, failed or skipped.")
    grade = serializers.IntegerField(allow_null=True, help_text="Null: no grade learned.")
    impressions = serializers.IntegerField()
    clicks = serializers.IntegerField()
    click_through = serializers.FloatField(allow_null=True,
                                           help_text="Clicks over impressions, as shown.")
    relevance = serializers.FloatField(allow_null=True, help_text="The estimated "
                                       "click-through at position 1; null without a grade.")
    click_model = serializers.CharField(help_text="What it was learned with: coec or pbm.")
    source = serializers.CharField(help_text="The behaviour source's name.")
    start_on = serializers.DateField(allow_null=True)
    end_on = serializers.DateField(allow_null=True)
    min_impressions = serializers.IntegerField()
    failure = serializers.CharField(help_text="Why no grade (few_impressions); empty if one.")


class JudgeRunLearnedApi(APIView):
    pagination_class = PageNumberPagination

    @extend_schema(responses=LearnedGradeSerializer(many=True),
                   operation_id="judge_runs_learned_list",
                   description="A judge run's learned grades with their evidence, in the "
                               "evaluation's order (keyword, then rank), as the run's CSV and "
                               "JSON Lines have them; none for an LLM judge's run. For "
                               "whoever may read the run.")
    def get(self, request: Request, run_id: int) -> Response:
        run = run_selectors.run_get_for_user(user=request.user, run_id=run_id)
        return paginated_response(self, request, evidence.run_evidence(run=run), lambda page: (
            LearnedGradeSerializer([evidence.learned_record(row) for row in page],
                                   many=True).data))
