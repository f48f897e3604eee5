"""Offline models over the API: create one, then upload its run file; an evaluation of it
is created and started with the evaluations API, and gated with the verdicts' gate."""

from typing import Any

from django.core.exceptions import ValidationError
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from evaluations import selectors
from evaluations.endpoints.api import SearchModelOutputSerializer
from evaluations.models import KeywordSet, OfflineRun
from evaluations.offline_runs import services
from evaluations.offline_runs.services import run_upload_size_problem
from searchtweak.api_shared import body_team, create_in_team_response
from searchtweak.integers import api_id
from searchtweak.models import Role

# Who may configure models may give one a run: the role search models are created with.
RUN_ROLE = Role.ADMIN


class OfflineModelCreateApi(APIView):
    class InputSerializer(serializers.Serializer):
        team = api_id(required=False)
        name = serializers.CharField(max_length=100)
        description = serializers.CharField(required=False, allow_blank=True, default="")

    @extend_schema(request=InputSerializer, responses={201: SearchModelOutputSerializer},
                   operation_id="models_offline_create",
                   description="A search model without an endpoint: its rankings come from "
                   "the run file uploaded next (`models/{id}/run/`).")
    def post(self, request: Request) -> Response:
        return create_in_team_response(
            request, team=body_team(request, minimum_role=RUN_ROLE),
            input_serializer=self.InputSerializer,
            create=lambda team, data: services.search_model_create_offline(
                team=team, created_by=request.user, **data),
            output=lambda model: SearchModelOutputSerializer(model).data)


class OfflineRunOutputSerializer(serializers.Serializer):
    model = serializers.IntegerField(source="model_id")
    format = serializers.CharField()
    filename = serializers.CharField()
    keyword_count = serializers.IntegerField()
    result_count = serializers.IntegerField()
    uploaded_at = serializers.DateTimeField()


class OfflineRunUploadApi(APIView):
    parser_classes = [MultiPartParser, FormParser]

    class InputSerializer(serializers.Serializer):
        format = serializers.ChoiceField(choices=OfflineRun.Format.choices)
        file = serializers.FileField(help_text="The run: `qid Q0 docid rank score tag` lines "
                                     "(trec) or one JSON object a line (jsonl).")
        topics = serializers.FileField(
            required=False, help_text="trec only: `qid<TAB>keyword` lines; without it a "
            "topic id is the keyword itself.")
        query_set = api_id(required=False, help_text=(
            "trec only, instead of `topics`: topic ids number this query set's keywords "
            "(1 for the first), as the `trec_run` export numbers an evaluation's."))

        def _size_checked(self, upload: Any) -> Any:
            problem = run_upload_size_problem(filename=upload.name or "file", size=upload.size)
            if problem:
                raise serializers.ValidationError(problem)
            return upload

        def validate_file(self, upload: Any) -> Any:
            return self._size_checked(upload)

        def validate_topics(self, upload: Any) -> Any:
            return self._size_checked(upload)

    @extend_schema(request={"multipart/form-data": InputSerializer},
                   responses={201: OfflineRunOutputSerializer},
                   operation_id="models_run_upload",
                   description="Replace an offline model's run with this file. A bad file "
                   "answers 400 naming the line and field, and stores nothing; a file over "
                   "OFFLINE_RUN_MAX_BYTES (1 GiB unless set) answers 400 on `file` before a "
                   "line is read.")
    def post(self, request: Request, model_id: int) -> Response:
        model = selectors.search_model_get_for_user(user=request.user, model_id=model_id,
                                                    minimum_role=RUN_ROLE)
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        query_set = None
        if data.get("query_set") is not None:
            # A foreign or missing query set is bad input here (400), as a model's endpoint
            # is: the model's access step has already admitted the caller to its team.
            query_set = KeywordSet.objects.filter(pk=data["query_set"],
                                                  team_id=model.team_id).first()
            if query_set is None:
                raise ValidationError({"query_set": "No such query set in this team."})
        run = services.offline_run_upload(
            model=model, uploaded_by=request.user, run_format=data["format"],
            lines=data["file"], filename=data["file"].name or "",
            topic_lines=data.get("topics"), query_set=query_set)
        return Response(OfflineRunOutputSerializer(run).data, status=status.HTTP_201_CREATED)
