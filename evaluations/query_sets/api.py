"""REST API of query sets: list, create, detail with versions, rename, a new
version, a version's keywords, archive and restore. Every member reads; leads and above
write (query_sets.selectors.WRITE_ROLE), as on the pages."""

from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from evaluations.api_keywords import (
    KEYWORDS_HELP,
    keywords_field,
    tags_output_field,
    weight_output_field,
)
from evaluations.models import KeywordSet, QuerySetVersion
from evaluations.query_sets import selectors as query_set_selectors
from evaluations.query_sets import services
from evaluations.query_sets.file_formats import KINDS, QuerySetFile, query_set_file_read
from evaluations.query_sets.selectors import WRITE_ROLE
from evaluations.services.keyword_input import keywords_from_text
from searchtweak.api_pagination import PageNumberPagination, paginated_response
from searchtweak.api_shared import (
    TEAM_PARAM,
    body_team,
    row_step_api,
    visible_team_ids,
)
from searchtweak.integers import api_id, api_integer


class QuerySetVersionSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    number = serializers.IntegerField(help_text="1 for the first version, then 2, 3, …")
    keyword_count = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    created_by = serializers.CharField(source="created_by.username", allow_null=True,
                                       help_text="Who wrote it (username), if still known.")

    class Meta:
        ref_name = "QuerySetVersion"


class QuerySetOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    team = serializers.IntegerField(source="team_id")
    name = serializers.CharField()
    description = serializers.CharField()
    current_version = serializers.IntegerField(
        source="current_number", allow_null=True, help_text="The current version's number.")
    keyword_count = serializers.IntegerField(
        source="current_keyword_count", allow_null=True,
        help_text="How many keywords the current version holds.")
    traffic_segments = serializers.BooleanField(
        help_text="Each version's keywords are tagged head, torso or tail by their weights.")
    traffic_head_cut = serializers.IntegerField(
        help_text="Head: the top keywords making this % of all traffic (by weight).")
    traffic_torso_cut = serializers.IntegerField(
        help_text="Torso: the next ones, up to this % of all traffic; the rest is tail.")
    created_at = serializers.DateTimeField()
    archived_at = serializers.DateTimeField(allow_null=True)

    class Meta:
        ref_name = "QuerySet"


class QuerySetDetailSerializer(QuerySetOutputSerializer):
    versions = QuerySetVersionSerializer(many=True, source="version_rows",
                                         help_text="Newest first.")

    class Meta:
        ref_name = "QuerySetDetail"


def _annotated(query_set: KeywordSet) -> KeywordSet:
    return query_set_selectors.with_current(KeywordSet.objects.filter(pk=query_set.pk)).get()


def _query_set_data(query_set: KeywordSet) -> dict:
    query_set = _annotated(query_set)
    query_set.version_rows = query_set_selectors.versions_of(query_set)
    return QuerySetDetailSerializer(query_set).data


class KeywordsInputSerializer(serializers.Serializer):
    keywords = keywords_field(required=False, help_text=KEYWORDS_HELP)
    keywords_text = serializers.CharField(
        required=False, allow_blank=True, trim_whitespace=False,
        help_text="Or the keywords as text, one per line as the page takes them: keyword "
                  "or keyword,weight,tags in CSV (tags separated by |; a keyword holding a "
                  "comma or double quote quoted). A problem names its line on "
                  "keywords_text.")
    keywords_file = serializers.FileField(
        required=False, help_text="Or a file (multipart), recognised as the page does: "
        "plain text, CSV keyword,weight,tags with a header, Quepid's basic CSV (its "
        "queries), an OpenSearch Workbench query set (NDJSON queryText lines). The answer's "
        "keywords_read says what it was read as and why; an ambiguous file or a bad line "
        "is a 400 on keywords_file naming the line and field. Give one of the three; no "
        "keyword left is a 400 on keywords.")
    keywords_format = serializers.ChoiceField(
        choices=list(KINDS), default="auto", help_text="The file's format; `auto` "
        "recognises it.")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        given = [name for name in ("keywords", "keywords_text", "keywords_file") if name in attrs]
        if len(given) > 1:
            raise serializers.ValidationError(
                {given[1]: f"Give {given[0]} or {given[1]}, not both."})
        kind = attrs.pop("keywords_format", "auto")
        text = attrs.pop("keywords_text", None)
        if text is not None:
            try:
                attrs["keywords"] = keywords_from_text(text)
            except DjangoValidationError as error:
                raise serializers.ValidationError(
                    {"keywords_text": error.message_dict["keywords"]}) from None
        upload = attrs.pop("keywords_file", None)
        if upload is not None:
            try:
                read = query_set_file_read(filename=upload.name, content=upload.read(),
                                           kind=kind)
            except DjangoValidationError as error:
                raise serializers.ValidationError(error.message_dict) from None
            attrs["keywords"], attrs["keywords_read"] = read.entries, read
        if "keywords" not in attrs and not self.partial:
            raise serializers.ValidationError(
                {"keywords": "This field is required (or give keywords_text or keywords_file)."})
        return attrs


