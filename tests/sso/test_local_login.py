"""LOCAL_LOGIN=false: passwords only for superusers (searchtweak.local_login)."""

import pytest
from django.core.exceptions import ImproperlyConfigured

from audit.models import Action, AuditEvent
from searchtweak.envvars import TEAM_ROLES, GroupRole, env_list, group_roles_parse
from searchtweak.models import Role
from sso.services import roles_for_groups
from tests.searchtweak.factories import PASSWORD, UserFactory

pytestmark = pytest.mark.django_db


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


def test_local_login_off_without_a_provider_stops_start_up(tmp_path):
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-c", "import django; from django.conf import settings; "
         "settings.INSTALLED_APPS"], capture_output=True, text=True, timeout=60,
        env={"PATH": "/usr/bin:/bin", "DJANGO_SETTINGS_MODULE": "searchtweak.settings",
             "LOCAL_LOGIN": "false", "PYTHONPATH": str(__import__("pathlib").Path(
                 __file__).resolve().parents[2])})
    assert result.returncode != 0
    assert "LOCAL_LOGIN: false needs single sign-on" in result.stderr


def test_group_roles_are_read_from_the_setting():
    mapping = group_roles_parse(env_list("X", [], environ={
        "X": "search leads=3:lead, a=b=4:owner"}))
    assert mapping == (GroupRole("search leads", 3, "lead"), GroupRole("a=b", 4, "owner"))


@pytest.mark.parametrize("item", ["leads=3", "leads=x:lead", "=3:lead", "leads=3:boss",
                                  "leads:3=lead"])
def test_a_malformed_group_role_stops_start_up(item):
    with pytest.raises(ImproperlyConfigured, match="OIDC_GROUP_ROLES"):
        group_roles_parse([item])


def test_the_highest_role_of_a_users_groups_wins():
    mapping = group_roles_parse(["g=1:grader", "a=1:admin", "l=1:lead", "l=2:lead"])
    assert roles_for_groups(mapping, {"g", "l"}) == {1: "lead", 2: "lead"}
    assert roles_for_groups(mapping, {"g", "a", "l"}) == {1: "admin", 2: "lead"}
    assert roles_for_groups(mapping, {"x"}) == {}


def test_the_mappings_roles_are_the_teams_roles_highest_first():
    from searchtweak.models import ROLE_RANK

    assert tuple(sorted(Role.values, key=ROLE_RANK.__getitem__, reverse=True)) == TEAM_ROLES
