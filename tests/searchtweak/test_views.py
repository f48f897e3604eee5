import pytest
from django.urls import reverse

from searchtweak.models import Invitation, Membership, Role, Team
from tests.searchtweak.factories import PASSWORD

pytestmark = pytest.mark.django_db


def test_home_redirects_anonymous_users_to_login(client):
    response = client.get(reverse("home"))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_login_page_logs_in_and_shows_the_role(client, personas):
    response = client.post(reverse("login"), {"username": "lead", "password": PASSWORD},
                           follow=True)
    page = response.content.decode()
    assert response.redirect_chain[-1][0] == reverse("home")
    assert "In Acme you are lead" in page
    assert "create evaluations" in page
    assert "<strong>Administer</strong>" not in page


def test_login_with_a_wrong_password_shows_an_error(client, personas):
    response = client.post(reverse("login"), {"username": "lead", "password": "nope"})
    assert response.status_code == 200
    assert "Please enter a correct username and password" in response.content.decode()


def test_home_tells_an_admin_what_they_can_administer(client, personas):
    client.force_login(personas.admin)
    page = client.get(reverse("home")).content.decode()
    assert "<strong>Administer</strong>: configure" in page
    for url in ("/endpoints/", "/models/", "/scales/"):
        assert f'href="{url}"' in page


@pytest.mark.parametrize("persona,leads,administers", [
    ("owner", True, True), ("admin", True, True), ("lead", True, False),
    ("grader", False, False)])
def test_home_and_nav_offer_what_the_role_allows(client, personas, persona, leads,
                                                 administers):
    client.force_login(getattr(personas, persona))
    page = client.get(reverse("home")).content.decode()
    assert ('data-testid="new-evaluation"' in page) is leads
    assert ("<strong>Administer</strong>: configure" in page) is administers
    assert ('>Scales</a>' in page) is administers  # the top bar's link


def test_home_rejects_post(client, personas):
    client.force_login(personas.grader)
    assert client.post(reverse("home")).status_code == 405


def test_team_create_page_creates_and_switches(client, personas):
    client.force_login(personas.grader)
    response = client.post(reverse("team_create"), {"name": "Mine"})
    team = Team.objects.get(name="Mine")
    assert response["Location"] == reverse("team_detail", args=[team.pk])
    personas.grader.refresh_from_db()
    assert personas.grader.current_team == team


def test_team_create_page_rejects_blank_name_and_writes_nothing(client, personas):
    client.force_login(personas.grader)
    before = Team.objects.count()
    response = client.post(reverse("team_create"), {"name": ""})
    assert response.status_code == 200
    assert "This field is required" in response.content.decode()
    assert Team.objects.count() == before


def test_team_page_is_404_for_outsiders(client, personas):
    client.force_login(personas.outsider)
    assert client.get(reverse("team_detail", args=[personas.team.pk])).status_code == 404


def test_team_page_lists_members_and_hides_invite_form_from_graders(client, personas):
    client.force_login(personas.grader)
    page = client.get(reverse("team_detail", args=[personas.team.pk])).content.decode()
    for username in ("owner", "admin", "lead", "grader"):
        assert f"<td>{username}</td>" in page
    assert "Invite someone" not in page


def test_admin_invites_and_sees_the_link(client, personas):
    client.force_login(personas.admin)
    response = client.post(
        reverse("invitation_create", args=[personas.team.pk]),
        {"invitee": "dana@example.test", "role": Role.GRADER}, follow=True,
    )
    invitation = Invitation.objects.get(invitee="dana@example.test")
    page = response.content.decode()
    assert f"/invitations/{invitation.token}/" in page


def test_grader_cannot_invite(client, personas):
    client.force_login(personas.grader)
    response = client.post(reverse("invitation_create", args=[personas.team.pk]),
                           {"invitee": "x", "role": Role.GRADER})
    # A member below the role is told why (403), as everywhere; only outsiders get a 404.
    assert response.status_code == 403
    assert "This needs the admin role." in response.content.decode()
    assert not Invitation.objects.exists()


