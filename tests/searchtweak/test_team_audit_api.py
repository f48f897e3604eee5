"""A team's audit trail through the API: owners only, filtered, paginated."""

from datetime import UTC, datetime

import pytest
import time_machine
from rest_framework.test import APIClient

from audit.models import Action, AuditEvent
from audit.services import audit_record
from searchtweak.models import Role
from tests.audit.trails import two_day_trail
from tests.searchtweak.factories import TeamFactory, member

pytestmark = pytest.mark.django_db


@pytest.fixture
def trail():
    team, owner, grader = two_day_trail()
    with time_machine.travel(datetime(2026, 3, 3, 9, 0, tzinfo=UTC), tick=False):
        audit_record(action=Action.EXPORT_DOWNLOADED, actor=grader, team_id=team.pk,
                     object_type="query_set", object_id=3)
    client = APIClient()
    client.force_authenticate(owner)
    return team, client


def url(team) -> str:
    return f"/api/v1/teams/{team.pk}/audit/"


def test_the_owner_reads_the_teams_events_newest_first(trail):
    team, client = trail
    response = client.get(url(team))
    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 3
    assert [(e["action"], e["actor"], e["object_type"]) for e in body["results"]] == [
        ("export_downloaded", "grader", "query_set"),
        ("export_downloaded", "owner", "evaluation"),
        ("role_changed", "owner", "membership")]
    export = body["results"][1]
    assert export == {
        "id": export["id"], "at": "2026-03-02T09:00:00Z",
        "actor_id": AuditEvent.objects.get(pk=export["id"]).actor_id, "actor": "owner",
        "action": "export_downloaded", "action_label": "Downloaded an export",
        "object_type": "evaluation", "object_id": "7", "client_address": "192.0.2.1",
        "changes": {"format": [None, "csv"]}}
    assert body["results"][2]["changes"] == {"role": ["grader", "lead"]}


@pytest.mark.parametrize(("query", "expected"), [
    ({"action": "role_changed"}, ["membership"]),
    ({"actor": "grader"}, ["query_set"]),
    ({"object_type": "evaluation"}, ["evaluation"]),
    ({"since": "2026-03-02T09:00:00Z"}, ["query_set", "evaluation"]),
    ({"until": "2026-03-02T09:00:00Z"}, ["evaluation", "membership"]),
    ({"since": "2026-03-01T10:00:00Z", "until": "2026-03-02T10:00:00Z"}, ["evaluation"]),
    ({"actor": "owner", "action": "export_downloaded"}, ["evaluation"]),
])
def test_filters_narrow_the_events(trail, query, expected):
    team, client = trail
    response = client.get(url(team), query)
    assert [e["object_type"] for e in response.json()["results"]] == expected


def test_pages_follow_one_another(trail):
    team, client = trail
    first = client.get(url(team), {"page_size": 2}).json()
    assert [e["object_type"] for e in first["results"]] == ["query_set", "evaluation"]
    second = client.get(first["next"]).json()
    assert [e["object_type"] for e in second["results"]] == ["membership"]
    assert second["next"] is None


@pytest.mark.parametrize("query", [{"action": "evaluation_renamed"},
                                   {"since": "yesterday"},
                                   {"since": "2026-03-02T00:00:00Z",
                                    "until": "2026-03-01T00:00:00Z"}])
def test_a_bad_filter_is_a_400_naming_it(trail, query):
    team, client = trail
    response = client.get(url(team), query)
    assert response.status_code == 400
    assert set(query) & set(response.json()) or "until" in str(response.json())


def test_an_admin_is_refused_and_another_teams_owner_finds_nothing(trail):
    team, client = trail
    client.force_authenticate(member(team, Role.ADMIN, "admin"))
    assert client.get(url(team)).status_code == 403
    client.force_authenticate(member(TeamFactory(), Role.OWNER, "stranger"))
    assert client.get(url(team)).status_code == 404
