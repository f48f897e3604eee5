from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from searchtweak import access, services
from searchtweak import healthz as health
from searchtweak.context_processors import allows_by_role
from searchtweak.forms import (
    AccountForm,
    ApiTokenForm,
    InvitationForm,
    LoginForm,
    RegisterForm,
    RoleForm,
    SwitchTeamForm,
    TeamForm,
    add_service_errors,
)
from searchtweak.local_login import PASSWORD_BACKEND
from searchtweak.models import Role
from searchtweak.selectors import (
    api_token_get_for_user,
    api_tokens_of_user,
    current_membership,
    invitation_get_for_user,
    invitations_for_user,
    invitee_warning,
    membership_get_for_user,
    team_get_for_user,
    team_members,
    team_open_invitations,
)


class LoginPage(auth_views.LoginView):
    """Django's login page, with the single sign-on button when OIDC is configured. With
    LOCAL_LOGIN false it shows only that button; the password form stays at
    /login/?local=1 for superusers (searchtweak.local_login refuses everyone else)."""

    redirect_authenticated_user = True
    authentication_form = LoginForm

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context["sso_name"] = (settings.OIDC_PROVIDER_NAME if settings.OIDC_DISCOVERY_URL
                               else "")
        context["password_hidden"] = not (settings.LOCAL_LOGIN or "local" in self.request.GET
                                          or self.request.method == "POST")
        return context


@require_GET
@login_required
def home(request: HttpRequest) -> HttpResponse:
    membership = current_membership(user=request.user)
    return render(request, "searchtweak/home.html", {
        "membership": membership,
        "allows": allows_by_role(membership),
        "invitations": invitations_for_user(user=request.user),
        "can_create_team": not access.team_creation_refusal(user=request.user),
    })


@require_http_methods(["GET", "POST"])
@login_required
def team_create(request: HttpRequest) -> HttpResponse:
    access.check_team_creation(user=request.user)
    form = TeamForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            team = services.team_create(user=request.user, name=form.cleaned_data["name"])
        except ValidationError as error:
            add_service_errors(form, error)
        else:
            services.user_switch_team(user=request.user, team=team)
            messages.success(request, f"Team {team.name} created.")
            return redirect("team_detail", team_id=team.pk)
    return render(request, "searchtweak/team_create.html", {"form": form})


@require_GET
@login_required
def team_detail(request: HttpRequest, team_id: int) -> HttpResponse:
    team = team_get_for_user(user=request.user, team_id=team_id)
    return _render_team(request, team, invitation_form=InvitationForm())


def _render_team(request: HttpRequest, team, *, invitation_form, status: int = 200):
    membership = next(m for m in team_members(team=team) if m.user_id == request.user.pk)
    can_manage = access.membership_allows(membership, minimum_role=Role.ADMIN)
    return render(request, "searchtweak/team_detail.html", {
        "team": team,
        "my_membership": membership,
        "members": team_members(team=team),
        "invitations": team_open_invitations(team=team) if can_manage else [],
        "invitation_form": invitation_form,
        "can_manage": can_manage,
        # The team's share links are its leads' (sharing.selectors.SHARE_ROLE).
        "can_lead": access.membership_allows(membership, minimum_role=Role.LEAD),
        "mail_is_printed": services.mail_is_printed(),
        "roles": Role.choices,
    }, status=status)


@require_POST
@login_required
def invitation_create(request: HttpRequest, team_id: int) -> HttpResponse:
    team = team_get_for_user(user=request.user, team_id=team_id, minimum_role=Role.ADMIN)
    form = InvitationForm(request.POST)
    if form.is_valid():
        try:
            invitation = services.invitation_create(
                team=team, invited_by=request.user, **form.cleaned_data
            )
        except ValidationError as error:
            add_service_errors(form, error)
        else:
            link = request.build_absolute_uri(
                reverse("invitation_detail", args=[invitation.token])
            )
            if not services.invitation_send(invitation=invitation, link=link):
                messages.success(request, f"Invitation for {invitation.invitee} created. "
                                 f"Send them this link: {link}")
            elif services.mail_is_printed():
                messages.success(request, f"Invitation for {invitation.invitee} created; "
                                 "with no mail server configured (EMAIL_URL) its e-mail was "
                                 f"printed on the server's console. Send them this link: {link}")
            else:
                messages.success(request, f"Invitation for {invitation.invitee} created and "
                                 f"e-mailed to them. Their link: {link}")
            warning = invitee_warning(invitee=invitation.invitee)
            if warning:
                messages.warning(request, warning)
            return redirect("team_detail", team_id=team.pk)
    return _render_team(request, team, invitation_form=form, status=400)


@require_POST
@login_required
def membership_change_role(request: HttpRequest, membership_id: int) -> HttpResponse:
    membership = membership_get_for_user(
        user=request.user, membership_id=membership_id, minimum_role=Role.ADMIN
    )
    form = RoleForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose one of the roles.")
    else:
        try:
            services.membership_change_role(
                membership=membership, changed_by=request.user, role=form.cleaned_data["role"]
            )
        except ValidationError as error:
            messages.error(request, " ".join(error.messages))
        else:
            messages.success(request, f"{membership.user.username} is now {membership.role}.")
    return redirect("team_detail", team_id=membership.team_id)


