from django.urls import path

from behaviour import api, api_collector, api_learning, api_online, api_predicting

app_name = "behaviour_api"
urlpatterns = [
    path("behaviour-sources/", api.BehaviourSourceListApi.as_view(), name="sources"),
    path("behaviour-sources/<int:source_id>/events/", api_collector.CollectorBatchApi.as_view(),
         name="source_events"),
    path("behaviour-sources/<int:source_id>/keywords/", api.BehaviourSourceKeywordsApi.as_view(),
         name="source_keywords"),
    path("behaviour-sources/<int:source_id>/evaluations/<int:evaluation_id>/online/",
         api_online.EvaluationOnlineApi.as_view(), name="evaluation_online"),
    path("behaviour-sources/<int:source_id>/evaluations/<int:evaluation_id>/online.csv",
         api_online.EvaluationOnlineCsvApi.as_view(), name="evaluation_online_csv"),
    path("evaluations/<int:evaluation_id>/behaviour-fit/",
         api_predicting.EvaluationBehaviourFitApi.as_view(), name="evaluation_behaviour_fit"),
    path("click-graders/", api_learning.ClickGraderListApi.as_view(), name="click_graders"),
    path("click-graders/<int:judge_id>/", api_learning.ClickGraderDetailApi.as_view(),
         name="click_grader"),
    path("judge-runs/<int:run_id>/learned/", api_learning.JudgeRunLearnedApi.as_view(),
         name="run_learned"),
]
