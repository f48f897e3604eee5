"""TEAM_CREATION: who may create a team, and so own endpoints and judges that send
requests from the deployment's network."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from searchtweak.models import Membership, Team

pytestmark = pytest.mark.django_db
REPO = Path(__file__).resolve().parents[2]

REASON = ("Only staff may create teams here (TEAM_CREATION=staff): ask an administrator "
          "for a team, or a team admin for an invitation.")


@pytest.fixture
def staff_only(settings):
    settings.TEAM_CREATION = "staff"


def test_by_default_any_signed_in_user_creates_a_team(client, personas):
    client.force_login(personas.grader)
    assert "Create a team" in client.get(reverse("home")).content.decode()
    response = client.post(reverse("team_create"), {"name": "Mine"})
    assert response.status_code == 302
    assert Membership.objects.get(team__name="Mine").user == personas.grader


def test_staff_only_refuses_the_page_with_the_reason_and_creates_nothing(
        client, personas, staff_only):
    client.force_login(personas.owner)
    before = Team.objects.count()

    assert client.get(reverse("team_create")).status_code == 403
    response = client.post(reverse("team_create"), {"name": "Mine"})

    assert response.status_code == 403
    assert REASON in response.content.decode()
    assert Team.objects.count() == before
    assert "Create a team" not in client.get(reverse("home")).content.decode()


def test_staff_only_refuses_the_api_with_the_reason(personas, staff_only):
    api = APIClient()
    api.force_authenticate(personas.outsider)
    before = Team.objects.count()

    response = api.post("/api/v1/teams/", {"name": "API team"}, format="json")

    assert response.status_code == 403
    assert response.json()["detail"] == REASON
    assert Team.objects.count() == before


def test_staff_only_lets_staff_create_teams(client, personas, staff_only):
    personas.grader.is_staff = True
    personas.grader.save(update_fields=["is_staff"])
    client.force_login(personas.grader)
    assert client.post(reverse("team_create"), {"name": "Staff's"}).status_code == 302
    api = APIClient()
    api.force_authenticate(personas.grader)
    assert api.post("/api/v1/teams/", {"name": "API team"}, format="json").status_code == 201


def test_an_unknown_team_creation_value_stops_start_up_naming_the_variable():
    env = {k: v for k, v in os.environ.items()
           if k not in {"DATABASE_URL", "CELERY_BROKER_URL", "DEBUG", "SECRET_KEY"}}
    result = subprocess.run([sys.executable, "manage.py", "check"], cwd=REPO,
                            env={**env, "TEAM_CREATION": "admins"},
                            capture_output=True, text=True, timeout=120)
    assert result.returncode != 0
    assert "TEAM_CREATION: 'admins' is not 'anyone' or 'staff'" in result.stderr
