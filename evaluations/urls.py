from django.urls import path

from evaluations import views, views_endpoints

app_name = "evaluations"
urlpatterns = [
    path("endpoints/", views_endpoints.endpoint_list, name="endpoint_list"),
    path("endpoints/new/", views_endpoints.endpoint_create, name="endpoint_create"),
    path("endpoints/<int:endpoint_id>/", views_endpoints.endpoint_edit, name="endpoint_edit"),
    path("endpoints/<int:endpoint_id>/delete/", views_endpoints.endpoint_delete,
         name="endpoint_delete"),
    path("endpoints/<int:endpoint_id>/restore/", views_endpoints.endpoint_restore,
         name="endpoint_restore"),
    path("models/", views_endpoints.model_list, name="model_list"),
    path("models/new/", views_endpoints.model_create, name="model_create"),
    path("models/<int:model_id>/", views_endpoints.model_edit, name="model_edit"),
    path("models/<int:model_id>/delete/", views_endpoints.model_delete, name="model_delete"),
    path("models/<int:model_id>/restore/", views_endpoints.model_restore, name="model_restore"),
    path("models/<int:model_id>/test/", views_endpoints.model_test, name="model_test"),
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
    path("keywords/<int:keyword_id>/", views.keyword_detail, name="keyword_detail"),
    path("demo/search", views.demo_search, name="demo_search"),
]
