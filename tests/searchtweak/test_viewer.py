"""What a viewer's pages leave out: people, configuration and every way to grade."""

import pytest
from django.urls import reverse

from evaluations.models import Keyword
from metrics.models import RegressionVerdict
from searchtweak.models import Role
from sharing.services import share_link_create
from tests.judgments.builders import evaluation_with_slots
from tests.searchtweak.factories import TeamFactory, member

pytestmark = pytest.mark.django_db

FETCH_ERROR = "Connection refused by http://search.internal.q7z/search"


@pytest.fixture
def team_setup():
    team = TeamFactory(name="Acme")
    lead = member(team, Role.LEAD, "lead-q7z")
    viewer = member(team, Role.VIEWER, "viewer-q7z")
    evaluation = evaluation_with_slots(team, keywords=1, positions=1)
    Keyword.objects.filter(evaluation=evaluation).update(fetch_error=FETCH_ERROR)
    # An ad-hoc gate's verdict names who called it.
    RegressionVerdict.objects.create(evaluation=evaluation, verdict="no_change",
                                     reasons=["No change."], source="gate", created_by=lead)
    return team, lead, viewer, evaluation


def _dashboard(client, user, evaluation) -> str:
    client.force_login(user)
    response = client.get(reverse("metrics:evaluation_dashboard", args=[evaluation.pk]))
    assert response.status_code == 200
    return response.content.decode()


def test_a_lead_sees_the_gate_caller_the_fetch_error_and_the_evaluation_link(client,
                                                                             team_setup):
    _, lead, _, evaluation = team_setup
    body = _dashboard(client, lead, evaluation)
    assert "(lead-q7z)" in body and FETCH_ERROR in body
    assert reverse("evaluations:evaluation_detail", args=[evaluation.pk]) in body


def test_a_viewer_sees_the_dashboard_without_them(client, team_setup):
    _, _, viewer, evaluation = team_setup
    body = _dashboard(client, viewer, evaluation)
    assert 'data-testid="metric-cards"' in body
    assert "(lead-q7z)" not in body and "search.internal.q7z" not in body
    keyword = Keyword.objects.get(evaluation=evaluation)
    for hidden in (reverse("evaluations:evaluation_detail", args=[evaluation.pk]),
                   reverse("evaluations:keyword_detail", args=[keyword.pk]),
                   reverse("judgments:feedback", args=[evaluation.pk])):
        assert f'href="{hidden}"' not in body, hidden
    assert "Share read-only" not in body


def test_a_viewers_nav_and_dashboard_lead_to_the_evaluations_dashboards(client, team_setup):
    _, _, viewer, evaluation = team_setup
    client.force_login(viewer)
    body = client.get(reverse("home")).content.decode()
    for hidden in ("judgments:grade", "evaluations:evaluation_list",
                   "evaluations:endpoint_list", "metrics:leaderboard"):
        assert f'href="{reverse(hidden)}"' not in body, hidden
    for shown in ("metrics:team_dashboard", "metrics:compare"):
        assert f'href="{reverse(shown)}"' in body, shown
    listing = client.get(reverse("metrics:team_dashboard")).content.decode()
    assert reverse("metrics:evaluation_dashboard", args=[evaluation.pk]) in listing
    assert "lead-q7z" not in listing


def test_a_viewer_is_offered_on_the_members_page_and_may_be_invited(client, team_setup):
    team, _, _, _ = team_setup
    owner = member(team, Role.OWNER, "owner-q7z")
    client.force_login(owner)
    body = client.get(reverse("team_detail", args=[team.pk])).content.decode()
    assert '<option value="viewer"' in body
    response = client.post(reverse("invitation_create", args=[team.pk]),
                           {"invitee": "pm@example.test", "role": "viewer"})
    assert response.status_code == 302
    assert team.invitations.get().role == Role.VIEWER


def test_a_shared_dashboard_leaves_out_what_a_viewer_does_not_see(client, team_setup):
    _, lead, _, evaluation = team_setup
    _, token = share_link_create(evaluation=evaluation, created_by=lead, days=1)
    body = client.get(reverse("sharing:shared", args=[token])).content.decode()
    assert "(lead-q7z)" not in body and "search.internal.q7z" not in body


def test_the_members_page_links_the_share_links_for_leads_only(client, team_setup):
    team, lead, _, _ = team_setup
    grader = member(team, Role.GRADER, "grader-q7z")
    link = f'href="{reverse("sharing:share_list", args=[team.pk])}"'
    client.force_login(lead)
    assert link in client.get(reverse("team_detail", args=[team.pk])).content.decode()
    client.force_login(grader)
    assert link not in client.get(reverse("team_detail", args=[team.pk])).content.decode()
