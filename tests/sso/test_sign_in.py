"""Signing in through a real (fake) OpenID provider on 127.0.0.1: tests/sso/fake_idp.py."""

import pytest
from django.contrib.auth import get_user_model

from audit.models import Action, AuditEvent
from searchtweak.envvars import group_roles_parse
from searchtweak.models import Membership, Role
from tests.searchtweak.factories import TeamFactory, UserFactory, member
from tests.sso.conftest import callback_url

pytestmark = pytest.mark.django_db

User = get_user_model()


def _signed_in_user_id(client):
    return client.session.get("_auth_user_id")


def test_a_first_sign_in_creates_the_user_and_signs_them_in(client, idp):
    response = client.get(callback_url(client, idp, "alice"))
    assert response.status_code == 302 and response["Location"] == "/"
    alice = User.objects.get(email="alice@example.com")
    assert (alice.username, alice.first_name, alice.last_name) == ("alice", "Alice", "Liddell")
    assert not alice.has_usable_password()
    assert _signed_in_user_id(client) == str(alice.pk)
    assert client.get("/").status_code == 200
    sign_in = AuditEvent.objects.get(action=Action.SIGN_IN)
    assert (sign_in.actor_id, sign_in.actor_label, sign_in.client_address) == (
        alice.pk, "alice", "127.0.0.1")


def test_a_later_sign_in_is_matched_by_e_mail_case_insensitively(client, idp):
    jane = UserFactory(username="jane", email="Alice@Example.COM")
    users_before = User.objects.count()
    client.get(callback_url(client, idp, "alice"))
    assert _signed_in_user_id(client) == str(jane.pk)
    assert User.objects.count() == users_before
    client.logout()
    client.get(callback_url(client, idp, "alice"))
    assert _signed_in_user_id(client) == str(jane.pk)
    assert AuditEvent.objects.filter(action=Action.SIGN_IN, actor_id=jane.pk).count() == 2


def test_groups_give_the_mapped_roles_and_follow_the_provider(client, idp, settings):
    acme, other, unmapped = TeamFactory(name="Acme"), TeamFactory(name="Other"), TeamFactory()
    settings.OIDC_GROUP_ROLES = group_roles_parse([
        f"search-leads={acme.pk}:lead", f"everyone={acme.pk}:grader",
        f"other-admins={other.pk}:admin"])
    idp.people["alice"].groups = ["/search-leads", "everyone", "unrelated"]
    client.get(callback_url(client, idp, "alice"))
    alice = User.objects.get(email="alice@example.com")
    Membership.objects.create(team=unmapped, user=alice, role=Role.ADMIN)
    assert {m.team_id: m.role for m in alice.memberships.all()} == {
        acme.pk: Role.LEAD, unmapped.pk: Role.ADMIN}
    alice.refresh_from_db()
    assert alice.current_team_id == acme.pk

    # Out of search-leads at the provider: the next sign-in leaves the grader role it gives.
    idp.people["alice"].groups = ["everyone"]
    client.logout()
    client.get(callback_url(client, idp, "alice"))
    assert {m.team_id: m.role for m in alice.memberships.all()} == {
        acme.pk: Role.GRADER, unmapped.pk: Role.ADMIN}

    # In no mapped group: out of Acme, on to her other team; the unmapped team is not the
    # mapping's business.
    idp.people["alice"].groups = []
    client.logout()
    client.get(callback_url(client, idp, "alice"))
    assert {m.team_id: m.role for m in alice.memberships.all()} == {unmapped.pk: Role.ADMIN}
    alice.refresh_from_db()
    assert alice.current_team_id == unmapped.pk

    changes = [(e.team_id, e.actor_id, e.actor_label, e.changes) for e in
               AuditEvent.objects.filter(action=Action.ROLE_CHANGED).order_by("pk")]
    assert changes == [
        (acme.pk, None, "single sign-on", {"role": [None, "lead"], "user": [None, alice.pk]}),
        (acme.pk, None, "single sign-on", {"role": ["lead", "grader"]}),
        (acme.pk, None, "single sign-on", {"role": ["grader", None], "user": [alice.pk, None]}),
    ]


def test_the_mapping_never_removes_a_teams_last_owner(client, idp, settings):
    acme = TeamFactory(name="Acme")
    owner = member(acme, Role.OWNER, "founder")
    owner.email = "alice@example.com"
    owner.save()
    settings.OIDC_GROUP_ROLES = group_roles_parse([f"graders={acme.pk}:grader"])
    client.get(callback_url(client, idp, "alice"))
    assert _signed_in_user_id(client) == str(owner.pk)
    assert Membership.objects.get(team=acme, user=owner).role == Role.OWNER


def _refused(response, reason: str) -> None:
    assert response.status_code == 403
    assert response.templates[0].name == "sso/refused.html"
    assert reason in response.content.decode()


def _refusal_recorded(client) -> None:
    assert _signed_in_user_id(client) is None
    assert not User.objects.filter(email="alice@example.com").exists()
    failed = AuditEvent.objects.get(action=Action.SIGN_IN_FAILED)
    assert (failed.actor_id, failed.actor_label) == (None, "single sign-on")
    assert not AuditEvent.objects.filter(action=Action.SIGN_IN).exists()


def test_a_token_signed_with_another_key_is_refused(client, idp):
    idp.tweaks["other_key"] = True
    response = client.get(callback_url(client, idp, "alice"))
    _refused(response, "signature does not match the identity provider")
    _refusal_recorded(client)