@require_POST
@login_required
def membership_remove(request: HttpRequest, membership_id: int) -> HttpResponse:
    membership = membership_get_for_user(user=request.user, membership_id=membership_id)
    if membership.user_id != request.user.pk:
        # Leaving is open to everyone; removing someone else needs an admin.
        membership_get_for_user(
            user=request.user, membership_id=membership_id, minimum_role=Role.ADMIN
        )
    try:
        services.membership_remove(membership=membership, removed_by=request.user)
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
        return redirect("team_detail", team_id=membership.team_id)
    if membership.user_id == request.user.pk:
        messages.success(request, f"You left {membership.team.name}.")
        return redirect("home")
    messages.success(request, f"{membership.user.username} was removed.")
    return redirect("team_detail", team_id=membership.team_id)


@require_POST
@login_required
def team_switch(request: HttpRequest) -> HttpResponse:
    form = SwitchTeamForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose a team.")
        return redirect("home")
    team = team_get_for_user(user=request.user, team_id=form.cleaned_data["team"])
    services.user_switch_team(user=request.user, team=team)
    next_url = form.cleaned_data["next"]
    if next_url and url_has_allowed_host_and_scheme(next_url, {request.get_host()}):
        return redirect(next_url)
    return redirect("home")


@require_http_methods(["GET", "POST"])
def invitation_detail(request: HttpRequest, token: str) -> HttpResponse:
    invitation = invitation_get_for_user(user=request.user, token=token)
    register_form = None
    # With passwords off (LOCAL_LOGIN false) a new person signs in through the provider,
    # which makes the account, and then accepts.
    if not request.user.is_authenticated and "@" in invitation.invitee and settings.LOCAL_LOGIN:
        register_form = RegisterForm(request.POST or None)
    if request.method == "POST" and invitation.is_open():
        try:
            if request.user.is_authenticated:
                services.invitation_accept(invitation=invitation, user=request.user)
            elif register_form is not None and register_form.is_valid():
                user = services.user_register_from_invitation(
                    invitation=invitation, **register_form.cleaned_data
                )
                login(request, user, backend=PASSWORD_BACKEND)
            else:
                return render(request, "searchtweak/invitation.html", {
                    "invitation": invitation, "register_form": register_form,
                }, status=400)
        except ValidationError as error:
            if register_form is not None:
                add_service_errors(register_form, error)
            else:
                messages.error(request, " ".join(error.messages))
            return render(request, "searchtweak/invitation.html", {
                "invitation": invitation, "register_form": register_form,
            }, status=400)
        messages.success(request, f"Welcome to {invitation.team.name}.")
        return redirect("home")
    return render(request, "searchtweak/invitation.html", {
        "invitation": invitation, "register_form": register_form,
    })


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    report = {"database": health.database_status(), "broker": health.broker_status(),
              "workers": health.workers_status()}
    healthy = all(status in ("ok", "eager") for value in report.values()
                  for status in (value.values() if isinstance(value, dict) else [value]))
    report["status"] = "ok" if healthy else "error"
    return JsonResponse(report, status=200 if healthy else 503)


# --- the user's account ---


@require_http_methods(["GET", "POST"])
@login_required
def account(request: HttpRequest) -> HttpResponse:
    """The user's name; the password has Django's own pages (password_change)."""
    form = AccountForm(request.POST or None, initial={
        "first_name": request.user.first_name, "last_name": request.user.last_name})
    if request.method == "POST" and form.is_valid():
        services.user_change_name(user=request.user, **form.cleaned_data)
        messages.success(request, "Your name was saved.")
        return redirect("account")
    return render(request, "searchtweak/account.html", {"form": form},
                  status=400 if form.errors else 200)


# --- API tokens (the user's settings) ---

_NEW_TOKEN_KEY = "searchtweak_new_api_token"


@require_http_methods(["GET", "POST"])
@login_required
def api_tokens(request: HttpRequest) -> HttpResponse:
    """The user's API tokens; a new token's key is shown once, on the page after creation
    (kept in the session for exactly one GET), and never again."""
    form = ApiTokenForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            token, key = services.api_token_create(user=request.user,
                                                   name=form.cleaned_data["name"])
        except ValidationError as error:
            add_service_errors(form, error)
        else:
            request.session[_NEW_TOKEN_KEY] = {"id": token.pk, "key": key}
            return redirect("api_tokens")
    return render(request, "searchtweak/tokens.html", {
        "form": form,
        "tokens": api_tokens_of_user(user=request.user),
        "new_token": request.session.pop(_NEW_TOKEN_KEY, None),
    }, status=400 if form.errors else 200)


@require_POST
@login_required
def api_token_revoke(request: HttpRequest, token_id: int) -> HttpResponse:
    token = api_token_get_for_user(user=request.user, token_id=token_id)
    services.api_token_revoke(token=token)
    messages.success(request, f"Token “{token.name}” revoked: it no longer authenticates.")
    return redirect("api_tokens")
