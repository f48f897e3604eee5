from django.urls import path

from judgments import api, api_gold, api_scales

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
urlpatterns += [
    path("evaluations/<int:evaluation_id>/gold/", api_gold.EvaluationGoldApi.as_view(),
         name="gold"),
    path("evaluations/<int:evaluation_id>/gold/import/",
         api_gold.EvaluationGoldImportApi.as_view(), name="gold_import"),
]
urlpatterns += [
    path("scales/", api_scales.ScaleListApi.as_view(), name="scales"),
    path("scales/<int:scale_id>/", api_scales.ScaleDetailApi.as_view(), name="scale"),
    path("transformers/", api_scales.TransformerListApi.as_view(), name="transformers"),
    path("transformers/<int:transformer_id>/", api_scales.TransformerDetailApi.as_view(),
         name="transformer"),
]
