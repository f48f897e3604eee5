"""REST API of behaviour data: a team's sources, and one source's online metrics per
keyword, which every member of the team reads; a lead opens a collector source (its
batches: behaviour.api_collector)."""

from django.db.models import Sum
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from behaviour import services
from behaviour.core.online import online_metrics
from behaviour.models import BehaviourCount, BehaviourSource
from behaviour.selectors import keyword_behaviours
from searchtweak import access
from searchtweak.api_pagination import PageNumberPagination, paginated_response
from searchtweak.api_shared import TEAM_PARAM, body_team, visible_team_ids
from searchtweak.integers import api_id, bounded
from searchtweak.models import Role

WRITE_ROLE = Role.LEAD
"""Who opens a collector source and posts batches to it; every member reads."""
K_MAX = 1000
K_PARAM = OpenApiParameter("k", int, description=f"CTR@k's cut-off, 1..{K_MAX} (default 10).")


class BehaviourSourceSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    team = serializers.IntegerField(source="team_id")
    name = serializers.CharField()
    kind = serializers.CharField(help_text="ubi (query and event logs) or csv (counts).")
    window_start_at = serializers.DateTimeField(allow_null=True)
    window_end_at = serializers.DateTimeField(allow_null=True)
    search_count = serializers.IntegerField(help_text="Searches read; 0 for a CSV.")
    event_count = serializers.IntegerField(help_text="Event lines (UBI) or rows (CSV) read.")
    created_at = serializers.DateTimeField()

    class Meta:
        ref_name = "BehaviourSource"


class KeywordOnlineSerializer(serializers.Serializer):
    keyword = serializers.CharField(help_text="The keyword's normalised text.")
    impressions = serializers.IntegerField()
    clicks = serializers.IntegerField()
    ctr_at_k = serializers.FloatField(allow_null=True)
    first_click_rr = serializers.FloatField(
        allow_null=True, help_text="Null when the source counts no searches (a CSV).")
    abandonment = serializers.FloatField(allow_null=True)
    mean_dwell_seconds = serializers.FloatField(allow_null=True)
    searches = serializers.IntegerField()

    class Meta:
        ref_name = "BehaviourKeywordOnline"


class CollectorSourceInputSerializer(serializers.Serializer):
    team = api_id(required=False, help_text="Default: your current team.")
    name = serializers.CharField(max_length=200)

    class Meta:
        ref_name = "BehaviourCollectorSourceInput"


class BehaviourSourceListApi(APIView):
    pagination_class = PageNumberPagination

    @extend_schema(responses=BehaviourSourceSerializer(many=True), parameters=[TEAM_PARAM],
                   operation_id="behaviour_sources_list",
                   description="The behaviour sources of the caller's teams, newest first.")
    def get(self, request: Request) -> Response:
        sources = BehaviourSource.objects.filter(team_id__in=visible_team_ids(request))
        return paginated_response(self, request, sources, lambda page: (
            BehaviourSourceSerializer(page, many=True).data))

    @extend_schema(request=CollectorSourceInputSerializer,
                   responses={201: BehaviourSourceSerializer},
                   operation_id="behaviour_sources_create",
                   description="An empty collector source, for a search front end to post "
                               "batches of UBI queries and events to (leads). Files are "
                               "imported on the Behaviour sources page or with manage.py "
                               "import_behaviour.")
    def post(self, request: Request) -> Response:
        team = body_team(request, minimum_role=WRITE_ROLE)
        serializer = CollectorSourceInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        source = services.behaviour_source_create_collector(
            team=team, user=request.user, name=serializer.validated_data["name"])
        return Response(BehaviourSourceSerializer(source).data, status=status.HTTP_201_CREATED)


class BehaviourSourceKeywordsApi(APIView):
    pagination_class = PageNumberPagination

    @extend_schema(responses=KeywordOnlineSerializer(many=True), parameters=[K_PARAM],
                   operation_id="behaviour_source_keywords",
                   description="A source's online metrics per keyword over its whole window, "
                               "keywords in alphabetical order.")
    def get(self, request: Request, source_id: int) -> Response:
        source = access.row_get_for_user(BehaviourSource.objects.all(), user=request.user,
                                         pk=source_id, what="behaviour source")
        k = bounded(request.query_params.get("k", "10"), field="k", min_value=1,
                    max_value=K_MAX)
        keywords = (BehaviourCount.objects.filter(source=source).values("keyword")
                    .annotate(impressions=Sum("impressions"), clicks=Sum("clicks"))
                    .order_by("keyword"))

        def page_data(page: list[dict]) -> list[dict]:
            behaviours = keyword_behaviours(source=source,
                                            keywords=[row["keyword"] for row in page])
            rows = []
            for row in page:
                metrics = online_metrics(behaviours[row["keyword"]], k=k)
                rows.append({**row, "ctr_at_k": metrics.ctr_at_k,
                             "first_click_rr": metrics.first_click_rr,
                             "abandonment": metrics.abandonment,
                             "mean_dwell_seconds": metrics.mean_dwell_seconds,
                             "searches": metrics.searches})
            return KeywordOnlineSerializer(rows, many=True).data

        return paginated_response(self, request, keywords, page_data)
