"""Login throttling with django-axes: two limits, a short lock, a clear page.

Failures are counted over the last LOGIN_LOCKOUT_MINUTES per username + client address
(LOGIN_FAILURE_LIMIT, small: guessing one account's password) and per client address
alone (LOGIN_FAILURE_LIMIT_PER_ADDRESS, larger: trying many usernames, while colleagues
behind one office address may each mistype a few times). Axes compares a single limit
with the larger of its counts, and the per-address count is never below the pair's, so
failure_limit() answers the pair's limit once the pair has reached it and the address's
limit otherwise. Nothing counts per username alone: an attacker elsewhere cannot lock a
real user out, and a lock ends by itself after the cool-off.
"""

import math
from datetime import timedelta

from axes.backends import AxesStandaloneBackend
from axes.handlers.database import AxesDatabaseHandler
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.template.defaultfilters import pluralize
from django.utils import timezone


def failure_limit(request: HttpRequest, credentials: dict | None) -> int:
    """AXES_FAILURE_LIMIT: the limit that applies to this request's counts.

    The first of settings.AXES_LOCKOUT_PARAMETERS is the username + address pair.
    """
    pair_attempts = AxesDatabaseHandler().get_user_attempts(request, credentials)[0]
    pair_failures = sum(attempt.failures_since_start for attempt in pair_attempts)
    if pair_failures >= settings.LOGIN_FAILURE_LIMIT:
        return settings.LOGIN_FAILURE_LIMIT
    return settings.LOGIN_FAILURE_LIMIT_PER_ADDRESS


def lockout_message(request: HttpRequest, credentials: dict | None) -> str:
    """What is locked (this username from this address, or every login from the address)
    and for how many more minutes."""
    pair_attempts, address_attempts = AxesDatabaseHandler().get_user_attempts(
        request, credentials)[:2]
    username = (credentials or {}).get("username", "")
    whole_address = (sum(attempt.failures_since_start for attempt in address_attempts)
                     >= settings.LOGIN_FAILURE_LIMIT_PER_ADDRESS)
    attempts = address_attempts if whole_address or not username else pair_attempts
    minutes = _minutes_left(attempts)
    wait = f"{minutes} more minute{pluralize(minutes)}"
    if whole_address or not username:
        return (f"Too many failed logins from your address: logging in from this address "
                f"is locked for {wait}, for every account. Logging in from elsewhere works.")
    return (f"Too many failed logins as “{username}” from your address: logging in as "
            f"“{username}” from this address is locked for {wait}. Other accounts, and this "
            "one from elsewhere, are not affected; you can also reset your password.")


def _minutes_left(attempts) -> int:
    """Minutes until the latest counted failure leaves the cool-off (failures during the
    lock do not extend it), rounded up; at least 1."""
    latest = max((attempt.attempt_time for attempt in attempts), default=None)
    cool_off = timedelta(minutes=settings.LOGIN_LOCKOUT_MINUTES)
    if latest is None:
        return settings.LOGIN_LOCKOUT_MINUTES
    seconds = (latest + cool_off - timezone.now()).total_seconds()
    return min(max(math.ceil(seconds / 60), 1), settings.LOGIN_LOCKOUT_MINUTES)


def lockout_response(request: HttpRequest, original_response: HttpResponse | None = None,
                     credentials: dict | None = None) -> HttpResponse:
    """AXES_LOCKOUT_CALLABLE: the login page again, saying why and for how long, 429."""
    from django.contrib.auth.forms import AuthenticationForm

    username = (credentials or {}).get("username", "")
    return render(request, "registration/login.html", {
        "form": AuthenticationForm(request, initial={"username": username}),
        "lockout_message": lockout_message(request, credentials),
        "next": request.POST.get("next", ""),
    }, status=429)


def client_address(request: HttpRequest) -> str:
    """AXES_CLIENT_IP_CALLABLE: the client's address, behind TRUSTED_PROXY_COUNT proxies.

    Each trusted proxy appends the address it received from to X-Forwarded-For, so the
    client is that many entries from the right; entries further left are the client's own
    claims and are ignored. With no trusted proxy (the default) the header is ignored.
    """
    remote = request.META.get("REMOTE_ADDR", "")
    proxy_count = settings.TRUSTED_PROXY_COUNT
    if proxy_count == 0:
        return remote
    forwarded = [hop.strip() for hop in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")
                 if hop.strip()]
    if len(forwarded) < proxy_count:
        return remote
    return forwarded[-proxy_count]


class LoginThrottleBackend(AxesStandaloneBackend):
    """Axes' backend, except for authenticate() calls made without a request.

    Those come from code, not from a client (Django's test client's login() is one): there
    is no address to throttle, and axes would refuse them outright.
    """

    def authenticate(self, request: HttpRequest | None, username: str | None = None,
                     password: str | None = None, **kwargs: object) -> None:
        if request is None:
            return None
        return super().authenticate(request, username, password, **kwargs)
