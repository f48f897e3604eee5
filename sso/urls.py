from django.urls import path

from sso import views

app_name = "sso"

urlpatterns = [
    path("sso/login/", views.SsoStart.as_view(), name="login"),
    path("sso/callback/", views.SsoCallback.as_view(), name="callback"),
]
