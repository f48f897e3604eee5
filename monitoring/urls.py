from django.urls import path

from monitoring import views

app_name = "monitoring"

urlpatterns = [
    path("metrics", views.metrics, name="metrics"),
]
