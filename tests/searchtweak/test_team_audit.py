"""A team's audit trail page and its CSV, for the team's owners."""


import pytest

from audit.models import Action
from searchtweak.models import Membership, Role
from tests.audit.trails import two_day_trail
from tests.searchtweak.factories import TeamFactory, member

pytestmark = pytest.mark.django_db


@pytest.fixture
def trail(client):
    # The export's format starts with "=": the CSV must not hand a formula to a spreadsheet.
    team, owner, _grader = two_day_trail(export_format="=csv")
    client.force_login(owner)
    return team


def test_the_owner_sees_the_teams_events_newest_first(client, trail):
    response = client.get(f"/teams/{trail.pk}/audit/")
    assert response.status_code == 200
    events = response.context["events"]
    assert [event.action for event in events] == [Action.EXPORT_DOWNLOADED, Action.ROLE_CHANGED]
    assert "grader → lead" in response.content.decode()


def test_filters_narrow_by_action_and_days(client, trail):
    by_action = client.get(f"/teams/{trail.pk}/audit/", {"action": "role_changed"})
    assert [e.action for e in by_action.context["events"]] == [Action.ROLE_CHANGED]
    by_day = client.get(f"/teams/{trail.pk}/audit/", {"since": "2026-03-02",
                                                      "until": "2026-03-02"})
    assert [e.action for e in by_day.context["events"]] == [Action.EXPORT_DOWNLOADED]
    backwards = client.get(f"/teams/{trail.pk}/audit/", {"since": "2026-03-02",
                                                         "until": "2026-03-01"})
    assert backwards.status_code == 400


def test_the_csv_has_every_matching_event_with_formulas_defused(client, trail):
    response = client.get(f"/teams/{trail.pk}/audit/", {"format": "csv"})
    assert response["Content-Disposition"] == f'attachment; filename="audit-team-{trail.pk}.csv"'
    lines = b"".join(response.streaming_content).decode().splitlines()
    # The download is itself an event, the newest, so the file records its own export.
    assert lines.pop(1).split(",", 1)[1] == (
        f'owner,export_downloaded,audit_trail,{trail.pk},127.0.0.1,'
        '"{""format"": [null, ""csv""]}"')
    assert lines == [
        "at,actor,action,object_type,object_id,client_address,changes",
        '2026-03-02T09:00:00+00:00,owner,export_downloaded,evaluation,7,192.0.2.1,'
        '"{""format"": [null, ""=csv""]}"',
        f'2026-03-01T09:00:00+00:00,owner,role_changed,membership,'
        f'{Membership.objects.get(team=trail, role=Role.LEAD).pk},,'
        '"{""role"": [""grader"", ""lead""]}"',
    ]


def test_an_admin_is_refused_and_another_teams_owner_finds_nothing(client, trail):
    client.force_login(member(trail, Role.ADMIN, "admin"))
    assert client.get(f"/teams/{trail.pk}/audit/").status_code == 403
    client.force_login(member(TeamFactory(), Role.OWNER, "stranger"))
    assert client.get(f"/teams/{trail.pk}/audit/").status_code == 404
