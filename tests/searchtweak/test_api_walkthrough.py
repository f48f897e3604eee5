"""scripts/api_walkthrough.py, run as a separate process against the live server with the
demo engine as the evaluated endpoint: the documented API carries a whole evaluation."""

import subprocess
import sys
from pathlib import Path

import pytest

from evaluations import demo
from evaluations.models import Evaluation
from searchtweak.models import Role
from searchtweak.services import api_token_create
from tests.recompute_state import state_of
from tests.searchtweak.factories import TeamFactory, member

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "api_walkthrough.py"


@pytest.mark.django_db(transaction=True)
def test_the_walkthrough_runs_green_against_the_live_server(live_server):
    demo.catalog_ensure()
    team = TeamFactory(name="Walk")
    admin = member(team, Role.ADMIN, "walker")
    _, key = api_token_create(user=admin, name="walkthrough")
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--base-url", live_server.url, "--token", key,
         "--timeout", "60"],
        capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    evaluation = Evaluation.objects.get(team=team)
    assert state_of(evaluation).progress == 100
    assert all(config.value is not None
               for config in evaluation.metric_configs.with_stored_mean())
    assert f"Evaluation {evaluation.pk}:" in done.stdout


@pytest.mark.django_db(transaction=True)
def test_the_walkthrough_fails_with_an_invalid_token(live_server):
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--base-url", live_server.url, "--token", "nope"],
        capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 1
    assert "GET /me/ with the token: expected 200, got 401" in done.stderr
