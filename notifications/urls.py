"""The notification pages (searchtweak.urls includes them)."""

from django.urls import path

from notifications import views

app_name = "notifications"
urlpatterns = [
    path("notifications/", views.notification_list, name="notification_list"),
    path("notifications/bell/", views.bell, name="notification_bell"),
    path("notifications/read-all/", views.notification_read_all,
         name="notification_read_all"),
    path("notifications/<int:notification_id>/read/", views.notification_read,
         name="notification_read"),
    path("notifications/preferences/", views.notification_preferences,
         name="notification_preferences"),
    path("notifications/unsubscribe/<str:token>/", views.notification_unsubscribe,
         name="notification_unsubscribe"),
    path("teams/<int:team_id>/webhooks/", views.team_webhooks, name="team_webhooks"),
    path("webhooks/<int:webhook_id>/", views.webhook_detail, name="webhook_detail"),
    path("webhooks/<int:webhook_id>/test/", views.webhook_test, name="webhook_test"),
    path("webhooks/<int:webhook_id>/delete/", views.webhook_delete, name="webhook_delete"),
]