class KeywordsReadSerializer(serializers.Serializer):
    format = serializers.CharField(source="kind", help_text="text, csv, quepid_csv or "
                                                            "workbench.")
    name = serializers.CharField(help_text="What the file was read as.")
    reason = serializers.CharField(help_text="Why (its header, its lines' shape, or "
                                             "chosen).")
    keyword_count = serializers.IntegerField(help_text="Keywords read from the file.")
    note = serializers.CharField(allow_blank=True, help_text="What was left out.")

    class Meta:
        ref_name = "QuerySetKeywordsRead"


class QuerySetCreatedSerializer(QuerySetDetailSerializer):
    keywords_read = KeywordsReadSerializer(
        required=False, help_text="Only when the keywords came from keywords_file.")

    class Meta:
        ref_name = "QuerySetCreated"


def _with_read(data: dict, read: QuerySetFile | None) -> dict:
    """The answer with `keywords_read` when the keywords came from a file."""
    if read is not None:
        data = {**data, "keywords_read": KeywordsReadSerializer(read).data}
    return data


class TrafficInputSerializer(serializers.Serializer):
    traffic_segments = serializers.BooleanField(
        required=False, help_text="Tag each version's keywords head, torso or tail by their "
                                  "weights' cumulative share of traffic.")
    traffic_head_cut = api_integer(
        required=False, max_value=100,
        help_text="Head: the top keywords making this % of traffic (default 50).")
    traffic_torso_cut = api_integer(
        required=False, max_value=100,
        help_text="Torso: up to this % of traffic (default 80), above the head's cut; the "
                  "rest is tail. Cut points out of order are a 400 on the cut at fault.")


class QuerySetInputSerializer(KeywordsInputSerializer, TrafficInputSerializer):
    team = api_id(required=False)
    name = serializers.CharField(max_length=200)
    description = serializers.CharField(required=False, allow_blank=True, default="")

    class Meta:
        ref_name = "QuerySetInput"


class QuerySetListApi(APIView):
    pagination_class = PageNumberPagination

    @extend_schema(responses=QuerySetOutputSerializer(many=True), parameters=[TEAM_PARAM],
                   operation_id="query_sets_list",
                   description="The query sets of the caller's teams (archived ones with "
                               "?archived=true).")
    def get(self, request: Request) -> Response:
        query_sets = query_set_selectors.with_current(
            KeywordSet.objects.filter(team_id__in=visible_team_ids(request))).order_by("name", "id")
        if request.query_params.get("archived") != "true":
            query_sets = query_sets.filter(archived_at=None)
        return paginated_response(self, request, query_sets, lambda page: (
            QuerySetOutputSerializer(page, many=True).data))

    @extend_schema(request=QuerySetInputSerializer, responses={201: QuerySetCreatedSerializer},
                   operation_id="query_sets_create",
                   description="A query set with version 1 holding the keywords (leads).")
    def post(self, request: Request) -> Response:
        # The role is checked before the input is read (searchtweak.api_shared).
        team = body_team(request, minimum_role=WRITE_ROLE)
        serializer = QuerySetInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = dict(serializer.validated_data)
        data.pop("team", None)
        read = data.pop("keywords_read", None)
        query_set = services.query_set_create(team=team, created_by=request.user, **data)
        return Response(_with_read(_query_set_data(query_set), read),
                        status=status.HTTP_201_CREATED)


