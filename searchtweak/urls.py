from csp.decorators import csp_update
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from django.views.decorators.http import require_http_methods
from drf_spectacular.views import (
    SpectacularAPIView,
    SpectacularRedocView,
    SpectacularSwaggerSplitView,
)

from searchtweak import api, api_audit, views, views_audit

handler400 = "searchtweak.errors.bad_request"
handler403 = "searchtweak.errors.forbidden"
handler404 = "searchtweak.errors.not_found"
handler500 = "searchtweak.errors.server_error"

# Django's form views take PUT as POST, and the login and reset-link views answer before
# they look at the method: a form page of ours takes GET and POST, like the function views.
form_page = require_http_methods(["GET", "POST"])

api_v1 = [
    path("me/", api.MeApi.as_view(), name="me"),
    path("teams/", api.TeamListApi.as_view(), name="teams"),
    path("teams/<int:team_id>/", api.TeamDetailApi.as_view(), name="team"),
    path("teams/<int:team_id>/invitations/", api.InvitationCreateApi.as_view(),
         name="team_invitations"),
    path("teams/<int:team_id>/audit/", api_audit.TeamAuditApi.as_view(), name="team_audit"),
]

urlpatterns = [
    # The API first: a grading client calls it several times a second, and Django tries
    # the patterns in order (the pages' come to about 70).
    path("api/v1/", include((api_v1, "api"), namespace="api")),
    path("api/v1/", include("notifications.api_urls")),
    path("api/v1/", include("evaluations.api_urls")),
    path("api/v1/", include("judgments.api_urls")),
    path("api/v1/", include("metrics.api_urls")),
    path("api/v1/", include("judges.api_urls")),
    path("api/v1/", include("schedules.api_urls")),
    path("api/v1/", include("behaviour.api_urls")),
    path("", views.home, name="home"),
    path("login/", form_page(views.LoginPage.as_view()), name="login"),
    # Single sign-on (404 while OIDC_DISCOVERY_URL is unset).
    path("", include("sso.urls")),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    # Django's own password views, with our templates in templates/registration/.
    path("password-reset/", form_page(auth_views.PasswordResetView.as_view()),
         name="password_reset"),
    path("password-reset/sent/", auth_views.PasswordResetDoneView.as_view(),
         name="password_reset_done"),
    path("password-reset/<uidb64>/<token>/",
         form_page(auth_views.PasswordResetConfirmView.as_view()),
         name="password_reset_confirm"),
    path("password-reset/done/", auth_views.PasswordResetCompleteView.as_view(),
         name="password_reset_complete"),
    path("account/", views.account, name="account"),
    path("account/password/", form_page(auth_views.PasswordChangeView.as_view()),
         name="password_change"),
    path("account/password/done/", auth_views.PasswordChangeDoneView.as_view(),
         name="password_change_done"),
    path("teams/new/", views.team_create, name="team_create"),
    path("teams/switch/", views.team_switch, name="team_switch"),
    path("teams/<int:team_id>/", views.team_detail, name="team_detail"),
    path("teams/<int:team_id>/invitations/", views.invitation_create, name="invitation_create"),
    path("teams/<int:team_id>/audit/", views_audit.team_audit, name="team_audit"),
    path("memberships/<int:membership_id>/role/", views.membership_change_role,
         name="membership_change_role"),
    path("memberships/<int:membership_id>/remove/", views.membership_remove,
         name="membership_remove"),
    path("invitations/<str:token>/", views.invitation_detail, name="invitation_detail"),
    path("settings/tokens/", views.api_tokens, name="api_tokens"),
    path("settings/tokens/<int:token_id>/revoke/", views.api_token_revoke,
         name="api_token_revoke"),
    path("", include("notifications.urls")),
    path("healthz", views.healthz, name="healthz"),
    path("", include("monitoring.urls")),
    path("admin/", admin.site.urls),
    # Each app's pages; the apps above searchtweak plug in here and in the API above, the
    # only places the project names them.
    # judges first: evaluations' catch-all action pattern (evaluations/<id>/<action>/)
    # would otherwise answer the judge-runs panel (evaluations/<id>/judge-runs/).
    path("", include("judges.urls")),
    path("", include("evaluations.urls")),
    path("", include("judgments.urls")),
    path("", include("metrics.urls")),
    path("", include("sharing.urls")),
    path("", include("schedules.urls")),
    path("", include("behaviour.urls")),
    path("", include("guide.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api_schema"),
    # The split view serves Swagger UI's start-up script as a file, not an inline <script>.
    path("api/docs/", SpectacularSwaggerSplitView.as_view(
        url_name="api_schema", template_name="searchtweak/swagger_ui.html"),
         name="api_docs"),
    # Redoc's bundle adds <style> elements as it loads (before any nonce it could be given
    # applies), so this one page allows inline styles; its scripts stay as strict as any.
    path("api/redoc/", csp_update({"style-src": ["'unsafe-inline'"]})(SpectacularRedocView.as_view(
        url_name="api_schema", template_name="searchtweak/redoc.html")), name="api_redoc"),
]
