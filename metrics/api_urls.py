from django.urls import path  # noqa: F401 (the app's API arrives with its issue)

app_name = "metrics_api"
urlpatterns: list = []
