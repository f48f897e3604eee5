"""The REST API of notifications: the caller's list and marking read; a team's webhooks
(admins): list, create (the secret answered once), read with its delivery log, change,
delete, send a test."""

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from notifications import services
from notifications.models import Event, Webhook, WebhookDelivery
from searchtweak.api_pagination import PageNumberPagination, paginated_response


class NotificationSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    team = serializers.IntegerField(source="team_id")
    event = serializers.ChoiceField(choices=Event.choices)
    text = serializers.CharField()
    url = serializers.CharField()
    created_at = serializers.DateTimeField()
    read_at = serializers.DateTimeField(allow_null=True)


class NotificationListApi(APIView):
    # paginated_response answers {count, next, previous, results}; the schema says so.
    pagination_class = PageNumberPagination

    @extend_schema(responses=NotificationSerializer(many=True),
                   parameters=[OpenApiParameter("unread", bool, description="Only unread ones.")],
                   operation_id="notifications_list")
    def get(self, request: Request) -> Response:
        rows = services.notifications_of_user(user=request.user)
        if request.query_params.get("unread") in ("1", "true"):
            rows = rows.filter(read_at=None)
        return paginated_response(self, request, rows, lambda page: NotificationSerializer(
            page, many=True).data)


class NotificationReadApi(APIView):
    @extend_schema(request=None, responses=NotificationSerializer,
                   operation_id="notifications_read")
    def post(self, request: Request, notification_id: int) -> Response:
        notification = services.notification_get_for_user(
            user=request.user, notification_id=notification_id)
        notification = services.notification_mark_read(notification=notification)
        return Response(NotificationSerializer(notification).data)


class NotificationReadAllApi(APIView):
    class OutputSerializer(serializers.Serializer):
        marked = serializers.IntegerField(help_text="How many were unread.")

    @extend_schema(request=None, responses=OutputSerializer,
                   operation_id="notifications_read_all")
    def post(self, request: Request) -> Response:
        count = services.notifications_mark_all_read(user=request.user)
        return Response(self.OutputSerializer({"marked": count}).data)


class WebhookSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    team = serializers.IntegerField(source="team_id")
    url = serializers.CharField()
    events = serializers.ListField(child=serializers.ChoiceField(choices=Event.choices))
    active = serializers.BooleanField()
    created_at = serializers.DateTimeField()


class WebhookDeliverySerializer(serializers.Serializer):
    id = serializers.IntegerField()
    event = serializers.CharField()
    status = serializers.ChoiceField(choices=WebhookDelivery.Status.choices)
    attempt_count = serializers.IntegerField()
    status_code = serializers.IntegerField(allow_null=True)
    latency_ms = serializers.IntegerField(allow_null=True)
    error = serializers.CharField()
    created_at = serializers.DateTimeField()
    sent_at = serializers.DateTimeField(allow_null=True)


class WebhookEventsField(serializers.ListField):
    child = serializers.ChoiceField(choices=Event.choices)


class TeamWebhooksApi(APIView):
    class InputSerializer(serializers.Serializer):
        url = serializers.CharField(max_length=500)
        events = WebhookEventsField(allow_empty=False)

    class CreatedSerializer(WebhookSerializer):
        secret = serializers.CharField(
            help_text="Signs every body (X-SearchTweak-Signature: sha256=HMAC-SHA256 of the "
                      "raw body); answered only this once.")

    @extend_schema(responses=WebhookSerializer(many=True), operation_id="teams_webhooks_list")
    def get(self, request: Request, team_id: int) -> Response:
        team = services.team_for_webhooks(user=request.user, team_id=team_id)
        return Response(WebhookSerializer(services.webhooks_of_team(team=team),
                                          many=True).data)

    @extend_schema(request=InputSerializer, responses={201: CreatedSerializer},
                   operation_id="teams_webhooks_create")
    def post(self, request: Request, team_id: int) -> Response:
        team = services.team_for_webhooks(user=request.user, team_id=team_id)
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        webhook, secret = services.webhook_create(team=team, created_by=request.user,
                                                  **serializer.validated_data)
        webhook.secret = secret
        return Response(self.CreatedSerializer(webhook).data, status=status.HTTP_201_CREATED)


class WebhookDetailApi(APIView):
    class OutputSerializer(WebhookSerializer):
        deliveries = WebhookDeliverySerializer(many=True, source="deliveries_shown",
                                              help_text="The latest 50.")

    class InputSerializer(serializers.Serializer):
        url = serializers.CharField(max_length=500, required=False)
        events = WebhookEventsField(allow_empty=False, required=False)
        active = serializers.BooleanField(required=False)

    def _answer(self, webhook: Webhook) -> Response:
        webhook.deliveries_shown = services.webhook_deliveries(webhook=webhook)
        data = self.OutputSerializer(webhook).data
        return Response(data)

    @extend_schema(responses=OutputSerializer, operation_id="webhooks_retrieve")
    def get(self, request: Request, webhook_id: int) -> Response:
        return self._answer(services.webhook_get_for_user(user=request.user,
                                                          webhook_id=webhook_id))

    @extend_schema(request=InputSerializer, responses=OutputSerializer,
                   operation_id="webhooks_partial_update")
    def patch(self, request: Request, webhook_id: int) -> Response:
        webhook = services.webhook_get_for_user(user=request.user, webhook_id=webhook_id)
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        webhook = services.webhook_update(webhook=webhook, **serializer.validated_data)
        return self._answer(webhook)

    @extend_schema(responses={204: None}, operation_id="webhooks_destroy")
    def delete(self, request: Request, webhook_id: int) -> Response:
        webhook = services.webhook_get_for_user(user=request.user, webhook_id=webhook_id)
        services.webhook_delete(webhook=webhook)
        return Response(status=status.HTTP_204_NO_CONTENT)


class WebhookTestApi(APIView):
    @extend_schema(request=None, responses={202: WebhookDeliverySerializer},
                   operation_id="webhooks_test")
    def post(self, request: Request, webhook_id: int) -> Response:
        webhook = services.webhook_get_for_user(user=request.user, webhook_id=webhook_id)
        delivery = services.webhook_test_send(webhook=webhook, user=request.user)
        return Response(WebhookDeliverySerializer(delivery).data,
                        status=status.HTTP_202_ACCEPTED)
