import pytest
from django.core.exceptions import ValidationError

from searchtweak import services
from searchtweak.models import Invitation, Membership, Role, Team
from tests.searchtweak.factories import UserFactory

pytestmark = pytest.mark.django_db


def test_team_create_makes_the_creator_owner_and_current_team():
    user = UserFactory()
    team = services.team_create(user=user, name="  Search  ")
    assert team.name == "Search"
    assert Membership.objects.get(team=team, user=user).role == Role.OWNER
    user.refresh_from_db()
    assert user.current_team == team


def test_team_create_rejects_a_blank_name():
    user = UserFactory()
    with pytest.raises(ValidationError) as caught:
        services.team_create(user=user, name="   ")
    assert caught.value.message_dict == {"name": ["A team needs a name."]}
    assert Team.objects.count() == 0


def test_invitation_by_username_is_accepted_by_that_user(personas):
    newcomer = UserFactory(username="newcomer")
    invitation = services.invitation_create(
        team=personas.team, invited_by=personas.admin, invitee="NewComer", role=Role.LEAD
    )
    membership = services.invitation_accept(invitation=invitation, user=newcomer)
    assert (membership.team, membership.role) == (personas.team, Role.LEAD)
    newcomer.refresh_from_db()
    assert newcomer.current_team == personas.team
    invitation.refresh_from_db()
    assert invitation.accepted_by == newcomer
    with pytest.raises(ValidationError, match="used or has expired"):
        services.invitation_accept(invitation=invitation, user=newcomer)


def test_invitation_cannot_be_accepted_by_someone_else(personas):
    invitation = services.invitation_create(
        team=personas.team, invited_by=personas.owner, invitee="someone", role=Role.GRADER
    )
    with pytest.raises(ValidationError, match="for someone else"):
        services.invitation_accept(invitation=invitation, user=personas.outsider)
    assert not Membership.objects.filter(team=personas.team, user=personas.outsider).exists()


def test_invitation_cannot_raise_above_the_inviter(personas):
    with pytest.raises(ValidationError) as caught:
        services.invitation_create(
            team=personas.team, invited_by=personas.admin, invitee="x", role=Role.OWNER
        )
    assert "role" in caught.value.message_dict
    assert Invitation.objects.count() == 0


def test_invitation_of_an_existing_member_is_refused(personas):
    with pytest.raises(ValidationError) as caught:
        services.invitation_create(
            team=personas.team, invited_by=personas.owner, invitee="grader@example.test",
            role=Role.GRADER,
        )
    assert caught.value.message_dict == {
        "invitee": ["grader@example.test is already a member of Acme."]
    }


def test_register_from_email_invitation_creates_the_account_and_joins(personas):
    invitation = services.invitation_create(
        team=personas.team, invited_by=personas.owner, invitee="ann@example.test",
        role=Role.GRADER,
    )
    user = services.user_register_from_invitation(
        invitation=invitation, username="ann", password="long-enough-pw"
    )
    assert user.email == "ann@example.test"
    assert user.check_password("long-enough-pw")
    assert Membership.objects.get(user=user).team == personas.team


def test_register_rejects_a_weak_password_and_creates_nothing(personas):
    invitation = services.invitation_create(
        team=personas.team, invited_by=personas.owner, invitee="bob@example.test",
        role=Role.GRADER,
    )
    with pytest.raises(ValidationError) as caught:
        services.user_register_from_invitation(invitation=invitation, username="bob",
                                               password="bob")
    assert "password" in caught.value.message_dict
    assert not Membership.objects.filter(user__username="bob").exists()
    invitation.refresh_from_db()
    assert invitation.accepted_at is None


def test_the_last_owner_cannot_be_demoted_or_removed(personas):
    owner_membership = personas.owner.memberships.get()
    with pytest.raises(ValidationError, match="at least one owner"):
        services.membership_change_role(
            membership=owner_membership, changed_by=personas.owner, role=Role.ADMIN
        )
    with pytest.raises(ValidationError, match="at least one owner"):
        services.membership_remove(membership=owner_membership, removed_by=personas.owner)
    owner_membership.refresh_from_db()
    assert owner_membership.role == Role.OWNER


def test_an_admin_cannot_change_an_owner(personas):
    owner_membership = personas.owner.memberships.get()
    with pytest.raises(ValidationError, match="above your own"):
        services.membership_change_role(
            membership=owner_membership, changed_by=personas.admin, role=Role.GRADER
        )


def test_removing_a_member_moves_their_current_team(personas):
    second = Team.objects.create(name="Second")
    Membership.objects.create(team=second, user=personas.grader, role=Role.GRADER)
    services.membership_remove(
        membership=personas.grader.memberships.get(team=personas.team), removed_by=personas.admin
    )
    personas.grader.refresh_from_db()
    assert personas.grader.current_team == second


def test_switching_to_a_foreign_team_is_refused(personas):
    with pytest.raises(ValidationError):
        services.user_switch_team(user=personas.grader, team=personas.other_team)
    personas.grader.refresh_from_db()
    assert personas.grader.current_team == personas.team
