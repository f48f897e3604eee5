from django.urls import path

from schedules import api

app_name = "schedules_api"
urlpatterns = [
    path("schedules/", api.ScheduleListApi.as_view(), name="schedules"),
    path("schedules/<int:schedule_id>/", api.ScheduleDetailApi.as_view(),
         name="schedule"),
    path("schedules/<int:schedule_id>/pause/", api.SchedulePauseApi.as_view(),
         name="schedule_pause"),
    path("schedules/<int:schedule_id>/resume/", api.ScheduleResumeApi.as_view(),
         name="schedule_resume"),
    path("schedules/<int:schedule_id>/runs/", api.ScheduleRunsApi.as_view(),
         name="schedule_runs"),
]
