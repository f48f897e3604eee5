from django.urls import path

from metrics import api

app_name = "metrics_api"
urlpatterns = [
    path("evaluations/<int:evaluation_id>/keywords/", api.KeywordListApi.as_view(),
         name="evaluation_keywords"),
]
urlpatterns += [
    path("evaluations/<int:evaluation_id>/compare/<int:other_id>/",
         api.EvaluationCompareApi.as_view(), name="evaluation_compare"),
]
