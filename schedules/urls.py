from django.urls import path

from schedules import views

app_name = "schedules"
urlpatterns = [
    path("schedules/", views.schedule_list, name="schedule_list"),
    path("schedules/new/", views.schedule_create, name="schedule_create"),
    path("schedules/<int:schedule_id>/", views.schedule_detail,
         name="schedule_detail"),
    path("schedules/<int:schedule_id>/edit/", views.schedule_edit,
         name="schedule_edit"),
    path("schedules/<int:schedule_id>/pause/", views.schedule_pause,
         name="schedule_pause"),
    path("schedules/<int:schedule_id>/resume/", views.schedule_resume,
         name="schedule_resume"),
    path("schedules/<int:schedule_id>/delete/", views.schedule_delete,
         name="schedule_delete"),
]
