"""REST API of judge runs and call logs (/api/v1/): start a run on an evaluation, read it
with its progress and failed pairs, pause, resume, cancel, retry; a judge's calls paged or
as JSON Lines. Access as on the pages (judges.run_selectors.RUNS_ROLE)."""

from collections.abc import Callable
from typing import Any

from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import renderers, serializers, status
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from audit.models import Action
from audit.services import audit_record
from judges import access as judge_access
from judges import call_export, estimates, run_selectors, runs
from judges.models import Judge, JudgeRun
from searchtweak.api_pagination import PageNumberPagination, paginated_response
from searchtweak.api_shared import row_step_api
from searchtweak.integers import BoundedPrimaryKeyRelatedField, api_id

# --- runs --------------------------------------------------------------------------------


class RunOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    judge = serializers.IntegerField(source="judge_id")
    judge_name = serializers.CharField(source="judge.name")
    evaluation = serializers.IntegerField(source="evaluation_id")
    mode = serializers.ChoiceField(choices=JudgeRun.Mode.choices)
    status = serializers.ChoiceField(choices=JudgeRun.Status.choices)
    refresh_cache = serializers.BooleanField()
    started_by = serializers.CharField(source="started_by.username", allow_null=True,
                                       default=None)
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)
    pair_count = serializers.IntegerField()
    done_count = serializers.IntegerField()
    failed_count = serializers.IntegerField()
    skipped_count = serializers.IntegerField(
        help_text="Pairs a person graded before the judge got to them: not failures.")
    left_count = serializers.IntegerField()
    cached_count = serializers.IntegerField()
    budget = serializers.DecimalField(
        max_digits=12, decimal_places=4, allow_null=True,
        help_text="The most this run may spend at its judge's prices; null: no cap.")
    spend = serializers.DecimalField(
        max_digits=14, decimal_places=4,
        help_text="What its calls cost (recorded tokens at the prices), with the expected "
                  "cost of calls under way.")


class ProgressSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=JudgeRun.Status.choices)
    pairs = serializers.IntegerField()
    done = serializers.IntegerField()
    failed = serializers.IntegerField()
    skipped = serializers.IntegerField()
    left = serializers.IntegerField()
    cached = serializers.IntegerField()
    calls = serializers.IntegerField()
    tokens_in = serializers.IntegerField()
    tokens_out = serializers.IntegerField()
    cost = serializers.DecimalField(max_digits=20, decimal_places=4, allow_null=True,
                                    help_text="At the judge's prices per million tokens; "
                                              "null when it has none.")
    currency = serializers.CharField(help_text="The currency of cost (the judge's).")
    percent_done = serializers.IntegerField(min_value=0, max_value=100)
    crashes = serializers.IntegerField(
        help_text="Batches that raised and lanes that died holding pairs; crashes in a row "
                  "pause the run.")
    pause_reason = serializers.CharField(
        help_text="Why the run paused itself (its lanes kept crashing, or the next call "
                  "would pass its budget or its team's monthly budget); empty otherwise.")


class RunDetailOutputSerializer(RunOutputSerializer):
    progress = ProgressSerializer()


def _run_detail(run: JudgeRun, **extra: Any) -> dict:
    run.refresh_from_db()  # an action or a task under way changed it
    run.progress = runs.run_progress(run=run)
    return {**RunDetailOutputSerializer(run).data, **extra}


