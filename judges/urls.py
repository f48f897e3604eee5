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
from judges import views_calls, views_runs  # noqa: E402

urlpatterns += [
    path("evaluations/<int:evaluation_id>/judge-runs/", views_runs.evaluation_runs,
         name="evaluation_runs"),
    path("evaluations/<int:evaluation_id>/judge-runs/start/", views_runs.run_start,
         name="run_start"),
    path("evaluations/<int:evaluation_id>/judge-runs/estimate/", views_runs.run_estimate,
         name="run_estimate"),
    path("judge-runs/<int:run_id>/", views_runs.run_detail, name="run_detail"),
    *(path(f"judge-runs/<int:run_id>/{action}/", views_runs.run_action, {"action": action},
           name=f"run_{action}") for action in views_runs.ACTIONS),
    path("judges/<int:judge_id>/calls/", views_calls.judge_calls, name="judge_calls"),
    path("judges/<int:judge_id>/calls.jsonl", views_calls.judge_calls_export,
         name="judge_calls_export"),
    path("judge-calls/<int:call_id>/", views_calls.call_detail, name="call_detail"),
]

# --- calibration and "counts" (views_calibration.py) ---
from judges import views_calibration  # noqa: E402

urlpatterns += [
    path("judges/<int:judge_id>/calibration/", views_calibration.judge_calibration,
         name="calibration"),
    path("judges/<int:judge_id>/counts/", views_calibration.judge_counts, name="counts"),
    path("judges/trust-policy/", views_judges.trust_policy_edit, name="trust_policy"),
]

# --- judge-human triage and adjudication (views_triage.py) ---
from judges import views_triage  # noqa: E402

urlpatterns += [
    path("evaluations/<int:evaluation_id>/triage/", views_triage.evaluation_triage,
         name="triage"),
    path("evaluations/<int:evaluation_id>/triage/<int:snapshot_id>/adjudicate/",
         views_triage.adjudicate, name="adjudicate"),
]
