import pytest
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from searchtweak.models import Membership, Role, Team, User

pytestmark = pytest.mark.django_db


def test_api_token_prints_a_working_key(personas, capsys):
    call_command("api_token", "lead")
    key = capsys.readouterr().out.strip()
    assert len(key) == 40
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert client.get("/api/v1/me/").json()["username"] == "lead"


def test_api_token_names_an_unknown_user():
    with pytest.raises(CommandError, match="username: no user named 'ghost'"):
        call_command("api_token", "ghost")


def test_seed_demo_is_safe_to_run_twice(capsys):
    call_command("seed_demo")
    call_command("seed_demo", "--password", "other-pass")
    out = capsys.readouterr().out
    assert "grader3 / other-pass" in out
    team = Team.objects.get(name="Demo")
    roles = dict(Membership.objects.filter(team=team).values_list("user__username", "role"))
    assert roles == {"lead": Role.LEAD, "grader1": Role.GRADER, "grader2": Role.GRADER,
                     "grader3": Role.GRADER}
    assert User.objects.get(username="lead").check_password("other-pass")
