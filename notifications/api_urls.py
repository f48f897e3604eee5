"""The notification API (searchtweak.urls includes it under api/v1/)."""

from django.urls import path

from notifications import api

app_name = "notifications_api"
urlpatterns = [
    path("notifications/", api.NotificationListApi.as_view(), name="notifications"),
    path("notifications/read-all/", api.NotificationReadAllApi.as_view(),
         name="notifications_read_all"),
    path("notifications/<int:notification_id>/read/", api.NotificationReadApi.as_view(),
         name="notification_read"),
    path("teams/<int:team_id>/webhooks/", api.TeamWebhooksApi.as_view(),
         name="team_webhooks"),
    path("webhooks/<int:webhook_id>/", api.WebhookDetailApi.as_view(), name="webhook"),
    path("webhooks/<int:webhook_id>/test/", api.WebhookTestApi.as_view(), name="webhook_test"),
]
