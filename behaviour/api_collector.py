"""The collector's API: a search front end posts batches of UBI queries and events to a
collector source with an API token (behaviour.collector holds the rules; docs/decisions/0023).

Guards, in the order they answer: authentication (401), the rate per API user (429 with
Retry-After), the caller's role in the source's team (404 outside it, 403 below lead),
the body's size in bytes (413 on `body`) and its items (413 on `queries` or `events`),
then the items themselves (400 naming each bad one; nothing stored)."""

from django.conf import settings
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.exceptions import APIException, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import SimpleRateThrottle
from rest_framework.views import APIView

from behaviour.api import WRITE_ROLE, BehaviourSourceSerializer
from behaviour.collector import collector_batch_store
from behaviour.models import BehaviourSource
from searchtweak import access


class CollectorThrottle(SimpleRateThrottle):
    """BEHAVIOUR_COLLECTOR_BATCHES_PER_MINUTE per API user, read at each request (so a
    deployment's setting, and a test's, holds); counted in Django's cache."""

    scope = "behaviour_collector"

    def get_rate(self) -> str:
        return f"{settings.BEHAVIOUR_COLLECTOR_BATCHES_PER_MINUTE}/min"

    def get_cache_key(self, request: Request, view: APIView) -> str:
        return self.cache_format % {"scope": self.scope, "ident": request.user.pk}


class PayloadTooLarge(APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "The batch is too large."


class BatchInputSerializer(serializers.Serializer):
    queries = serializers.ListField(child=serializers.DictField(), required=False,
                                    help_text="UBI queries: query_id, user_query, timestamp, "
                                              "query_response_hit_ids.")
    events = serializers.ListField(child=serializers.DictField(), required=False,
                                   help_text="UBI events, each with its own event_id.")

    class Meta:
        ref_name = "BehaviourBatchInput"


_COUNTS = inline_serializer("BehaviourBatchCounts", {
    "added": serializers.IntegerField(), "repeated": serializers.IntegerField()})
BatchOutputSerializer = inline_serializer("BehaviourBatchOutput", {
    "queries": _COUNTS, "events": _COUNTS, "source": BehaviourSourceSerializer()})


class CollectorBatchApi(APIView):
    throttle_classes = [CollectorThrottle]

    @extend_schema(request=BatchInputSerializer, responses=BatchOutputSerializer,
                   operation_id="behaviour_source_events",
                   description="A batch of UBI queries and events folded into a collector "
                               "source's sums, whole or not at all; a query or event already "
                               "counted (by query_id, event_id) adds nothing (leads).")
    def post(self, request: Request, source_id: int) -> Response:
        source = access.row_get_for_user(BehaviourSource.objects.all(), user=request.user,
                                         pk=source_id, what="behaviour source",
                                         minimum_role=WRITE_ROLE)
        limit = settings.BEHAVIOUR_COLLECTOR_MAX_BYTES
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        # Before the body is read: a front end's runaway batch costs a header, not memory.
        if length > limit:
            raise PayloadTooLarge({"body": [
                f"A batch is at most {limit} bytes (BEHAVIOUR_COLLECTOR_MAX_BYTES); this one "
                f"is {length}: send smaller batches."]})
        body = request.data
        if not isinstance(body, dict):
            raise ValidationError({"non_field_errors": [
                'A batch is a JSON object: {"queries": [...], "events": [...]}.']})
        queries, events = body.get("queries"), body.get("events")
        sizes = {name: len(items) if isinstance(items, list) else 0
                 for name, items in (("queries", queries), ("events", events))}
        most = settings.BEHAVIOUR_COLLECTOR_MAX_ITEMS
        if sum(sizes.values()) > most:
            larger = max(sizes, key=sizes.get)
            raise PayloadTooLarge({larger: [
                f"A batch holds at most {most} queries and events together "
                f"(BEHAVIOUR_COLLECTOR_MAX_ITEMS); this one holds {sizes['queries']} and "
                f"{sizes['events']}: send smaller batches."]})
        if not sizes["queries"] and not sizes["events"] and queries is None and events is None:
            raise ValidationError({"events": ["The batch has neither queries nor events."]})
        result = collector_batch_store(source=source, queries=queries, events=events)
        source.refresh_from_db()
        return Response({
            "queries": {"added": result.queries_added, "repeated": result.queries_repeated},
            "events": {"added": result.events_added, "repeated": result.events_repeated},
            "source": BehaviourSourceSerializer(source).data})
