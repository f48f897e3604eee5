from django.urls import path

from metrics import api, api_many, api_verdicts, export_api

app_name = "metrics_api"
urlpatterns = [
    path("evaluations/<int:evaluation_id>/keywords/", api.KeywordListApi.as_view(),
         name="evaluation_keywords"),
    path("evaluations/<int:evaluation_id>/metrics/", api.EvaluationMetricsApi.as_view(),
         name="evaluation_metrics"),
]
urlpatterns += [
    path("evaluations/<int:evaluation_id>/compare/<int:other_id>/",
         api.EvaluationCompareApi.as_view(), name="evaluation_compare"),
]
urlpatterns += [
    path("evaluations/<int:evaluation_id>/metric-table/",
         export_api.EvaluationMetricTableApi.as_view(), name="evaluation_metric_table"),
    path("evaluations/<int:evaluation_id>/rank-eval/",
         export_api.EvaluationRankEvalApi.as_view(), name="evaluation_rank_eval"),
]
urlpatterns += [
    path("evaluations/<int:evaluation_id>/gate/", api_verdicts.EvaluationGateApi.as_view(),
         name="evaluation_gate"),
    path("evaluations/<int:evaluation_id>/verdicts/",
         api_verdicts.EvaluationVerdictListApi.as_view(), name="evaluation_verdicts"),
    path("compare/", api_many.EvaluationCompareManyApi.as_view(), name="compare_many"),
]
