"""Sign-in with a SearchTweak password, which LOCAL_LOGIN=false turns off.

With single sign-on in place a company wants one door: its identity provider decides who
may come in and leaves with the person. A password kept here would outlive that decision,
so with LOCAL_LOGIN false only superusers (the operators' way in when the provider is down)
may still use theirs; everyone else signs in through the provider (sso/).
"""

from django.conf import settings
from django.contrib.auth.backends import ModelBackend
from django.http import HttpRequest

# The backend a password sign-in is recorded under (a session names its backend, and one
# not in AUTHENTICATION_BACKENDS is signed out at its next request).
PASSWORD_BACKEND = "searchtweak.local_login.LocalPasswordBackend"


def password_login_allowed(user) -> bool:
    """Whether `user` may sign in with a password under the current LOCAL_LOGIN."""
    return settings.LOCAL_LOGIN or user.is_superuser


class LocalPasswordBackend(ModelBackend):
    """Django's password check, refusing (as a wrong password is refused: None, so the
    failure is counted and recorded) anyone password_login_allowed() turns away."""

    def authenticate(self, request: HttpRequest | None, username: str | None = None,
                     password: str | None = None, **kwargs: object):
        user = super().authenticate(request, username=username, password=password, **kwargs)
        if user is not None and not password_login_allowed(user):
            return None
        return user
