"""REST API of schedules ("watches"): list, create, detail, change, delete,
pause, resume, and the runs with their latest regression verdicts. Every member reads;
leads and above write (selectors.WRITE_ROLE), as on the pages. The services'
ValidationError names the field; the API's exception handler answers it as a 400."""

from typing import Any

from django.core.exceptions import ValidationError
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from evaluations.api import MetricConfigSerializer
from evaluations.models import KeywordSet, SearchModel
from metrics_engine.verdicts import MAX_SEGMENT_LENGTH, MAX_SEGMENTS
from schedules import selectors as schedule_selectors
from schedules import services
from schedules.models import Schedule
from schedules.selectors import WRITE_ROLE
from searchtweak.api_pagination import PageNumberPagination, paginated_response
from searchtweak.api_shared import (
    TEAM_PARAM,
    body_team,
    create_in_team_response,
    row_step_api,
    visible_team_ids,
)
from searchtweak.integers import api_id, api_integer


class ScheduleOutputSerializer(serializers.Serializer):
    class MetricSerializer(serializers.Serializer):
        code = serializers.CharField()
        k = serializers.IntegerField()
        params = serializers.JSONField()

        class Meta:
            ref_name = "ScheduleMetric"

    id = serializers.IntegerField()
    team = serializers.IntegerField(source="team_id")
    name = serializers.CharField()
    model = serializers.IntegerField(source="model_id")
    query_set = serializers.IntegerField(source="query_set_id")
    scale = serializers.CharField()
    strategy = serializers.IntegerField()
    metrics = MetricSerializer(many=True)
    interval_minutes = serializers.IntegerField(allow_null=True)
    cron = serializers.CharField()
    time_zone = serializers.CharField()
    when = serializers.CharField(source="when_text", help_text='In words: "every hour".')
    deadline_hours = serializers.IntegerField()
    judge_ids = serializers.ListField(child=serializers.IntegerField())
    baseline = serializers.ChoiceField(choices=Schedule.Baseline.choices)
    min_coverage = serializers.FloatField()
    threshold = serializers.FloatField(allow_null=True)
    segments = serializers.ListField(child=serializers.CharField(),
                                     help_text="Tags whose keywords each run is also judged "
                                               "on.")
    weighted = serializers.BooleanField(help_text="Whether the traffic-weighted means are "
                                                  "judged too.")
    keep_runs = serializers.IntegerField()
    next_due_at = serializers.DateTimeField(allow_null=True)
    paused = serializers.BooleanField(source="is_paused")
    paused_at = serializers.DateTimeField(allow_null=True)
    paused_reason = serializers.CharField()
    failed_run_streak = serializers.IntegerField(
        help_text="Runs in a row whose fetch failed for every keyword; 3 pause it.")
    created_at = serializers.DateTimeField()

    class Meta:
        ref_name = "Schedule"


class ScheduleInputSerializer(serializers.Serializer):
    team = api_id(required=False)
    name = serializers.CharField(max_length=200)
    model = api_id(help_text="A search model of the team.")
    query_set = api_id(
        help_text="A query set of the team; each run evaluates its current version.")
    scale = serializers.CharField(max_length=50)
    strategy = api_integer(
        help_text="1 or 3 graders per result, or 13: 1 grader, up to 3 where it matters.")
    metrics = MetricConfigSerializer(many=True)
    interval_minutes = api_integer(
        required=False, allow_null=True,
        help_text="Every this many minutes (at least 15). Give this or cron.")
    cron = serializers.CharField(
        required=False, allow_blank=True, max_length=100,
        help_text="A five-field cron expression read in time_zone, e.g. \"0 6 * * 1-5\".")
    time_zone = serializers.CharField(required=False, max_length=64,
                                      help_text="An IANA name; default UTC.")
    deadline_hours = api_integer(required=False, help_text="Default 24.")
    judge_ids = serializers.ListField(child=api_id(), required=False, max_length=100,
                                      help_text="Counting judges of the team.")
    baseline = serializers.ChoiceField(choices=Schedule.Baseline.choices, required=False,
                                       help_text="Default: the team's baseline.")
    min_coverage = serializers.FloatField(required=False,
                                          help_text="A share, 0..1; default 0.9.")
    threshold = serializers.FloatField(required=False, allow_null=True,
                                       help_text="An absolute change, or null for any "
                                                 "significant change.")
    segments = serializers.ListField(
        child=serializers.CharField(max_length=MAX_SEGMENT_LENGTH), required=False,
        max_length=MAX_SEGMENTS,
        help_text='Tags whose keywords each run is also judged on, e.g. ["tail", '
                  '"lang:de"]; default none.')
    weighted = serializers.BooleanField(
        required=False, help_text="Also judge the means weighted by the keywords' weights "
                                  "(traffic), overall and per segment; default false.")
    keep_runs = api_integer(required=False, help_text="Default 10.")

    class Meta:
        ref_name = "ScheduleInput"


