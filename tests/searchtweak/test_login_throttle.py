"""Login throttling: per username + address and per address, a short lock, a clear page."""

from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.core.management import call_command
from django.test import Client, RequestFactory
from django.urls import reverse

from searchtweak.login_throttle import client_address
from tests.searchtweak.factories import PASSWORD

pytestmark = pytest.mark.django_db

ATTACKER = "203.0.113.7"
ELSEWHERE = "198.51.100.20"
PAIR_LOCKED = ("Too many failed logins as “grader” from your address: logging in as “grader” "
               "from this address is locked for 10 more minutes. Other accounts, and this one "
               "from elsewhere, are not affected")
ADDRESS_LOCKED = ("Too many failed logins from your address: logging in from this address is "
                  "locked for 10 more minutes, for every account.")


def _login(username: str, password: str, address: str):
    client = Client(REMOTE_ADDR=address)
    response = client.post(reverse("login"), {"username": username, "password": password})
    return response, client


def _logged_in(client: Client) -> bool:
    return "_auth_user_id" in client.session


def _let_the_cool_off_pass(settings) -> None:
    # The clock moves on: every recorded failure becomes older than the cool-off.
    for attempt in AccessAttempt.objects.all():
        attempt.attempt_time -= timedelta(minutes=settings.LOGIN_LOCKOUT_MINUTES, seconds=1)
        attempt.save(update_fields=["attempt_time"])


def test_fifty_wrong_passwords_lock_the_address_out_and_the_right_one_is_refused(personas):
    statuses = [_login("grader", "wrong", ATTACKER)[0].status_code for _ in range(50)]
    # The first four are ordinary failures; the fifth reaches the limit.
    assert statuses[:4] == [200] * 4
    assert statuses[4:] == [429] * 46
    response, client = _login("grader", PASSWORD, ATTACKER)
    assert response.status_code == 429
    assert not _logged_in(client)
    html = response.content.decode()
    assert PAIR_LOCKED in html and 'data-testid="lockout"' in html
    assert '<form method="post" action="/login/">' in html  # still the login page


def test_the_lock_ends_after_the_cool_off(personas, settings):
    for _ in range(settings.LOGIN_FAILURE_LIMIT):
        _login("grader", "wrong", ATTACKER)
    assert _login("grader", PASSWORD, ATTACKER)[0].status_code == 429
    _let_the_cool_off_pass(settings)
    response, client = _login("grader", PASSWORD, ATTACKER)
    assert response.status_code == 302 and _logged_in(client)


def test_failures_while_locked_do_not_extend_the_lock(personas, settings):
    for _ in range(settings.LOGIN_FAILURE_LIMIT):
        _login("grader", "wrong", ATTACKER)
    locked_at = AccessAttempt.objects.get().attempt_time
    for _ in range(10):
        assert _login("grader", "wrong", ATTACKER)[0].status_code == 429
    attempt = AccessAttempt.objects.get()
    assert attempt.attempt_time == locked_at
    assert attempt.failures_since_start == settings.LOGIN_FAILURE_LIMIT


def test_the_real_user_elsewhere_is_not_locked_out(personas, settings):
    for _ in range(settings.LOGIN_FAILURE_LIMIT + 3):
        _login("grader", "wrong", ATTACKER)
    response, client = _login("grader", PASSWORD, ELSEWHERE)
    assert response.status_code == 302 and _logged_in(client)


def test_another_user_at_the_same_address_still_logs_in_below_the_address_limit(
        personas, settings):
    for _ in range(settings.LOGIN_FAILURE_LIMIT):
        _login("grader", "wrong", ATTACKER)
    assert _login("grader", PASSWORD, ATTACKER)[0].status_code == 429
    response, client = _login("lead", PASSWORD, ATTACKER)
    assert response.status_code == 302 and _logged_in(client)


def test_many_usernames_from_one_address_lock_the_address(personas, settings):
    limit = settings.LOGIN_FAILURE_LIMIT_PER_ADDRESS
    statuses = [_login(f"guess{n}", "wrong", ATTACKER)[0].status_code for n in range(limit)]
    assert statuses == [200] * (limit - 1) + [429]
    response, client = _login("lead", PASSWORD, ATTACKER)
    assert response.status_code == 429 and not _logged_in(client)
    assert ADDRESS_LOCKED in response.content.decode()
    response, client = _login("lead", PASSWORD, ELSEWHERE)
    assert response.status_code == 302 and _logged_in(client)


def test_the_lockout_page_counts_down_the_minutes_left(personas, settings):
    for _ in range(settings.LOGIN_FAILURE_LIMIT):
        _login("grader", "wrong", ATTACKER)
    # Four minutes and a bit later: six minutes are left (rounded up).
    for attempt in AccessAttempt.objects.all():
        attempt.attempt_time -= timedelta(minutes=4, seconds=10)
        attempt.save(update_fields=["attempt_time"])
    html = _login("grader", PASSWORD, ATTACKER)[0].content.decode()
    assert "logging in as “grader” from this address is locked for 6 more minutes." in html
    assert "from your address:" in html and "10 more minutes" not in html


def test_an_operator_lifts_a_lock_at_once(personas, settings):
    for _ in range(settings.LOGIN_FAILURE_LIMIT):
        _login("grader", "wrong", ATTACKER)
    call_command("axes_reset_ip", ATTACKER)
    response, client = _login("grader", PASSWORD, ATTACKER)
    assert response.status_code == 302 and _logged_in(client)


def test_the_admin_login_is_throttled_too(personas, settings):
    personas.owner.is_staff = True
    personas.owner.save(update_fields=["is_staff"])
    client = Client(REMOTE_ADDR=ATTACKER)
    for _ in range(settings.LOGIN_FAILURE_LIMIT):
        client.post("/admin/login/", {"username": "owner", "password": "wrong"})
    response = client.post("/admin/login/", {"username": "owner", "password": PASSWORD})
    assert response.status_code == 429 and not _logged_in(client)


@pytest.mark.parametrize(("proxy_count", "forwarded", "expected"), [
    (0, "1.1.1.1", "10.0.0.2"),  # no trusted proxy: the header is the client's claim
    (1, "1.1.1.1, 192.0.2.5", "192.0.2.5"),  # the one proxy appended the real client
    (2, "1.1.1.1, 192.0.2.5, 10.0.0.9", "192.0.2.5"),
    (2, "192.0.2.5", "10.0.0.2"),  # fewer hops than proxies: not through them
])
def test_the_client_address_trusts_only_the_configured_proxies(
        settings, proxy_count, forwarded, expected):
    settings.TRUSTED_PROXY_COUNT = proxy_count
    request = RequestFactory().get("/", REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR=forwarded)
    assert client_address(request) == expected


def test_a_username_longer_than_the_column_is_a_form_error_not_a_recorded_failure(personas):
    # django-axes records a failure's username in 255 characters: a longer one was a 500 on
    # PostgreSQL. The form now refuses it before authenticating, at the User's 150.
    response, client = _login("u" * 300, "wrong", ATTACKER)
    assert response.status_code == 200
    assert response.context["form"].errors["username"] == [
        "Ensure this value has at most 150 characters (it has 300)."]
    assert not AccessAttempt.objects.exists() and not _logged_in(client)
    response, client = _login("grader", PASSWORD, ATTACKER)
    assert response.status_code == 302 and _logged_in(client)
