"""Accounts: name, password change, password reset by mail, invitations by mail."""

import re
import socket

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse
from rest_framework.test import APIClient

from searchtweak.models import Invitation, Role
from tests.searchtweak.factories import PASSWORD

pytestmark = pytest.mark.django_db

User = get_user_model()
NEW_PASSWORD = "brand-new-pass-42"


def _closed_local_port() -> int:
    """A port on 127.0.0.1 that nothing listens on: a connection is refused at once."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _link_in(body: str) -> str:
    links = re.findall(r"https?://\S+", body)
    assert len(links) == 1, body
    return links[0]


# --- the account page: names -----------------------------------------------------------


def test_the_nav_links_the_account_page(client, personas):
    client.force_login(personas.grader)
    html = client.get(reverse("home")).content.decode()
    assert f'<a href="{reverse("account")}">Account</a>' in html
    # The account page, not the crowded nav, leads on to the API tokens.
    account = client.get(reverse("account")).content.decode()
    assert f'<a href="{reverse("api_tokens")}">API tokens</a>' in account


def test_it_shows_and_changes_the_users_name(client, personas):
    client.force_login(personas.grader)
    page = client.get(reverse("account"))
    assert page.status_code == 200
    assert 'data-testid="account-username">grader<' in page.content.decode()
    response = client.post(reverse("account"), {"first_name": " Grace ", "last_name": "Hopper"})
    assert response.status_code == 302 and response["Location"] == reverse("account")
    personas.grader.refresh_from_db()
    assert (personas.grader.first_name, personas.grader.last_name) == ("Grace", "Hopper")
    assert 'value="Grace"' in client.get(reverse("account")).content.decode()


def test_it_rejects_a_name_too_long_and_keeps_the_old_one(client, personas):
    client.force_login(personas.grader)
    client.post(reverse("account"), {"first_name": "Grace", "last_name": "Hopper"})
    response = client.post(reverse("account"), {"first_name": "x" * 151, "last_name": ""})
    assert response.status_code == 400
    assert "at most 150 characters" in response.content.decode()
    personas.grader.refresh_from_db()
    assert (personas.grader.first_name, personas.grader.last_name) == ("Grace", "Hopper")


def test_the_account_page_rejects_other_methods_and_anonymous_visitors(client, personas):
    response = client.get(reverse("account"))
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))
    client.force_login(personas.grader)
    assert client.delete(reverse("account")).status_code == 405


def test_a_user_changes_only_their_own_name(client, personas):
    client.force_login(personas.grader)
    client.post(reverse("account"), {"first_name": "Mallory", "last_name": ""})
    personas.owner.refresh_from_db()
    assert personas.owner.first_name == ""


# --- password change ---------------------------------------------------------------------


def test_password_change_with_a_wrong_old_password_shows_an_error(client, personas):
    client.force_login(personas.grader)
    response = client.post(reverse("password_change"), {
        "old_password": "not-my-password", "new_password1": NEW_PASSWORD,
        "new_password2": NEW_PASSWORD})
    assert response.status_code == 200  # Django's FormView answers its form again
    assert "Your old password was entered incorrectly" in response.content.decode()
    user = User.objects.get(pk=personas.grader.pk)
    assert user.check_password(PASSWORD) and not user.check_password(NEW_PASSWORD)


def test_password_change_keeps_the_session_and_the_new_password_logs_in(client, personas):
    client.force_login(personas.grader)
    response = client.post(reverse("password_change"), {
        "old_password": PASSWORD, "new_password1": NEW_PASSWORD,
        "new_password2": NEW_PASSWORD}, follow=True)
    assert response.redirect_chain[-1][0] == reverse("password_change_done")
    assert "<h1>Password changed</h1>" in response.content.decode()
    assert client.get(reverse("account")).status_code == 200  # still signed in
    client.logout()
    assert not client.login(username="grader", password=PASSWORD)
    assert client.login(username="grader", password=NEW_PASSWORD)


def test_password_change_needs_a_signed_in_user(client, db):
    response = client.get(reverse("password_change"))
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


# --- password reset by mail --------------------------------------------------------------


def test_the_login_page_offers_a_password_reset(client, db):
    html = client.get(reverse("login")).content.decode()
    assert f'href="{reverse("password_reset")}">Forgot your password?' in html


def test_password_reset_end_to_end_through_the_mailed_link(client, personas, mailoutbox):
    response = client.post(reverse("password_reset"), {"email": "GRADER@example.test"})
    assert response["Location"] == reverse("password_reset_done")
    assert len(mailoutbox) == 1
    mail = mailoutbox[0]
    assert mail.to == ["grader@example.test"]
    assert mail.subject == "Set a new SearchTweak password"
    assert "account grader." in mail.body
    link = _link_in(mail.body)
    assert link.startswith("http://testserver/password-reset/")

    # The link redirects to a URL without the token, as Django does against leaks.
    form_page = client.get(link, follow=True)
    assert "<h1>Set a new password</h1>" in form_page.content.decode()
    set_password_url = form_page.redirect_chain[-1][0]
    done = client.post(set_password_url, {"new_password1": NEW_PASSWORD,
                                          "new_password2": NEW_PASSWORD})
    assert done["Location"] == reverse("password_reset_complete")
    assert client.login(username="grader", password=NEW_PASSWORD)
    # The link works once.
    client.logout()
    used = client.get(link, follow=True).content.decode()
    assert "This link no longer works" in used


def test_password_reset_for_an_unknown_address_sends_nothing_and_reveals_nothing(
        client, personas, mailoutbox):
    response = client.post(reverse("password_reset"), {"email": "nobody@example.test"})
    assert response["Location"] == reverse("password_reset_done")
    assert mailoutbox == []


def test_password_reset_rejects_a_mistyped_new_password_and_keeps_the_old(
        client, personas, mailoutbox):
    client.post(reverse("password_reset"), {"email": "grader@example.test"})
    form_page = client.get(_link_in(mailoutbox[0].body), follow=True)
    response = client.post(form_page.redirect_chain[-1][0], {
        "new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD + "x"})
    assert response.status_code == 200
    assert "The two password fields didn" in response.content.decode()
    assert User.objects.get(pk=personas.grader.pk).check_password(PASSWORD)


# --- invitations by mail -----------------------------------------------------------------


def test_an_invitation_to_an_address_is_mailed_with_its_link(client, personas, mailoutbox):
    personas.admin.first_name, personas.admin.last_name = "Ada", "Admin"
    personas.admin.save(update_fields=["first_name", "last_name"])
    client.force_login(personas.admin)
    response = client.post(reverse("invitation_create", args=[personas.team.pk]),
                           {"invitee": "dana@example.test", "role": Role.LEAD}, follow=True)
    invitation = Invitation.objects.get(invitee="dana@example.test")
    link = f"http://testserver/invitations/{invitation.token}/"
    assert len(mailoutbox) == 1
    mail = mailoutbox[0]
    assert mail.to == ["dana@example.test"]
    assert mail.subject == "You are invited to Acme on SearchTweak"
    assert "Ada Admin invited you to join the team Acme on SearchTweak as lead." in mail.body
    assert _link_in(mail.body) == link
    # The inviter still sees the link.
    page = response.content.decode()
    assert "e-mailed to them" in page and link in page


def test_an_invitation_to_a_username_is_not_mailed(client, personas, mailoutbox):
    client.force_login(personas.admin)
    client.post(reverse("invitation_create", args=[personas.team.pk]),
                {"invitee": "dana", "role": Role.GRADER})
    assert Invitation.objects.filter(invitee="dana").exists()
    assert mailoutbox == []


def test_a_failing_mail_server_keeps_the_invitation_and_shows_the_link(
        client, personas, settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT, settings.EMAIL_TIMEOUT = (
        "127.0.0.1", _closed_local_port(), 2)
    client.force_login(personas.admin)
    response = client.post(reverse("invitation_create", args=[personas.team.pk]),
                           {"invitee": "dana@example.test", "role": Role.GRADER}, follow=True)
    invitation = Invitation.objects.get()
    assert "Send them this link: " f"http://testserver/invitations/{invitation.token}/" in (
        response.content.decode())


def test_the_api_mails_an_invitation_and_says_so(personas, mailoutbox):
    api = APIClient()
    api.force_authenticate(personas.owner)
    response = api.post(f"/api/v1/teams/{personas.team.pk}/invitations/",
                        {"invitee": "erin@example.test", "role": "grader"}, format="json")
    assert response.status_code == 201
    assert response.json()["emailed"] is True
    assert [mail.to for mail in mailoutbox] == [["erin@example.test"]]
    assert _link_in(mailoutbox[0].body) == response.json()["link"]
