"""Invitations: mailed when they name an e-mail address, printed on the console without
EMAIL_URL (and the team page says so), and a warning for a username no account has."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.core import mail
from django.urls import reverse
from rest_framework.test import APIClient

from searchtweak.models import Invitation, Role

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
CONSOLE = "django.core.mail.backends.console.EmailBackend"
UNKNOWN_DANA = ("No account is named 'dana': check the spelling. The link works only for a "
                "user of that name; to invite someone without an account, give their e-mail "
                "address.")


def invite(client, personas, invitee: str):
    client.force_login(personas.admin)
    return client.post(reverse("invitation_create", args=[personas.team.pk]),
                       {"invitee": invitee, "role": Role.GRADER}, follow=True)


def test_without_email_url_the_settings_print_mail_on_the_console():
    env = {key: value for key, value in os.environ.items() if key != "EMAIL_URL"}
    env["DJANGO_SETTINGS_MODULE"] = "searchtweak.settings"
    done = subprocess.run(
        [sys.executable, "-c", "import django; django.setup(); from django.conf import "
                               "settings; print(settings.EMAIL_BACKEND)"],
        cwd=ROOT, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == CONSOLE


def test_an_invitation_is_in_the_outbox_with_its_link(client, personas):
    response = invite(client, personas, "dana@example.test")
    invitation = Invitation.objects.get()
    link = f"http://testserver/invitations/{invitation.token}/"
    [sent] = mail.outbox
    assert sent.to == ["dana@example.test"]
    assert re.findall(r"https?://\S+", sent.body) == [link]
    page = response.content.decode()
    assert f"Invitation for dana@example.test created and e-mailed to them. Their link: " \
           f"{link}" in page
    assert "No account is named" not in page


def test_with_the_console_backend_the_mail_is_printed_and_the_pages_say_so(
        client, personas, settings, capsys):
    settings.EMAIL_BACKEND = CONSOLE
    response = invite(client, personas, "dana@example.test")
    invitation = Invitation.objects.get()
    link = f"http://testserver/invitations/{invitation.token}/"
    printed = capsys.readouterr().out
    assert "To: dana@example.test" in printed
    assert "Subject: You are invited to Acme on SearchTweak" in printed
    assert link in printed
    page = response.content.decode()
    assert ("Invitation for dana@example.test created; with no mail server configured "
            "(EMAIL_URL) its e-mail was printed on the server&#x27;s console. Send them this "
            f"link: {link}") in page
    assert "this server has no mail server configured (<code>EMAIL_URL</code>): the mail " \
           "is printed on its console." in page


def test_the_team_page_promises_mail_when_a_mail_server_is_configured(client, personas):
    client.force_login(personas.admin)
    page = client.get(reverse("team_detail", args=[personas.team.pk])).content.decode()
    assert "Someone invited by e-mail address gets the link by mail; it is also shown after " \
           "inviting" in page
    assert "No e-mail is sent" not in page and "printed on its console" not in page


def test_an_invitation_to_an_unknown_username_warns_but_is_kept(client, personas):
    response = invite(client, personas, "dana")
    page = response.content.decode()
    assert UNKNOWN_DANA.replace("'", "&#x27;") in page
    assert Invitation.objects.filter(invitee="dana").exists()
    assert mail.outbox == []


def test_an_invitation_to_an_existing_username_does_not_warn(client, personas):
    page = invite(client, personas, "OUTSIDER").content.decode()
    assert "No account is named" not in page
    assert Invitation.objects.filter(invitee="OUTSIDER").exists()


def test_the_api_carries_the_warning(personas):
    api = APIClient()
    api.force_authenticate(personas.owner)
    url = f"/api/v1/teams/{personas.team.pk}/invitations/"
    body = api.post(url, {"invitee": "dana", "role": "grader"}, format="json").json()
    assert (body["emailed"], body["warning"]) == (False, UNKNOWN_DANA)
    body = api.post(url, {"invitee": "outsider", "role": "grader"}, format="json").json()
    assert body["warning"] is None
