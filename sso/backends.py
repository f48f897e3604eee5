"""mozilla-django-oidc's authorization-code backend, checked more strictly.

The library fetches the token, picks the provider's key from its JWKS and checks the
signature and the nonce; this subclass takes the endpoints from the discovery document
(sso.provider), also checks the ID token's issuer, audience (the library does not) and
expiry, requires the userinfo answer to be about the same subject, and hands the claims to
sso.services.sso_sign_in. Every refusal raises (SsoRefused, or the library's
SuspiciousOperation), never returns None, so the callback view records exactly one failed
sign-in with its reason.
"""

import jwt
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.core.exceptions import SuspiciousOperation
from mozilla_django_oidc.auth import OIDCAuthenticationBackend

from sso.provider import ProviderUnavailable, provider
from sso.services import SsoRefused, sso_sign_in

# Clocks of the provider and this server may differ by this many seconds.
CLOCK_LEEWAY_SECONDS = 60

_TOKEN_REFUSALS = (
    (jwt.ExpiredSignatureError, "The sign-in token from the identity provider has expired; "
                                "please sign in again."),
    (jwt.InvalidAudienceError, "The sign-in token was issued for another application."),
    (jwt.InvalidIssuerError, "The sign-in token was issued by another identity provider."),
    (jwt.ImmatureSignatureError, "The sign-in token is not valid yet; check the clocks of "
                                 "this server and the identity provider."),
    (jwt.InvalidSignatureError, "The sign-in token's signature does not match the identity "
                                "provider's keys."),
)


class OidcBackend(OIDCAuthenticationBackend):
    """Signs in whoever the provider vouches for (sso.services decides who that is here)."""

    def __init__(self, *args, **kwargs) -> None:
        # Not the library's __init__: it reads fixed endpoints from settings, and Django
        # builds a backend for every request's session check, which must not ask the
        # provider anything. authenticate() fills the endpoints in.
        self.OIDC_RP_CLIENT_ID = settings.OIDC_RP_CLIENT_ID
        self.OIDC_RP_CLIENT_SECRET = settings.OIDC_RP_CLIENT_SECRET
        self.OIDC_RP_SIGN_ALGO = settings.OIDC_RP_SIGN_ALGO
        self.OIDC_RP_IDP_SIGN_KEY = None
        self.UserModel = get_user_model()

    # The session check of ModelBackend (an inactive user is signed out), not the library's.
    get_user = ModelBackend.get_user
    user_can_authenticate = ModelBackend.user_can_authenticate

    def authenticate(self, request, **kwargs):
        if request is None or not (request.GET.get("code") and request.GET.get("state")):
            return None  # a password sign-in, or not a provider's callback
        try:
            found = provider()
        except ProviderUnavailable as error:
            raise SsoRefused("The identity provider cannot be reached; please try again "
                             "later.") from error
        self.issuer = found.issuer
        self.OIDC_OP_TOKEN_ENDPOINT = found.token_endpoint
        self.OIDC_OP_USER_ENDPOINT = found.userinfo_endpoint
        self.OIDC_OP_JWKS_ENDPOINT = found.jwks_uri
        return super().authenticate(request, **kwargs)

    def _verify_jws(self, payload, key):
        """The library's check (algorithm, signature) plus issuer, audience and expiry."""
        header = jwt.get_unverified_header(payload)
        if header.get("alg") != self.OIDC_RP_SIGN_ALGO:
            raise SsoRefused("The sign-in token is signed with an algorithm SearchTweak does "
                             "not accept.")
        try:
            return jwt.decode(
                payload, key, algorithms=[self.OIDC_RP_SIGN_ALGO],
                audience=self.OIDC_RP_CLIENT_ID, issuer=self.issuer,
                leeway=CLOCK_LEEWAY_SECONDS,
                options={"require": ["iss", "aud", "exp", "iat", "sub"]})
        except jwt.InvalidTokenError as error:
            for kind, reason in _TOKEN_REFUSALS:
                if isinstance(error, kind):
                    raise SsoRefused(reason) from error
            raise SsoRefused(f"The sign-in token is not valid ({error}).") from error

    def get_or_create_user(self, access_token, id_token, payload):
        """The library's version returns None on a refusal; this one says why."""
        userinfo = self.get_userinfo(access_token, id_token, payload)
        if userinfo.get("sub") != payload.get("sub"):
            raise SuspiciousOperation("The userinfo answer is about another subject.")
        claims = {**payload, **userinfo}
        raw_groups = claims.get(settings.OIDC_GROUPS_CLAIM) or []
        groups = {str(group).lstrip("/") for group in raw_groups} if isinstance(
            raw_groups, list) else set()
        return sso_sign_in(claims=claims, groups=groups)