def test_invite_with_a_bad_role_shows_the_form_error(client, personas):
    client.force_login(personas.admin)
    response = client.post(reverse("invitation_create", args=[personas.team.pk]),
                           {"invitee": "x", "role": "boss"})
    assert response.status_code == 400
    assert "Select a valid choice" in response.content.decode()
    assert not Invitation.objects.exists()


def test_new_person_registers_through_an_email_invitation(client, personas):
    invitation = Invitation.objects.create(team=personas.team, invitee="eve@example.test",
                                           role=Role.GRADER, invited_by=personas.owner)
    url = reverse("invitation_detail", args=[invitation.token])
    assert "Create your account for eve@example.test" in client.get(url).content.decode()
    response = client.post(url, {"username": "eve", "password": "long-enough-pw"})
    assert response["Location"] == reverse("home")
    assert Membership.objects.get(user__username="eve").team == personas.team
    assert client.get(reverse("home")).status_code == 200  # logged in now


def test_existing_user_accepts_an_invitation(client, personas):
    invitation = Invitation.objects.create(team=personas.team, invitee="outsider",
                                           role=Role.LEAD, invited_by=personas.owner)
    client.force_login(personas.outsider)
    client.post(reverse("invitation_detail", args=[invitation.token]))
    assert Membership.objects.get(user=personas.outsider, team=personas.team).role == Role.LEAD


def test_someone_else_cannot_open_an_invitation(client, personas):
    invitation = Invitation.objects.create(team=personas.team, invitee="somebody",
                                           role=Role.OWNER, invited_by=personas.owner)
    client.force_login(personas.outsider)
    url = reverse("invitation_detail", args=[invitation.token])
    assert client.get(url).status_code == 404
    assert client.post(url).status_code == 404
    assert not Membership.objects.filter(user=personas.outsider, team=personas.team).exists()


def test_switching_team_through_the_switcher(client, personas):
    Membership.objects.create(team=personas.other_team, user=personas.grader, role=Role.GRADER)
    client.force_login(personas.grader)
    page = client.get(reverse("home")).content.decode()
    assert 'id="team-switch"' in page
    response = client.post(reverse("team_switch"),
                           {"team": personas.other_team.pk, "next": "/teams/new/"})
    assert response["Location"] == "/teams/new/"
    personas.grader.refresh_from_db()
    assert personas.grader.current_team == personas.other_team


def test_switching_to_a_foreign_team_is_404(client, personas):
    client.force_login(personas.grader)
    response = client.post(reverse("team_switch"), {"team": personas.other_team.pk})
    assert response.status_code == 404
    personas.grader.refresh_from_db()
    assert personas.grader.current_team == personas.team


def test_admin_changes_a_role_but_not_the_last_owner(client, personas):
    client.force_login(personas.owner)
    grader_membership = personas.grader.memberships.get()
    client.post(reverse("membership_change_role", args=[grader_membership.pk]), {"role": "lead"})
    grader_membership.refresh_from_db()
    assert grader_membership.role == Role.LEAD
    owner_membership = personas.owner.memberships.get()
    response = client.post(reverse("membership_change_role", args=[owner_membership.pk]),
                           {"role": "grader"}, follow=True)
    assert "A team needs at least one owner" in response.content.decode()
    owner_membership.refresh_from_db()
    assert owner_membership.role == Role.OWNER


def test_grader_cannot_remove_others_but_can_leave(client, personas):
    client.force_login(personas.grader)
    lead_membership = personas.lead.memberships.get()
    assert client.post(reverse("membership_remove", args=[lead_membership.pk])).status_code == 403
    assert Membership.objects.filter(pk=lead_membership.pk).exists()
    own = personas.grader.memberships.get()
    assert client.post(reverse("membership_remove", args=[own.pk]))["Location"] == reverse("home")
    assert not Membership.objects.filter(pk=own.pk).exists()
