"""The judges' API (/api/v1/...). Each part has its own block so parallel work merges."""

from django.urls import path  # noqa: F401

app_name = "judges_api"
urlpatterns: list = []

# --- judges: CRUD and test (judges/api_judges.py) ---

# --- runs: start, read, pause/resume/cancel/retry; calls (logs) and JSONL (api_runs.py) ---

# --- calibration and "counts" (api_calibration.py) ---
