from django.urls import path

from guide import views

app_name = "guide"

urlpatterns = [
    path("help/", views.index, name="index"),
    path("help/<slug:name>/", views.page, name="page"),
]
