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
from judges import api_runs  # noqa: E402

urlpatterns += [
    path("evaluations/<int:evaluation_id>/judge-runs/", api_runs.EvaluationJudgeRunsApi.as_view(),
         name="evaluation_runs"),
    path("evaluations/<int:evaluation_id>/judge-runs/estimate/",
         api_runs.EvaluationJudgeRunEstimateApi.as_view(), name="run_estimate"),
    path("judge-runs/<int:run_id>/", api_runs.JudgeRunDetailApi.as_view(), name="run"),
    path("judge-runs/<int:run_id>/pause/", api_runs.JudgeRunPauseApi.as_view(),
         name="run_pause"),
    path("judge-runs/<int:run_id>/resume/", api_runs.JudgeRunResumeApi.as_view(),
         name="run_resume"),
    path("judge-runs/<int:run_id>/cancel/", api_runs.JudgeRunCancelApi.as_view(),
         name="run_cancel"),
    path("judge-runs/<int:run_id>/retry/", api_runs.JudgeRunRetryApi.as_view(),
         name="run_retry"),
    path("judge-runs/<int:run_id>/failed/", api_runs.JudgeRunFailedApi.as_view(),
         name="run_failed"),
    path("judges/<int:judge_id>/calls/", api_runs.JudgeCallsApi.as_view(), name="judge_calls"),
    path("judges/<int:judge_id>/calls.jsonl", api_runs.JudgeCallsJsonlApi.as_view(),
         name="judge_calls_jsonl"),
]

# --- calibration and "counts" (api_calibration.py) ---
from judges import api_calibration  # noqa: E402

urlpatterns += [
    path("judges/<int:judge_id>/calibration/", api_calibration.JudgeCalibrationApi.as_view(),
         name="judge_calibration"),
    path("judges/<int:judge_id>/counts/", api_calibration.JudgeCountsApi.as_view(),
         name="judge_counts"),
    path("judges/trust-policy/", api_calibration.JudgeTrustPolicyApi.as_view(),
         name="trust_policy"),
]

# --- judge-human triage and adjudication (api_triage.py) ---
from judges import api_triage  # noqa: E402

urlpatterns += [
    path("evaluations/<int:evaluation_id>/triage/", api_triage.EvaluationTriageApi.as_view(),
         name="evaluation_triage"),
    path("evaluations/<int:evaluation_id>/triage/<int:snapshot_id>/adjudicate/",
         api_triage.SnapshotAdjudicateApi.as_view(), name="snapshot_adjudicate"),
]
