"""Behaviour's pages. Each part has its own block so parallel work merges cleanly."""

from django.urls import path

app_name = "behaviour"
urlpatterns: list = []

# --- offline metrics against behaviour (behaviour/views_predicting.py) ---
from behaviour import views_predicting  # noqa: E402

urlpatterns += [
    path("dashboard/evaluations/<int:evaluation_id>/behaviour-fit/",
         views_predicting.evaluation_behaviour_fit, name="evaluation_behaviour_fit"),
]
