from django.urls import path

from behaviour import api, api_learning, api_predicting

app_name = "behaviour_api"
urlpatterns = [
    path("behaviour-sources/", api.BehaviourSourceListApi.as_view(), name="sources"),
    path("behaviour-sources/<int:source_id>/keywords/", api.BehaviourSourceKeywordsApi.as_view(),
         name="source_keywords"),
    path("evaluations/<int:evaluation_id>/behaviour-fit/",
         api_predicting.EvaluationBehaviourFitApi.as_view(), name="evaluation_behaviour_fit"),
    path("click-graders/", api_learning.ClickGraderListApi.as_view(), name="click_graders"),
]
