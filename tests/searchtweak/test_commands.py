import pytest
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

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

