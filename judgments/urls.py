from django.urls import path  # noqa: F401 (the app's pages arrive with its issue)

app_name = "judgments"
urlpatterns: list = []