def test_an_expired_token_is_refused(client, idp):
    # Expired two minutes ago: past the minute of clock leeway.
    idp.tweaks["exp_in"] = -120
    response = client.get(callback_url(client, idp, "alice"))
    _refused(response, "has expired")
    _refusal_recorded(client)


def test_a_token_expired_within_the_clock_leeway_is_accepted(client, idp):
    idp.tweaks["exp_in"] = -30
    client.get(callback_url(client, idp, "alice"))
    assert _signed_in_user_id(client) is not None


def test_a_token_for_another_audience_is_refused(client, idp):
    idp.tweaks["aud"] = "another-client"
    response = client.get(callback_url(client, idp, "alice"))
    _refused(response, "issued for another application")
    _refusal_recorded(client)


def test_a_token_from_another_issuer_is_refused(client, idp):
    idp.tweaks["iss"] = "https://impostor.example"
    response = client.get(callback_url(client, idp, "alice"))
    _refused(response, "issued by another identity provider")
    _refusal_recorded(client)


def test_a_replayed_state_is_refused_before_the_code_is_spent(client, idp):
    callback = callback_url(client, idp, "alice")
    assert client.get(callback).status_code == 302
    assert idp.token_requests == 1
    client.logout()
    response = client.get(callback)
    _refused(response, "already completed")
    assert idp.token_requests == 1
    assert _signed_in_user_id(client) is None
    assert AuditEvent.objects.filter(action=Action.SIGN_IN_FAILED).count() == 1


def test_a_callback_from_another_browser_is_refused(client, idp, django_user_model):
    from django.test import Client

    callback = callback_url(client, idp, "alice")
    response = Client().get(callback)
    _refused(response, "not started in this browser")
    assert idp.token_requests == 0


def test_an_address_the_provider_has_not_verified_is_not_matched(client, idp):
    jane = UserFactory(username="jane", email="alice@example.com")
    idp.people["alice"].email_verified = False
    response = client.get(callback_url(client, idp, "alice"))
    _refused(response, "has not verified the address alice@example.com")
    assert _signed_in_user_id(client) is None
    assert User.objects.filter(email__iexact="alice@example.com").get() == jane


def test_the_providers_own_refusal_is_shown(client, idp):
    client.get("/sso/login/")
    state = next(iter(client.session["oidc_states"]))
    response = client.get("/sso/callback/", {"error": "access_denied", "state": state,
                                             "error_description": "User cancelled"})
    _refused(response, "The identity provider refused the sign-in: User cancelled")


def test_a_provider_that_cannot_be_reached_gets_a_clear_page(client, idp, settings):
    settings.OIDC_DISCOVERY_URL = "http://127.0.0.1:9/.well-known/openid-configuration"
    response = client.get("/sso/login/")
    assert response.status_code == 503
    assert "cannot be reached" in response.content.decode()


def test_without_oidc_the_pages_are_absent_and_the_login_page_unchanged(client, settings):
    settings.OIDC_DISCOVERY_URL = ""
    assert client.get("/sso/login/").status_code == 404
    assert client.get("/sso/callback/?code=x&state=y").status_code == 404
    page = client.get("/login/").content.decode()
    assert 'data-testid="sso-login"' not in page
    assert 'name="password"' in page


def test_the_login_page_offers_the_provider_beside_passwords(client, idp):
    page = client.get("/login/?next=/evaluations/").content.decode()
    assert 'href="/sso/login/?next=/evaluations/"' in page
    assert "Sign in with Fake IdP" in page
    assert 'name="password"' in page


@pytest.mark.parametrize("path", ["/sso/login/", "/sso/callback/"])
@pytest.mark.parametrize("method", ["post", "put", "patch", "delete"])
def test_the_pages_take_only_get(client, idp, path, method):
    assert getattr(client, method)(path).status_code == 405


def test_a_signed_in_member_starting_again_goes_to_the_provider(client, idp, personas):
    client.force_login(personas.grader)
    response = client.get("/sso/login/")
    assert response.status_code == 302 and response["Location"].startswith(f"{idp.url}/")


def test_after_a_sign_in_the_browser_goes_where_it_was_going(client, idp):
    response = client.get(callback_url(client, idp, "alice", next_url="/teams/new/"))
    assert response.status_code == 302 and response["Location"] == "/teams/new/"


def test_a_next_address_on_another_site_is_dropped(client, idp):
    response = client.get(callback_url(client, idp, "alice", next_url="https://evil.example/"))
    assert response.status_code == 302 and response["Location"] == "/"


def test_refusals_count_towards_the_addresss_lockout(client, idp, settings):
    settings.LOGIN_FAILURE_LIMIT_PER_ADDRESS = 2
    idp.tweaks["aud"] = "another-client"
    assert client.get(callback_url(client, idp, "alice")).status_code == 403
    # The failure that reaches the limit answers the lockout page, as a password's does.
    assert client.get(callback_url(client, idp, "alice")).status_code == 429
    idp.tweaks.clear()
    response = client.get(callback_url(client, idp, "alice"))
    assert response.status_code == 429
    assert idp.token_requests == 2
    assert "Too many failed logins from your address" in response.content.decode()
    assert _signed_in_user_id(client) is None
    assert AuditEvent.objects.filter(action=Action.SIGN_IN_FAILED).count() == 3
