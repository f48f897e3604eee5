"""The judges' API (/api/v1/...). Each part has its own block so parallel work merges."""

from django.urls import path

app_name = "judges_api"
urlpatterns: list = []

# --- judges: CRUD and test (judges/api_judges.py) ---
from judges import api_judges  # noqa: E402

urlpatterns += [
    path("judges/", api_judges.JudgeListApi.as_view(), name="judges"),
    path("judges/<int:judge_id>/", api_judges.JudgeDetailApi.as_view(), name="judge"),
    path("judges/<int:judge_id>/test/", api_judges.JudgeTestApi.as_view(), name="judge_test"),
]

# --- runs: start, read, pause/resume/cancel/retry; calls (logs) and JSONL (api_runs.py) ---

# --- calibration and "counts" (api_calibration.py) ---
from judges import api_calibration  # noqa: E402

urlpatterns += [
    path("judges/<int:judge_id>/calibration/", api_calibration.JudgeCalibrationApi.as_view(),
         name="judge_calibration"),
    path("judges/<int:judge_id>/counts/", api_calibration.JudgeCountsApi.as_view(),
         name="judge_counts"),
]
