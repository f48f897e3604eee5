"""The judges' pages. Each part has its own block so parallel work merges cleanly."""

from django.urls import path

app_name = "judges"
urlpatterns: list = []

# --- judges: list, create, edit, delete, Test (judges/views_judges.py) ---
from judges import views_judges  # noqa: E402

urlpatterns += [
    path("judges/", views_judges.judge_list, name="judge_list"),
    path("judges/new/", views_judges.judge_create, name="judge_create"),
    path("judges/<int:judge_id>/", views_judges.judge_edit, name="judge_edit"),
    path("judges/<int:judge_id>/delete/", views_judges.judge_delete, name="judge_delete"),
    path("judges/<int:judge_id>/test/", views_judges.judge_test, name="judge_test"),
]

# --- runs: start, progress, pause/resume/cancel/retry; logs and export (views_runs.py) ---

# --- calibration and "counts" (views_calibration.py) ---
from judges import views_calibration  # noqa: E402

urlpatterns += [
    path("judges/<int:judge_id>/calibration/", views_calibration.judge_calibration,
         name="calibration"),
    path("judges/<int:judge_id>/counts/", views_calibration.judge_counts, name="counts"),
]
