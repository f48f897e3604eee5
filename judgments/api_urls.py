from django.urls import path

from judgments import api

app_name = "judgments_api"
urlpatterns = [
    path("evaluations/<int:evaluation_id>/next/", api.EvaluationNextApi.as_view(), name="next"),
    path("evaluations/<int:evaluation_id>/snapshots/", api.EvaluationSnapshotListApi.as_view(),
         name="snapshots"),
    path("snapshots/<int:snapshot_id>/grade/", api.SnapshotGradeApi.as_view(), name="grade"),
]
urlpatterns += [
    path("evaluations/<int:evaluation_id>/judgments/", api.EvaluationJudgmentsApi.as_view(),
         name="judgments"),
]
