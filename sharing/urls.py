from django.urls import path

from sharing import views

app_name = "sharing"
urlpatterns = [
    path("share/new/", views.share_create, name="share_create"),
    path("teams/<int:team_id>/share-links/", views.share_list, name="share_list"),
    path("share-links/<int:link_id>/revoke/", views.share_revoke, name="share_revoke"),
    # The visitor's page: short, as it is read aloud and pasted into chats.
    path("s/<str:token>/", views.shared, name="shared"),
]
