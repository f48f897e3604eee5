from django.urls import path

from evaluations import api
from evaluations.endpoints import api as endpoint_api
from evaluations.offline_runs import api as offline_api
from evaluations.query_sets import api as query_set_api

app_name = "evaluations_api"
urlpatterns = [
    path("endpoints/", endpoint_api.EndpointListApi.as_view(), name="endpoints"),
    path("endpoints/<int:endpoint_id>/", endpoint_api.EndpointDetailApi.as_view(),
         name="endpoint"),
    path("endpoints/<int:endpoint_id>/restore/", endpoint_api.EndpointRestoreApi.as_view(),
         name="endpoint_restore"),
    path("models/", endpoint_api.SearchModelListApi.as_view(), name="models"),
    path("models/offline/", offline_api.OfflineModelCreateApi.as_view(),
         name="models_offline"),
    path("models/<int:model_id>/run/", offline_api.OfflineRunUploadApi.as_view(),
         name="model_run"),
    path("models/<int:model_id>/", endpoint_api.SearchModelDetailApi.as_view(), name="model"),
    path("models/<int:model_id>/restore/", endpoint_api.SearchModelRestoreApi.as_view(),
         name="model_restore"),
    path("models/<int:model_id>/test/", endpoint_api.SearchModelTestApi.as_view(),
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
    # --- query sets ---
    path("query-sets/", query_set_api.QuerySetListApi.as_view(), name="query_sets"),
    path("query-sets/<int:query_set_id>/", query_set_api.QuerySetDetailApi.as_view(),
         name="query_set"),
    path("query-sets/<int:query_set_id>/versions/",
         query_set_api.QuerySetVersionCreateApi.as_view(), name="query_set_versions"),
    path("query-sets/<int:query_set_id>/versions/<int:number>/keywords/",
         query_set_api.QuerySetVersionKeywordsApi.as_view(), name="query_set_version_keywords"),
    path("query-sets/<int:query_set_id>/archive/", query_set_api.QuerySetArchiveApi.as_view(),
         name="query_set_archive"),
    path("query-sets/<int:query_set_id>/restore/", query_set_api.QuerySetRestoreApi.as_view(),
         name="query_set_restore"),
]
