"""The two pages of a sign-in through the identity provider: the start, which sends the
browser there, and the callback it comes back to. Both answer 404 while single sign-on is
off. A refused sign-in gets a page saying why (403), never a 500, and one failed sign-in
in the audit trail (Django's user_login_failed, which audit.receivers records); a
successful one is Django's login, so user_logged_in records it."""

import logging

import requests
from django.conf import settings
from django.contrib.auth.signals import user_login_failed
from django.core.exceptions import SuspiciousOperation
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from mozilla_django_oidc.views import (
    OIDCAuthenticationCallbackView,
    OIDCAuthenticationRequestView,
)

from sso.provider import ProviderUnavailable, provider, sso_enabled
from sso.services import SsoRefused

logger = logging.getLogger(__name__)

STARTED_ELSEWHERE = ("This sign-in was not started in this browser, was already completed, "
                     "or has expired. Start again from the login page.")
NONCE_MISMATCH = "The sign-in token does not belong to the sign-in this browser started."
PROVIDER_DOWN = "The identity provider cannot be reached; please try again later."
UNKNOWN_KEY = "The sign-in token is signed with a key the identity provider does not list."


def sso_refused(request: HttpRequest, reason: str, *, status: int = 403) -> HttpResponse:
    """The refusal page, with one failed sign-in recorded (audit.receivers)."""
    logger.info("single sign-on refused: %s", reason)
    user_login_failed.send(sender=__name__, credentials={"username": "single sign-on"},
                           request=request)
    return render(request, "sso/refused.html", {"reason": reason}, status=status)


class SsoStart(OIDCAuthenticationRequestView):
    """GET /sso/login/: to the provider's authorization endpoint, with a fresh state,
    nonce and PKCE challenge kept in the session (the library's view)."""

    def __init__(self, *args, **kwargs) -> None:
        # The library reads the endpoint from settings here; ours comes from discovery.
        super(OIDCAuthenticationRequestView, self).__init__(*args, **kwargs)
        self.OIDC_RP_CLIENT_ID = settings.OIDC_RP_CLIENT_ID

    def get(self, request: HttpRequest) -> HttpResponse:
        if not sso_enabled():
            raise Http404("Single sign-on is not configured.")
        try:
            self.OIDC_OP_AUTH_ENDPOINT = provider().authorization_endpoint
        except ProviderUnavailable:
            return sso_refused(request, PROVIDER_DOWN, status=503)
        return super().get(request)


class SsoCallback(OIDCAuthenticationCallbackView):
    """GET /sso/callback/: the provider's answer. The library checks the state against the
    session (each state is used once), then authenticate() runs sso.backends.OidcBackend."""

    refusal = STARTED_ELSEWHERE

    def get(self, request: HttpRequest) -> HttpResponse:
        if not sso_enabled():
            raise Http404("Single sign-on is not configured.")
        if request.GET.get("error"):
            description = request.GET.get("error_description") or request.GET["error"]
            self.refusal = f"The identity provider refused the sign-in: {description[:200]}"
        try:
            return super().get(request)
        except SsoRefused as error:
            return sso_refused(request, str(error))
        except SuspiciousOperation as error:
            return sso_refused(request, _suspicious_reason(error))
        except requests.RequestException:
            return sso_refused(request, PROVIDER_DOWN, status=503)

    def login_failure(self) -> HttpResponse:
        if getattr(self.request, "axes_locked_out", False):
            # Locked out by the login throttle: its backend refused before ours ran, Django
            # has recorded the failure, and AxesMiddleware answers the lockout page.
            return HttpResponse(status=429)
        return sso_refused(self.request, self.refusal)


def _suspicious_reason(error: SuspiciousOperation) -> str:
    message = str(error)
    if "state" in message:
        return STARTED_ELSEWHERE
    if "Nonce" in message:
        return NONCE_MISMATCH
    if "JWKS" in message:
        return UNKNOWN_KEY
    return f"The identity provider's answer was refused ({message})."
