"""LOCAL_LOGIN=false: passwords only for superusers (searchtweak.local_login)."""

import subprocess
import sys
from pathlib import Path

import pytest

from audit.models import Action, AuditEvent
from tests.searchtweak.factories import PASSWORD, UserFactory

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def passwords_off(idp, settings):
    settings.LOCAL_LOGIN = False


def test_a_members_right_password_is_refused(client, passwords_off):
    UserFactory(username="jane")
    response = client.post("/login/", {"username": "jane", "password": PASSWORD})
    assert response.status_code == 200
    assert "_auth_user_id" not in client.session
    failed = AuditEvent.objects.get(action=Action.SIGN_IN_FAILED)
    assert failed.actor_label == "jane"


def test_a_superusers_password_still_works(client, passwords_off):
    root = UserFactory(username="root", is_superuser=True, is_staff=True)
    response = client.post("/login/?local=1", {"username": "root", "password": PASSWORD})
    assert response.status_code == 302
    assert client.session["_auth_user_id"] == str(root.pk)


def test_the_login_page_shows_only_the_providers_button(client, passwords_off):
    page = client.get("/login/").content.decode()
    assert "Sign in with Fake IdP" in page
    assert 'name="password"' not in page
    assert "Forgot your password?" not in page
    # The superusers' way in, not linked.
    assert 'name="password"' in client.get("/login/?local=1").content.decode()


def test_passwords_work_while_local_login_is_on(client, idp):
    jane = UserFactory(username="jane")
    client.post("/login/", {"username": "jane", "password": PASSWORD})
    assert client.session["_auth_user_id"] == str(jane.pk)


def test_local_login_off_without_a_provider_stops_start_up():
    result = subprocess.run(
        [sys.executable, "-c", "from django.conf import settings; settings.INSTALLED_APPS"],
        capture_output=True, text=True, timeout=60,
        env={"PATH": "/usr/bin:/bin", "DJANGO_SETTINGS_MODULE": "searchtweak.settings",
             "LOCAL_LOGIN": "false", "PYTHONPATH": str(ROOT)})
    assert result.returncode != 0
    assert "LOCAL_LOGIN: false needs single sign-on" in result.stderr


def test_an_invitation_to_an_address_sends_a_new_person_to_the_provider(client, personas,
                                                                         passwords_off):
    from searchtweak.models import Invitation, Role

    invitation = Invitation.objects.create(team=personas.team, invitee="eve@example.test",
                                           role=Role.GRADER, invited_by=personas.owner)
    url = f"/invitations/{invitation.token}/"
    page = client.get(url).content.decode()
    assert "Create your account" not in page
    assert f'href="/login/?next={url}"' in page
    response = client.post(url, {"username": "eve", "password": "long-enough-pw"})
    assert response.status_code == 400
    assert not type(personas.owner).objects.filter(username="eve").exists()