class QuerySetDetailApi(APIView):
    class InputSerializer(TrafficInputSerializer):
        name = serializers.CharField(max_length=200, required=False)
        description = serializers.CharField(required=False, allow_blank=True)

        class Meta:
            ref_name = "QuerySetUpdateInput"

    @extend_schema(responses=QuerySetDetailSerializer, operation_id="query_sets_retrieve")
    def get(self, request: Request, query_set_id: int) -> Response:
        query_set = query_set_selectors.query_set_get_for_user(
            user=request.user, query_set_id=query_set_id)
        return Response(_query_set_data(query_set))

    @extend_schema(request=InputSerializer, responses=QuerySetDetailSerializer,
                   operation_id="query_sets_partial_update",
                   description="Rename, describe or change the traffic segments (leads); "
                               "keywords change by a new version, and so does a traffic "
                               "change that retags them.")
    def patch(self, request: Request, query_set_id: int) -> Response:
        query_set = query_set_selectors.query_set_get_for_user(
            user=request.user, query_set_id=query_set_id, minimum_role=WRITE_ROLE)
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        query_set = services.query_set_update(query_set=query_set, created_by=request.user,
                                              **serializer.validated_data)
        return Response(_query_set_data(query_set))


class QuerySetVersionCreateApi(APIView):
    class InputSerializer(KeywordsInputSerializer):
        class Meta:
            ref_name = "QuerySetVersionInput"

    class OutputSerializer(QuerySetVersionSerializer):
        created = serializers.BooleanField(
            help_text="False when the list equals the current version's: nothing was "
                      "written and this is the current version.")
        keywords_read = KeywordsReadSerializer(
            required=False, help_text="Only when the keywords came from keywords_file.")

        class Meta:
            ref_name = "QuerySetVersionCreated"

    @extend_schema(request=InputSerializer, responses={201: OutputSerializer,
                                                       200: OutputSerializer},
                   operation_id="query_sets_versions_create",
                   description="A new current version holding the keywords (201), or, when "
                               "they equal the current version's, that version (200) (leads).")
    def post(self, request: Request, query_set_id: int) -> Response:
        query_set = query_set_selectors.query_set_get_for_user(
            user=request.user, query_set_id=query_set_id, minimum_role=WRITE_ROLE)
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        version, created = services.query_set_version_create(
            query_set=query_set, created_by=request.user,
            keywords=serializer.validated_data["keywords"])
        version.created = created
        return Response(_with_read(self.OutputSerializer(version).data,
                                   serializer.validated_data.get("keywords_read")),
                        status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


class QuerySetVersionKeywordsApi(APIView):
    pagination_class = PageNumberPagination

    class OutputSerializer(serializers.Serializer):
        position = serializers.IntegerField()
        text = serializers.CharField()
        weight = weight_output_field()
        tags = tags_output_field()

        class Meta:
            ref_name = "QuerySetKeyword"

    @extend_schema(responses=OutputSerializer(many=True),
                   operation_id="query_sets_version_keywords",
                   description="One version's keywords in their order, paged.")
    def get(self, request: Request, query_set_id: int, number: int) -> Response:
        query_set = query_set_selectors.query_set_get_for_user(
            user=request.user, query_set_id=query_set_id)
        version = QuerySetVersion.objects.filter(query_set=query_set, number=number).first()
        if version is None:
            raise Http404(f"{query_set.name} has no version {number}.")
        return paginated_response(
            self, request, query_set_selectors.version_keywords(version),
            lambda page: self.OutputSerializer(page, many=True).data)


def _led_query_set(request: Request, query_set_id: int) -> KeywordSet:
    return query_set_selectors.query_set_get_for_user(
        user=request.user, query_set_id=query_set_id, minimum_role=WRITE_ROLE)


QuerySetArchiveApi = row_step_api(
    "QuerySetArchiveApi", load=_led_query_set,
    step=lambda query_set, _request: services.query_set_archive(query_set=query_set),
    output=_query_set_data, request=None, responses=QuerySetDetailSerializer,
    operation_id="query_sets_archive",
    description="Hides it from lists and the evaluation form, keeping its versions (leads).")

QuerySetRestoreApi = row_step_api(
    "QuerySetRestoreApi", load=_led_query_set,
    step=lambda query_set, _request: services.query_set_restore(query_set=query_set),
    output=_query_set_data, request=None, responses=QuerySetDetailSerializer,
    operation_id="query_sets_restore",
    description="Brings an archived query set back (leads); 400 on name when another set "
                "took its name meanwhile.")
