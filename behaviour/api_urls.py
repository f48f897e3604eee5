from django.urls import path

from behaviour import api, api_collector

app_name = "behaviour_api"
urlpatterns = [
    path("behaviour-sources/", api.BehaviourSourceListApi.as_view(), name="sources"),
    path("behaviour-sources/<int:source_id>/events/", api_collector.CollectorBatchApi.as_view(),
         name="source_events"),
    path("behaviour-sources/<int:source_id>/keywords/", api.BehaviourSourceKeywordsApi.as_view(),
         name="source_keywords"),
]
