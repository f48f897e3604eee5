from django.urls import path

from evaluations import api, api_endpoints

app_name = "evaluations_api"
urlpatterns = [
    path("endpoints/", api_endpoints.EndpointListApi.as_view(), name="endpoints"),
    path("endpoints/<int:endpoint_id>/", api_endpoints.EndpointDetailApi.as_view(),
         name="endpoint"),
    path("endpoints/<int:endpoint_id>/restore/", api_endpoints.EndpointRestoreApi.as_view(),
         name="endpoint_restore"),
    path("models/", api_endpoints.SearchModelListApi.as_view(), name="models"),
    path("models/<int:model_id>/", api_endpoints.SearchModelDetailApi.as_view(), name="model"),
    path("models/<int:model_id>/restore/", api_endpoints.SearchModelRestoreApi.as_view(),
         name="model_restore"),
    path("models/<int:model_id>/test/", api_endpoints.SearchModelTestApi.as_view(),
         name="model_test"),
    path("evaluations/", api.EvaluationListApi.as_view(), name="evaluations"),
    path("evaluations/<int:evaluation_id>/", api.EvaluationDetailApi.as_view(),
         name="evaluation"),
    path("evaluations/<int:evaluation_id>/clone/", api.EvaluationCloneApi.as_view(),
         name="evaluation_clone"),
    path("evaluations/<int:evaluation_id>/archive/", api.EvaluationArchiveApi.as_view(),
         name="evaluation_archive"),
    path("evaluations/<int:evaluation_id>/restore/", api.EvaluationRestoreApi.as_view(),
         name="evaluation_restore"),
    path("evaluations/<int:evaluation_id>/start/", api.EvaluationStartApi.as_view(),
         name="evaluation_start"),
    path("evaluations/<int:evaluation_id>/pause/", api.EvaluationPauseApi.as_view(),
         name="evaluation_pause"),
    path("evaluations/<int:evaluation_id>/finish/", api.EvaluationFinishApi.as_view(),
         name="evaluation_finish"),
    path("evaluations/<int:evaluation_id>/retry-failed/", api.EvaluationRetryFailedApi.as_view(),
         name="evaluation_retry_failed"),
]
