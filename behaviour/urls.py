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

# --- clicks graders (behaviour/views_learning.py) ---
from behaviour import views_learning  # noqa: E402

urlpatterns += [
    path("judges/clicks/new/", views_learning.click_grader_create, name="click_grader_create"),
    path("judges/clicks/<int:judge_id>/", views_learning.click_grader_edit,
         name="click_grader_edit"),
]

# --- a clicks run's learned grades and their evidence (behaviour/views_evidence.py) ---
from behaviour import views_evidence  # noqa: E402

urlpatterns += [
    path(f"judge-runs/<int:run_id>/learned.{fmt}", views_evidence.run_learned_export,
         {"fmt": fmt}, name=f"run_learned_{fmt}") for fmt in views_evidence.CONTENT_TYPES
]

# --- a team's behaviour sources: the list, a file's import, a collector (views_sources.py) ---
from behaviour import views_sources  # noqa: E402

urlpatterns += [
    path("behaviour/sources/", views_sources.source_list, name="source_list"),
    path("behaviour/sources/import/", views_sources.source_import, name="source_import"),
    path("behaviour/sources/collector/", views_sources.collector_create,
         name="collector_create"),
]
