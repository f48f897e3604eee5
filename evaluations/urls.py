from django.urls import path

from evaluations import views
from evaluations.endpoints import views as endpoint_views
from evaluations.offline_runs import views as offline_views
from evaluations.query_sets import views as query_set_views

app_name = "evaluations"
urlpatterns = [
    path("endpoints/", endpoint_views.endpoint_list, name="endpoint_list"),
    path("endpoints/new/", endpoint_views.endpoint_create, name="endpoint_create"),
    path("endpoints/<int:endpoint_id>/", endpoint_views.endpoint_edit, name="endpoint_edit"),
    path("endpoints/<int:endpoint_id>/delete/", endpoint_views.endpoint_delete,
         name="endpoint_delete"),
    path("endpoints/<int:endpoint_id>/restore/", endpoint_views.endpoint_restore,
         name="endpoint_restore"),
    path("models/", endpoint_views.model_list, name="model_list"),
    path("models/new/", endpoint_views.model_create, name="model_create"),
    path("models/offline/new/", offline_views.offline_model_create,
         name="offline_model_create"),
    path("models/<int:model_id>/run/", offline_views.offline_run_replace, name="offline_run"),
    path("models/<int:model_id>/", endpoint_views.model_edit, name="model_edit"),
    path("models/<int:model_id>/delete/", endpoint_views.model_delete, name="model_delete"),
    path("models/<int:model_id>/restore/", endpoint_views.model_restore, name="model_restore"),
    path("models/<int:model_id>/test/", endpoint_views.model_test, name="model_test"),
    path("evaluations/", views.evaluation_list, name="evaluation_list"),
    path("evaluations/new/", views.evaluation_create, name="evaluation_create"),
    path("evaluations/<int:evaluation_id>/", views.evaluation_detail,
         name="evaluation_detail"),
    path("evaluations/<int:evaluation_id>/edit/", views.evaluation_edit,
         name="evaluation_edit"),
    path("evaluations/<int:evaluation_id>/progress/", views.evaluation_progress,
         name="evaluation_progress"),
    # Before the generic actions: these ask first (GET) and act on POST.
    path("evaluations/<int:evaluation_id>/archive/", views.evaluation_archive,
         name="evaluation_archive"),
    path("evaluations/<int:evaluation_id>/delete/", views.evaluation_delete,
         name="evaluation_delete"),
    path("evaluations/<int:evaluation_id>/restore/", views.evaluation_restore,
         name="evaluation_restore"),
    path("evaluations/<int:evaluation_id>/<str:action>/", views.evaluation_action,
         name="evaluation_action"),
    # --- query sets ---
    path("query-sets/", query_set_views.query_set_list, name="query_set_list"),
    path("query-sets/new/", query_set_views.query_set_create, name="query_set_create"),
    path("query-sets/from-evaluation/<int:evaluation_id>/",
         query_set_views.query_set_from_evaluation, name="query_set_from_evaluation"),
    path("query-sets/<int:query_set_id>/", query_set_views.query_set_detail,
         name="query_set_detail"),
    path("query-sets/<int:query_set_id>/edit/", query_set_views.query_set_edit,
         name="query_set_edit"),
    path("query-sets/<int:query_set_id>/archive/", query_set_views.query_set_archive,
         name="query_set_archive"),
    path("query-sets/<int:query_set_id>/restore/", query_set_views.query_set_restore,
         name="query_set_restore"),
    path("keywords/<int:keyword_id>/", views.keyword_detail, name="keyword_detail"),
    path("demo/search", views.demo_search, name="demo_search"),
]