def _team_rows(data: dict[str, Any], team_id: int) -> dict[str, Any]:
    """The ids of model and query set as the team's rows (a 400 on the field otherwise)."""
    errors = {}
    for name, model in (("model", SearchModel), ("query_set", KeywordSet)):
        if name in data:
            row = model.objects.filter(pk=data[name], team_id=team_id).first()
            if row is None:
                errors[name] = f"No such {model._meta.verbose_name} in this team."
            data[name] = row
    if errors:
        raise ValidationError(errors)
    if "metrics" in data:
        data["metrics"] = [dict(item) for item in data["metrics"]]
    return data


def _schedule_data(schedule: Schedule) -> dict:
    return ScheduleOutputSerializer(schedule).data


class ScheduleListApi(APIView):
    pagination_class = PageNumberPagination

    @extend_schema(responses=ScheduleOutputSerializer(many=True), parameters=[TEAM_PARAM],
                   operation_id="schedules_list",
                   description="The schedules of the caller's teams.")
    def get(self, request: Request) -> Response:
        schedules = Schedule.objects.filter(
            team_id__in=visible_team_ids(request)).order_by("name", "id")
        return paginated_response(self, request, schedules, lambda page: (
            ScheduleOutputSerializer(page, many=True).data))

    @extend_schema(request=ScheduleInputSerializer, responses={201: ScheduleOutputSerializer},
                   operation_id="schedules_create",
                   description="A schedule (leads). An interval schedule is due at once; a "
                               "cron schedule at its first time from now.")
    def post(self, request: Request) -> Response:
        return create_in_team_response(
            request, team=body_team(request, minimum_role=WRITE_ROLE),
            input_serializer=ScheduleInputSerializer,
            create=lambda team, data: services.schedule_create(
                team=team, created_by=request.user, **_team_rows(data, team.pk)),
            output=_schedule_data)


