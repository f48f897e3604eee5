"""The judges' pages. Each part has its own block so parallel work merges cleanly."""

from django.urls import path  # noqa: F401

app_name = "judges"
urlpatterns: list = []

# --- judges: list, create, edit, delete, Test (judges/views_judges.py) ---

# --- runs: start, progress, pause/resume/cancel/retry; logs and export (views_runs.py) ---

# --- calibration and "counts" (views_calibration.py) ---
