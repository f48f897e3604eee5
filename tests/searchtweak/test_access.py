"""Every access function, tried by an owner, a grader of the team and an outsider."""

import pytest
from django.http import Http404

from searchtweak.models import Role
from searchtweak.selectors import (
    api_token_get_for_user,
    invitation_get_for_user,
    membership_get_for_user,
    team_get_for_user,
)
from searchtweak.services import api_token_create, invitation_create

pytestmark = pytest.mark.django_db


def test_team_access_by_role(personas):
    team_id = personas.team.pk
    assert team_get_for_user(user=personas.owner, team_id=team_id) == personas.team
    assert team_get_for_user(user=personas.grader, team_id=team_id) == personas.team
    with pytest.raises(Http404):
        team_get_for_user(user=personas.outsider, team_id=team_id)
    with pytest.raises(Http404):
        team_get_for_user(user=personas.owner, team_id=999_999)


def test_team_write_access_needs_the_role(personas):
    team_id = personas.team.pk
    assert team_get_for_user(user=personas.owner, team_id=team_id, minimum_role=Role.ADMIN)
    assert team_get_for_user(user=personas.admin, team_id=team_id, minimum_role=Role.ADMIN)
    for user in (personas.lead, personas.grader, personas.outsider):
        with pytest.raises(Http404):
            team_get_for_user(user=user, team_id=team_id, minimum_role=Role.ADMIN)


def test_membership_access(personas):
    grader_membership = personas.grader.memberships.get()
    assert membership_get_for_user(
        user=personas.owner, membership_id=grader_membership.pk, minimum_role=Role.ADMIN
    ) == grader_membership
    assert membership_get_for_user(
        user=personas.grader, membership_id=grader_membership.pk
    ) == grader_membership
    with pytest.raises(Http404):
        membership_get_for_user(user=personas.grader, membership_id=grader_membership.pk,
                                minimum_role=Role.ADMIN)
    with pytest.raises(Http404):
        membership_get_for_user(user=personas.outsider, membership_id=grader_membership.pk)
    with pytest.raises(Http404):
        membership_get_for_user(user=personas.owner, membership_id=999_999)


def test_invitation_access_is_for_its_invitee_only(personas):
    invitation = invitation_create(
        team=personas.team, invited_by=personas.owner, invitee="newbie@example.test",
        role=Role.GRADER,
    )
    from django.contrib.auth.models import AnonymousUser

    from tests.searchtweak.factories import UserFactory

    newbie = UserFactory(username="newbie", email="Newbie@Example.test")
    assert invitation_get_for_user(user=newbie, token=invitation.token) == invitation
    # Someone holding the link but not logged in sees it (to log in or register).
    assert invitation_get_for_user(user=AnonymousUser(), token=invitation.token) == invitation
    for user in (personas.owner, personas.grader, personas.outsider):
        with pytest.raises(Http404):
            invitation_get_for_user(user=user, token=invitation.token)
    with pytest.raises(Http404):
        invitation_get_for_user(user=newbie, token="no-such-token")


def test_api_token_access_is_for_its_owner_only(personas):
    token, _ = api_token_create(user=personas.grader, name="laptop")
    assert api_token_get_for_user(user=personas.grader, token_id=token.pk) == token
    for user in (personas.owner, personas.outsider):
        with pytest.raises(Http404):
            api_token_get_for_user(user=user, token_id=token.pk)