class EvaluationJudgeRunsApi(APIView):
    pagination_class = PageNumberPagination

    class InputSerializer(serializers.Serializer):
        judge = BoundedPrimaryKeyRelatedField(
            queryset=Judge.objects.none(), help_text="A judge of the evaluation's team.")
        mode = serializers.ChoiceField(choices=JudgeRun.Mode.choices)
        refresh_cache = serializers.BooleanField(
            default=False, help_text="Ask again even where the cache holds an answer. An "
                                     "LLM judge's only: true for a clicks grader is a 400.")
        budget = serializers.DecimalField(
            max_digits=12, decimal_places=4, required=False, allow_null=True, default=None,
            help_text="The most the run may spend at the judge's prices (which it needs): "
                      "it pauses before a call would take it over. An LLM judge's only: a "
                      "clicks grader costs nothing, and a budget for one is a 400.")

        def __init__(self, *args: Any, team_id: int = 0, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.fields["judge"].queryset = Judge.objects.filter(team_id=team_id)

    @extend_schema(responses=RunOutputSerializer(many=True),
                   operation_id="evaluation_judge_runs_list")
    def get(self, request: Request, evaluation_id: int) -> Response:
        evaluation = run_selectors.evaluation_for_runs(user=request.user,
                                                       evaluation_id=evaluation_id)
        return paginated_response(
            self, request, run_selectors.runs_of_evaluation(evaluation=evaluation),
            lambda page: RunOutputSerializer(page, many=True).data)

    @extend_schema(request=InputSerializer, responses={201: RunDetailOutputSerializer},
                   operation_id="evaluation_judge_runs_start",
                   description="Starts a judge on the evaluation; its batches run in the "
                               "background. Shadow grades everything and counts nothing; "
                               "ungraded and fill need a judge that counts.")
    def post(self, request: Request, evaluation_id: int) -> Response:
        evaluation = run_selectors.evaluation_for_runs(user=request.user,
                                                       evaluation_id=evaluation_id)
        serializer = self.InputSerializer(data=request.data, team_id=evaluation.team_id)
        serializer.is_valid(raise_exception=True)
        run = runs.run_start(evaluation=evaluation, started_by=request.user,
                             **serializer.validated_data)
        return Response(_run_detail(run), status=status.HTTP_201_CREATED)


class EvaluationJudgeRunEstimateApi(APIView):
    class FilterSerializer(serializers.Serializer):
        judge = BoundedPrimaryKeyRelatedField(
            queryset=Judge.objects.none(), help_text="A judge of the evaluation's team.")
        mode = serializers.ChoiceField(choices=JudgeRun.Mode.choices)
        refresh_cache = serializers.BooleanField(default=False)

        def __init__(self, *args: Any, team_id: int = 0, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.fields["judge"].queryset = Judge.objects.filter(team_id=team_id)

    class OutputSerializer(serializers.Serializer):
        pair_count = serializers.IntegerField(help_text="Pairs the run would ask about now.")
        cached_count = serializers.IntegerField(
            help_text="Of those, pairs the judge's cache answers (0 with refresh_cache).")
        asked_count = serializers.IntegerField()
        call_count = serializers.IntegerField(
            help_text="One call per batch of one keyword's pairs.")
        sampled_count = serializers.IntegerField(
            help_text="Pairs whose prompts were rendered to measure the tokens in.")
        tokens_in = serializers.IntegerField()
        tokens_out = serializers.IntegerField()
        tokens_out_source = serializers.CharField(
            help_text="history (the judge's past answers), max_tokens (its parameter, an "
                      "upper bound) or guess.")
        cost = serializers.DecimalField(max_digits=20, decimal_places=4, allow_null=True,
                                        help_text="At the judge's prices; null without.")
        currency = serializers.CharField()
        problem = serializers.CharField(help_text="Why there is no estimate; empty if none.")
        makes_calls = serializers.BooleanField(
            help_text="False for a clicks grader: it learns here, so no call, cost 0 and "
                      "no cache.")
        gradable_count = serializers.IntegerField(
            allow_null=True,
            help_text="A clicks grader's: of pair_count, how many it would grade now (enough "
                      "impressions in its window; the rest would fail as few impressions). "
                      "Null for an LLM judge.")

    @extend_schema(parameters=[FilterSerializer], responses=OutputSerializer,
                   operation_id="evaluation_judge_runs_estimate",
                   description="What starting this run now would take: pairs, cache hits, "
                               "calls, tokens (measured on rendered prompts) and cost.")
    def get(self, request: Request, evaluation_id: int) -> Response:
        evaluation = run_selectors.evaluation_for_runs(user=request.user,
                                                       evaluation_id=evaluation_id)
        filters = self.FilterSerializer(data=request.query_params, team_id=evaluation.team_id)
        filters.is_valid(raise_exception=True)
        estimate = estimates.judge_run_estimate(evaluation=evaluation,
                                                **filters.validated_data)
        return Response(self.OutputSerializer(estimate).data)


class JudgeRunDetailApi(APIView):
    @extend_schema(responses=RunDetailOutputSerializer, operation_id="judge_runs_retrieve")
    def get(self, request: Request, run_id: int) -> Response:
        run = run_selectors.run_get_for_user(user=request.user, run_id=run_id)
        return Response(_run_detail(run))


def _run_step(service: Callable[..., object]) -> Callable[[JudgeRun, Request], JudgeRun]:
    """The action on the run as loaded (its judge and starter too); _run_detail reads what
    the action left."""
    def step(run: JudgeRun, _request: Request) -> JudgeRun:
        service(run=run)
        return run
    return step


def _load_run(request: Request, run_id: int) -> JudgeRun:
    return run_selectors.run_get_for_user(user=request.user, run_id=run_id)


JudgeRunPauseApi = row_step_api(
    "JudgeRunPauseApi", load=_load_run, step=_run_step(runs.run_pause), output=_run_detail,
    request=None, responses=RunDetailOutputSerializer, operation_id="judge_runs_pause",
    description="No new batch starts; batches under way finish.")

class ResumeInputSerializer(serializers.Serializer):
    budget = serializers.DecimalField(
        max_digits=12, decimal_places=4, required=False, allow_null=True, default=None,
        help_text="A new budget for the run from now on (one its budget paused would "
                  "otherwise pause again); left out: the budget stays.")


def _resume(run: JudgeRun, request: Request) -> JudgeRun:
    serializer = ResumeInputSerializer(data=request.data)
    serializer.is_valid(raise_exception=True)
    runs.run_resume(run=run, **serializer.validated_data)
    return run


JudgeRunResumeApi = row_step_api(
    "JudgeRunResumeApi", load=_load_run, step=_resume, output=_run_detail,
    request=ResumeInputSerializer, responses=RunDetailOutputSerializer,
    operation_id="judge_runs_resume")

JudgeRunCancelApi = row_step_api(
    "JudgeRunCancelApi", load=_load_run, step=_run_step(runs.run_cancel), output=_run_detail,
    request=None, responses=RunDetailOutputSerializer, operation_id="judge_runs_cancel")


class JudgeRunRetryApi(APIView):
    class OutputSerializer(RunDetailOutputSerializer):
        retried = serializers.IntegerField(help_text="Failed pairs put back to be asked again.")

    @extend_schema(request=None, responses=OutputSerializer, operation_id="judge_runs_retry",
                   description="Asks the failed pairs again.")
    def post(self, request: Request, run_id: int) -> Response:
        run = run_selectors.run_get_for_user(user=request.user, run_id=run_id)
        retried = runs.run_retry_failed(run=run)
        return Response(_run_detail(run, retried=retried))


class JudgeRunFailedApi(APIView):
    pagination_class = PageNumberPagination

    class OutputSerializer(serializers.Serializer):
        item = serializers.IntegerField(source="item_id")
        keyword = serializers.CharField()
        doc_id = serializers.CharField()
        failure = serializers.CharField(
            help_text="Why: a rejection code (missing, duplicate, out_of_scale, …) or the "
                      "call's error status.")
        detail = serializers.CharField()
        call = serializers.IntegerField(source="call_id", allow_null=True)

    @extend_schema(responses=OutputSerializer(many=True), operation_id="judge_runs_failed")
    def get(self, request: Request, run_id: int) -> Response:
        run = run_selectors.run_get_for_user(user=request.user, run_id=run_id)
        return paginated_response(self, request, run_selectors.failed_items_of_run(run=run),
                                  lambda page: self.OutputSerializer(page, many=True).data)


# --- calls -------------------------------------------------------------------------------


class CallFilterSerializer(serializers.Serializer):
    run = api_id(required=False, help_text="Only this run's.")
    status = serializers.ChoiceField(choices=run_selectors.CALL_STATUSES, required=False)
    is_test = serializers.BooleanField(required=False, allow_null=True, default=None,
                                       help_text="true: Test calls only; false: run calls.")
    started_from = serializers.DateField(required=False, help_text="From this day on.")
    started_to = serializers.DateField(required=False, help_text="Up to this day, included.")

    def filters(self) -> run_selectors.CallFilters:
        data = self.validated_data
        return run_selectors.CallFilters(
            run_id=data.get("run"), status=data.get("status", ""), is_test=data.get("is_test"),
            started_from=data.get("started_from"), started_to=data.get("started_to"))


class CallOutputSerializer(serializers.Serializer):
    """The shape of judges.call_export.call_record (the JSONL lines too)."""

    id = serializers.IntegerField()
    run = serializers.IntegerField(allow_null=True)
    status = serializers.CharField()
    http_status = serializers.IntegerField(allow_null=True)
    started_at = serializers.DateTimeField()
    latency_ms = serializers.IntegerField()
    tokens_in = serializers.IntegerField(allow_null=True)
    tokens_out = serializers.IntegerField(allow_null=True)
    pair_count = serializers.IntegerField()
    request = serializers.JSONField(help_text="method, url, headers, body; keys redacted.")
    answer = serializers.CharField()
    error = serializers.CharField()
    is_test = serializers.BooleanField()


def _filtered_calls(request: Request, judge_id: int):
    judge = judge_access.judge_get_for_user(user=request.user, judge_id=judge_id,
                                             minimum_role=run_selectors.RUNS_ROLE)
    query = CallFilterSerializer(data=request.query_params)
    query.is_valid(raise_exception=True)
    return run_selectors.calls_of_judge(judge=judge, filters=query.filters()), judge


class JudgeCallsApi(APIView):
    pagination_class = PageNumberPagination

    @extend_schema(parameters=[CallFilterSerializer], responses=CallOutputSerializer(many=True),
                   operation_id="judge_calls_list", description="Newest first.")
    def get(self, request: Request, judge_id: int) -> Response:
        calls, _ = _filtered_calls(request, judge_id)
        return paginated_response(
            self, request, calls,
            lambda page: [call_export.call_record(call) for call in page])


class _JsonErrorsNegotiation(BaseContentNegotiation):
    """Whatever the client accepts (application/x-ndjson included): the calls stream as
    JSON Lines in the view's own response, and an error met before is JSON, as documented."""

    def select_parser(self, request, parsers):
        return parsers[0]

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


class JudgeCallsJsonlApi(APIView):
    renderer_classes = [renderers.JSONRenderer]
    content_negotiation_class = _JsonErrorsNegotiation

    @extend_schema(
        parameters=[CallFilterSerializer], operation_id="judge_calls_jsonl",
        responses={(200, call_export.JSONL_CONTENT_TYPE): OpenApiResponse(
            response=OpenApiTypes.STR,
            description="One call a line, the fields of judge_calls_list, newest first.")},
        description="The filtered calls as JSON Lines, streamed.")
    def get(self, request: Request, judge_id: int) -> StreamingHttpResponse:
        calls, judge = _filtered_calls(request, judge_id)
        audit_record(action=Action.EXPORT_DOWNLOADED, actor=request.user,
                     team_id=judge.team_id, object_type="judge_calls", object_id=judge.pk,
                     after={"format": "jsonl"})
        response = StreamingHttpResponse(call_export.calls_jsonl(calls),
                                         content_type=call_export.JSONL_CONTENT_TYPE)
        response["Content-Disposition"] = (
            f'attachment; filename="{call_export.export_filename(judge.pk)}"')
        return response