class ScheduleDetailApi(APIView):
    @extend_schema(responses=ScheduleOutputSerializer, operation_id="schedules_retrieve")
    def get(self, request: Request, schedule_id: int) -> Response:
        schedule = schedule_selectors.schedule_get_for_user(user=request.user,
                                                            schedule_id=schedule_id)
        return Response(_schedule_data(schedule))

    @extend_schema(request=ScheduleInputSerializer, responses=ScheduleOutputSerializer,
                   operation_id="schedules_partial_update",
                   description="Change any field (leads); giving cron clears the interval "
                               "and the other way round. A change of timing moves the next "
                               "due time to the first one from now.")
    def patch(self, request: Request, schedule_id: int) -> Response:
        schedule = schedule_selectors.schedule_get_for_user(
            user=request.user, schedule_id=schedule_id, minimum_role=WRITE_ROLE)
        serializer = ScheduleInputSerializer(data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        changes = {key: value for key, value in serializer.validated_data.items()
                   if key != "team"}
        # A schedule runs by one of the two: naming one replaces the other.
        if changes.get("cron") and "interval_minutes" not in changes:
            changes["interval_minutes"] = None
        if changes.get("interval_minutes") and "cron" not in changes:
            changes["cron"] = ""
        schedule = services.schedule_update(
            schedule=schedule, **_team_rows(changes, schedule.team_id))
        return Response(_schedule_data(schedule))

    @extend_schema(responses={204: None}, operation_id="schedules_destroy",
                   description="Deletes the schedule (leads); its runs stay as evaluations.")
    def delete(self, request: Request, schedule_id: int) -> Response:
        schedule = schedule_selectors.schedule_get_for_user(
            user=request.user, schedule_id=schedule_id, minimum_role=WRITE_ROLE)
        services.schedule_delete(schedule=schedule)
        return Response(status=status.HTTP_204_NO_CONTENT)


class SchedulePauseInputSerializer(serializers.Serializer):
    reason = serializers.CharField(required=False, allow_blank=True, max_length=300,
                                   help_text="Shown on the schedule's page.")

    class Meta:
        ref_name = "SchedulePauseInput"


def _led_schedule(request: Request, schedule_id: int) -> Schedule:
    return schedule_selectors.schedule_get_for_user(
        user=request.user, schedule_id=schedule_id, minimum_role=WRITE_ROLE)


def _pause(schedule: Schedule, request: Request) -> Schedule:
    serializer = SchedulePauseInputSerializer(data=request.data)
    serializer.is_valid(raise_exception=True)
    return services.schedule_pause(
        schedule=schedule,
        reason=serializer.validated_data.get("reason") or f"paused by {request.user.username}")


SchedulePauseApi = row_step_api(
    "SchedulePauseApi", load=_led_schedule, step=_pause, output=_schedule_data,
    request=SchedulePauseInputSerializer, responses=ScheduleOutputSerializer,
    operation_id="schedules_pause",
    description="Stop making runs (leads); pausing a paused schedule changes nothing.")

ScheduleResumeApi = row_step_api(
    "ScheduleResumeApi", load=_led_schedule,
    step=lambda schedule, _request: services.schedule_resume(schedule=schedule),
    output=_schedule_data, request=None, responses=ScheduleOutputSerializer,
    operation_id="schedules_resume",
    description="Make runs again from the next due time after now (leads); missed due "
                "times are not made up, and the failure streak restarts.")


class ScheduleRunsApi(APIView):
    pagination_class = PageNumberPagination

    class OutputSerializer(serializers.Serializer):
        class VerdictSerializer(serializers.Serializer):
            verdict = serializers.CharField(
                help_text="regressed, improved, no_change or undecided.")
            reasons = serializers.ListField(child=serializers.CharField(),
                                            help_text="The overall reason first.")
            baseline_name = serializers.CharField()
            created_at = serializers.DateTimeField()
            rule = serializers.DictField(help_text="The schedule's rule that decided it.")

            class Meta:
                ref_name = "ScheduleRunVerdict"

        evaluation = serializers.IntegerField(source="evaluation_id")
        name = serializers.CharField(source="evaluation.name")
        status = serializers.CharField(source="evaluation.status")
        due_at = serializers.DateTimeField()
        deadline_at = serializers.DateTimeField()
        fetch_failed = serializers.BooleanField()
        archived = serializers.BooleanField(help_text="Beyond keep_runs: archived.")
        verdict = VerdictSerializer(allow_null=True,
                                    help_text="The newest verdict of the schedule's rule (a gate "
                                              "call never replaces it), or null.")

        class Meta:
            ref_name = "ScheduleRun"

    @extend_schema(responses=OutputSerializer(many=True), operation_id="schedules_runs_list",
                   description="The schedule's runs, newest due time first, each with its "
                               "newest verdict of the schedule's rule.")
    def get(self, request: Request, schedule_id: int) -> Response:
        schedule = schedule_selectors.schedule_get_for_user(user=request.user,
                                                            schedule_id=schedule_id)

        def rows(page) -> list:
            runs = schedule_selectors.with_latest_verdicts(list(page))
            for run in runs:
                run.archived = run.evaluation.archived_at is not None
            return self.OutputSerializer(runs, many=True).data

        return paginated_response(
            self, request, schedule_selectors.schedule_runs(schedule_id=schedule.pk), rows)
