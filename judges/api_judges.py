"""REST API of judge administration (/api/v1/judges/): list (leads too, without the
configuration), create, read, change, delete (deactivate when used) and Test (admins).
The API key goes in, never out: answers say only ``api_key_set``."""

from typing import Any

from django.core.exceptions import ValidationError
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from judges import selectors, services, trial_calls
from judges.access import judge_get_for_user
from judges.core.prompts import Document
from judges.models import CALLED_PROVIDER_CHOICES, Judge
from judges.services import MAX_RETRIES
from searchtweak import access
from searchtweak.api_changes import sent_changes
from searchtweak.api_pagination import PageNumberPagination, paginated_response
from searchtweak.api_shared import (
    TEAM_PARAM,
    body_team,
    create_in_team_response,
    delete_or_keep_response,
)
from searchtweak.integers import ID_MAX, api_id, api_integer, bounded

CONFIGURATION_HELP = "Shown to admins of the team; the list leaves it out for leads."


class _ApiKeySetField(serializers.BooleanField):
    """Whether a key is stored; the key itself never leaves the server."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(source="api_key_encrypted", required=False, **kwargs)

    def to_representation(self, value: str) -> bool:
        return bool(value)


class JudgeOutputSerializer(serializers.Serializer):
    CONFIGURATION_FIELDS = ("base_url", "api_key_set", "prompt_templates", "parameters",
                            "timeout_seconds", "max_retries", "max_concurrent_requests",
                            "requests_per_minute", "allow_cross_origin_redirects",
                            "send_images")

    id = serializers.IntegerField()
    team = serializers.IntegerField(source="team_id")
    user = serializers.IntegerField(source="user_id",
                                    help_text="The service account its grades carry.")
    name = serializers.CharField()
    provider = serializers.ChoiceField(choices=Judge.Provider.choices)
    model = serializers.CharField()
    base_url = serializers.CharField(required=False, help_text=CONFIGURATION_HELP)
    api_key_set = _ApiKeySetField(help_text=CONFIGURATION_HELP)
    prompt_templates = serializers.DictField(
        child=serializers.CharField(), required=False,
        help_text="{scale code: template}, only where it differs from the shipped default. "
                  + CONFIGURATION_HELP)
    batch_size = serializers.IntegerField()
    parameters = serializers.DictField(required=False, help_text=CONFIGURATION_HELP)
    tags = serializers.ListField(child=serializers.CharField())
    is_active = serializers.BooleanField()
    counts = serializers.BooleanField(help_text="Its grades may fill slots (after a shadow "
                                                "run and calibration).")
    counts_granted_by = serializers.CharField(
        source="counts_granted_by.username", allow_null=True, default=None,
        help_text="Who let its grades count (null while it does not).")
    counts_granted_at = serializers.DateTimeField(allow_null=True)
    counts_evidence = serializers.DictField(
        help_text="The calibration figures and the team's bar when it was let count.")
    counts_override_reason = serializers.CharField(
        help_text="Not empty: its figures fell short of the bar and an admin let it count "
                  "anyway, for this reason.")
    allow_cross_origin_redirects = serializers.BooleanField(
        required=False, help_text="A redirect to another origin is followed, without the "
        "key. " + CONFIGURATION_HELP)
    send_images = serializers.BooleanField(
        required=False, help_text="Results' images go with the prompt when its template "
        "has {{images}} (Ollama's fetched and sent as base64). " + CONFIGURATION_HELP)
    timeout_seconds = serializers.FloatField(required=False, help_text=CONFIGURATION_HELP)
    max_retries = serializers.IntegerField(required=False, help_text=CONFIGURATION_HELP)
    max_concurrent_requests = serializers.IntegerField(required=False,
                                                       help_text=CONFIGURATION_HELP)
    requests_per_minute = serializers.IntegerField(allow_null=True, required=False,
                                                   help_text=CONFIGURATION_HELP)
    price_in_per_million = serializers.DecimalField(max_digits=10, decimal_places=4,
                                                    allow_null=True)
    price_out_per_million = serializers.DecimalField(max_digits=10, decimal_places=4,
                                                     allow_null=True)
    price_currency = serializers.CharField(help_text="The prices' currency (ISO 4217).")
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()

    def to_representation(self, instance: Judge) -> dict[str, Any]:
        data = super().to_representation(instance)
        if not self.context.get("configuration", True):
            for name in self.CONFIGURATION_FIELDS:
                data.pop(name, None)
        return data


class JudgeInputSerializer(serializers.Serializer):
    team = api_id(required=False)
    name = serializers.CharField(max_length=100)
    provider = serializers.ChoiceField(choices=CALLED_PROVIDER_CHOICES)
    model = serializers.CharField(max_length=200)
    base_url = serializers.CharField(max_length=500, required=False, allow_blank=True,
                                     default="", help_text="Empty: the provider's own.")
    api_key = serializers.CharField(required=False, allow_blank=True, default="",
                                    write_only=True, help_text="Stored encrypted, never "
                                    "returned. On PATCH, empty or absent keeps the stored key.")
    clear_api_key = serializers.BooleanField(required=False, default=False,
                                             help_text="PATCH: remove the stored key.")
    prompt_templates = serializers.DictField(
        child=serializers.CharField(allow_blank=True, trim_whitespace=False), required=False,
        default=dict, help_text="{scale code: template}; empty means the shipped default.")
    batch_size = serializers.IntegerField(min_value=1, max_value=20, default=5)
    parameters = serializers.JSONField(required=False, default=dict,
                                       help_text="A JSON object sent with every call.")
    tags = serializers.ListField(child=serializers.CharField(max_length=100), required=False,
                                 default=list)
    is_active = serializers.BooleanField(default=True)
    allow_cross_origin_redirects = serializers.BooleanField(
        default=False, help_text="Follow a redirect to another origin (it gets no key).")
    send_images = serializers.BooleanField(
        default=False, help_text="Send results' images with a template that has "
                                 "{{images}}: by URL (OpenAI-compatible, Anthropic), or "
                                 "fetched and sent as base64 (Ollama).")
    timeout_seconds = serializers.FloatField(default=60.0, min_value=0.1,
                                             max_value=services.MAX_TIMEOUT_SECONDS)
    max_retries = serializers.IntegerField(default=3, min_value=0, max_value=MAX_RETRIES)
    max_concurrent_requests = api_integer(default=16, min_value=1)
    requests_per_minute = api_integer(min_value=1, allow_null=True, required=False,
                                      default=None)
    price_in_per_million = serializers.DecimalField(
        max_digits=10, decimal_places=4, min_value=0, allow_null=True, required=False,
        default=None)
    price_out_per_million = serializers.DecimalField(
        max_digits=10, decimal_places=4, min_value=0, allow_null=True, required=False,
        default=None)
    price_currency = serializers.CharField(max_length=3, required=False, default="USD",
                                           help_text="The prices' currency (ISO 4217).")


def team_id_param(value: Any) -> int | None:
    """?team= as a team id; anything else names no team (400 on `team`)."""
    if value in (None, ""):
        return None
    if not str(value).isdigit():
        raise ValidationError({"team": "must be a team id"})
    return bounded(value, field="team", min_value=1, max_value=ID_MAX, what="a team id")


class JudgeListApi(APIView):
    # paginated_response answers {count, next, previous, results}; the schema says so.
    pagination_class = PageNumberPagination

    @extend_schema(responses=JudgeOutputSerializer(many=True), parameters=[TEAM_PARAM],
                   operation_id="judges_list",
                   description="The judges of one team (?team=, default your current one), "
                               "for leads and admins; leads see no configuration.")
    def get(self, request: Request) -> Response:
        membership = access.team_or_current_access(
            user=request.user, team_id=team_id_param(request.query_params.get("team")),
            minimum_role=selectors.LIST_ROLE)
        context = {"configuration": access.membership_allows(
            membership, minimum_role=selectors.CONFIGURATION_ROLE)}
        return paginated_response(
            self, request, selectors.judges_for_team(team_id=membership.team_id),
            lambda page: JudgeOutputSerializer(page, many=True, context=context).data)

    @extend_schema(request=JudgeInputSerializer, responses={201: JudgeOutputSerializer},
                   operation_id="judges_create")
    def post(self, request: Request) -> Response:
        return create_in_team_response(
            request, team=body_team(request, minimum_role=selectors.CONFIGURATION_ROLE),
            input_serializer=JudgeInputSerializer, drop=("clear_api_key",),
            create=lambda team, data: services.judge_create(team=team, by=request.user,
                                                            **data),
            output=lambda judge: JudgeOutputSerializer(judge).data)


class JudgeDetailApi(APIView):
    @extend_schema(responses=JudgeOutputSerializer, operation_id="judges_retrieve")
    def get(self, request: Request, judge_id: int) -> Response:
        judge = judge_get_for_user(user=request.user, judge_id=judge_id,
                                   minimum_role=selectors.CONFIGURATION_ROLE)
        return Response(JudgeOutputSerializer(judge).data)

    @extend_schema(request=JudgeInputSerializer, responses=JudgeOutputSerializer,
                   operation_id="judges_partial_update")
    def patch(self, request: Request, judge_id: int) -> Response:
        judge = judge_get_for_user(user=request.user, judge_id=judge_id,
                                   minimum_role=selectors.CONFIGURATION_ROLE)
        changes = sent_changes(JudgeInputSerializer, request)
        judge = services.judge_update(judge=judge, by=request.user, **changes)
        return Response(JudgeOutputSerializer(judge).data)

    @extend_schema(responses={204: None, 200: JudgeOutputSerializer},
                   operation_id="judges_destroy",
                   description="Deletes an unused judge with its account (204); a judge "
                               "with runs or grades is deactivated instead and returned "
                               "(200): its grades keep saying who gave them.")
    def delete(self, request: Request, judge_id: int) -> Response:
        judge = judge_get_for_user(user=request.user, judge_id=judge_id,
                                   minimum_role=selectors.CONFIGURATION_ROLE)

        def deactivated() -> dict[str, Any]:
            judge.refresh_from_db()  # as the service left it
            return JudgeOutputSerializer(judge).data

        return delete_or_keep_response(services.judge_delete(judge=judge), deactivated)


class JudgeTestApi(APIView):
    class InputSerializer(serializers.Serializer):
        class DocumentSerializer(serializers.Serializer):
            id = serializers.CharField(max_length=200)
            fields = serializers.DictField()

            class Meta:
                ref_name = "JudgeTestDocument"

        keyword = serializers.CharField(max_length=500)
        guidelines = serializers.CharField(required=False, allow_blank=True, default="")
        scale = serializers.CharField(max_length=50, help_text="A scale code of the team.")
        documents = DocumentSerializer(many=True, min_length=1,
                                       max_length=trial_calls.MAX_TEST_DOCUMENTS)

        class Meta:
            ref_name = "JudgeTestInput"

    class OutputSerializer(serializers.Serializer):
        class AcceptedSerializer(serializers.Serializer):
            id = serializers.CharField()
            grade = serializers.IntegerField()
            reason = serializers.CharField()

            class Meta:
                ref_name = "JudgeTestAccepted"

        class RejectedSerializer(serializers.Serializer):
            id = serializers.CharField()
            code = serializers.CharField(help_text="missing, duplicate, incomplete, "
                                         "wrong_type, out_of_scale or malformed")
            detail = serializers.CharField()

            class Meta:
                ref_name = "JudgeTestRejected"

        request = serializers.JSONField(help_text="method, url, headers, body; key redacted. "
                                        "Empty when nothing was sent.")
        prompt = serializers.CharField(help_text="The user prompt as the model reads it.")
        answer = serializers.CharField(help_text="The model's answer as written.")
        accepted = AcceptedSerializer(many=True)
        rejected = RejectedSerializer(many=True)
        error = serializers.CharField(help_text="Why the call gave no answer; empty if it did.")
        latency_ms = serializers.IntegerField(allow_null=True,
                                              help_text="The call's time; null if none was sent.")
        tokens_in = serializers.IntegerField()
        tokens_out = serializers.IntegerField()
        cost = serializers.DecimalField(max_digits=20, decimal_places=4, allow_null=True,
                                        help_text="At the judge's prices; null without them.")
        currency = serializers.CharField(help_text="The currency of cost (the judge's).")

        class Meta:
            ref_name = "JudgeTestResult"

    @extend_schema(request=InputSerializer, responses=OutputSerializer,
                   operation_id="judges_test",
                   description="Asks the judge once (no retries), with its saved settings, "
                               "about sample pairs; logged as a test call, no grade stored. "
                               "The model's failure is a 200 with `error`.")
    def post(self, request: Request, judge_id: int) -> Response:
        judge = judge_get_for_user(user=request.user, judge_id=judge_id,
                                   minimum_role=selectors.CONFIGURATION_ROLE)
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        outcome = trial_calls.judge_test_sample(
            judge=judge, keyword=data["keyword"], guidelines=data["guidelines"],
            scale_code=data["scale"],
            documents=[Document(id=doc["id"], fields=doc["fields"])
                       for doc in data["documents"]])
        return Response(self.OutputSerializer({
            "request": outcome.request, "prompt": outcome.prompt, "answer": outcome.answer,
            "accepted": outcome.accepted, "rejected": outcome.rejected,
            "error": outcome.error, "latency_ms": outcome.latency_ms,
            "tokens_in": outcome.tokens_in, "tokens_out": outcome.tokens_out,
            "cost": outcome.cost, "currency": outcome.currency}).data)
