"""Every access function, tried by an owner, a grader of the team and an outsider."""

import re

import pytest
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404

from searchtweak import access
from searchtweak.models import Role
from searchtweak.selectors import (
    api_token_get_for_user,
    invitation_get_for_user,
    membership_get_for_user,
    team_get_for_user,
)
from searchtweak.services import api_token_create, invitation_create
from tests.searchtweak.factories import MembershipFactory, TeamFactory, UserFactory, member

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
    # A member below the role is told why (403); only the outsider gets the 404.
    for user in (personas.lead, personas.grader):
        with pytest.raises(PermissionDenied, match=r"^This needs the admin role\.$"):
            team_get_for_user(user=user, team_id=team_id, minimum_role=Role.ADMIN)
    with pytest.raises(Http404):
        team_get_for_user(user=personas.outsider, team_id=team_id, minimum_role=Role.ADMIN)


def test_membership_access(personas):
    grader_membership = personas.grader.memberships.get()
    assert membership_get_for_user(
        user=personas.owner, membership_id=grader_membership.pk, minimum_role=Role.ADMIN
    ) == grader_membership
    assert membership_get_for_user(
        user=personas.grader, membership_id=grader_membership.pk
    ) == grader_membership
    with pytest.raises(PermissionDenied, match=r"^This needs the admin role\.$"):
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


# --- searchtweak.access: the one rule, every role against every minimum role -------------

RANKED = [Role.GRADER, Role.LEAD, Role.ADMIN, Role.OWNER]
PERSONAS = ["owner", "admin", "lead", "grader"]
REASONS = {Role.GRADER: "This needs the grader role.", Role.LEAD: "This needs the lead role.",
           Role.ADMIN: "This needs the admin role.", Role.OWNER: "This needs the owner role."}


def _held(persona: str) -> str:
    return {"owner": Role.OWNER, "admin": Role.ADMIN, "lead": Role.LEAD,
            "grader": Role.GRADER}[persona]


def _allowed(persona: str, minimum_role: str) -> bool:
    return RANKED.index(_held(persona)) >= RANKED.index(minimum_role)


@pytest.mark.parametrize("minimum_role", RANKED)
@pytest.mark.parametrize("persona", PERSONAS)
def test_team_access_lets_a_member_with_the_role_in_and_names_the_role_to_one_without(
        personas, persona, minimum_role):
    user = getattr(personas, persona)
    team_id = personas.team.pk
    if _allowed(persona, minimum_role):
        found = access.team_access(user=user, team_id=team_id, minimum_role=minimum_role)
        assert (found.user, found.team, found.role) == (user, personas.team, _held(persona))
        assert access.can(user=user, team_id=team_id, minimum_role=minimum_role) is True
    else:
        with pytest.raises(PermissionDenied) as caught:
            access.team_access(user=user, team_id=team_id, minimum_role=minimum_role)
        assert str(caught.value) == REASONS[minimum_role]
        assert access.can(user=user, team_id=team_id, minimum_role=minimum_role) is False


@pytest.mark.parametrize("minimum_role", RANKED)
def test_team_access_is_404_for_an_outsider_a_visitor_and_a_missing_team(personas,
                                                                         minimum_role):
    # The outsider owns another team: their rank there opens nothing here.
    for user, team_id in ((personas.outsider, personas.team.pk),
                          (AnonymousUser(), personas.team.pk),
                          (personas.owner, 999_999), (personas.owner, None)):
        with pytest.raises(Http404) as caught:
            access.team_access(user=user, team_id=team_id, minimum_role=minimum_role)
        assert str(caught.value) == "No such team."
        assert access.can(user=user, team_id=team_id, minimum_role=minimum_role) is False


def test_team_access_names_what_was_looked_for_and_may_give_its_own_reason(personas):
    with pytest.raises(Http404, match=r"^No such evaluation\.$"):
        access.team_access(user=personas.outsider, team_id=personas.team.pk, what="evaluation")
    with pytest.raises(PermissionDenied, match=r"^Scales need an admin\.$"):
        access.team_access(user=personas.lead, team_id=personas.team.pk,
                           minimum_role=Role.ADMIN, reason="Scales need an admin.")


@pytest.mark.parametrize("minimum_role", RANKED)
@pytest.mark.parametrize("role", [*RANKED, None])
def test_check_membership_row_applies_the_same_rule_to_a_role_read_by_sql(role, minimum_role):
    if role is None:
        with pytest.raises(Http404, match=r"^No such snapshot\.$"):
            access.check_membership_row(role, minimum_role, what="snapshot")
    elif RANKED.index(role) >= RANKED.index(minimum_role):
        assert access.check_membership_row(role, minimum_role) is None
    else:
        with pytest.raises(PermissionDenied) as caught:
            access.check_membership_row(role, minimum_role)
        assert str(caught.value) == REASONS[minimum_role]


@pytest.mark.parametrize("persona", PERSONAS)
def test_current_team_access_works_on_the_current_team_with_the_same_rule(personas, persona):
    user = getattr(personas, persona)
    for minimum_role in RANKED:
        if _allowed(persona, minimum_role):
            found = access.current_team_access(user=user, minimum_role=minimum_role)
            assert (found.user, found.team) == (user, personas.team)
        else:
            with pytest.raises(PermissionDenied, match=re.escape(REASONS[minimum_role])):
                access.current_team_access(user=user, minimum_role=minimum_role)


def test_current_team_access_is_404_for_a_user_in_no_team(db):
    loner = UserFactory(username="loner")
    with pytest.raises(Http404, match=r"^No such team\.$"):
        access.current_team_access(user=loner)
    with pytest.raises(Http404):
        access.current_team_access(user=AnonymousUser())


def test_the_current_team_follows_the_users_choice_and_falls_back_to_a_team_of_theirs(
        personas):
    both = member(personas.other_team, Role.GRADER, "both")
    MembershipFactory(team=personas.team, user=both, role=Role.LEAD)
    assert access.current_team_access(user=both).team == personas.other_team
    with pytest.raises(PermissionDenied, match=r"^This needs the lead role\.$"):
        access.current_team_access(user=both, minimum_role=Role.LEAD)
    both.current_team = personas.team
    assert access.current_team_access(user=both, minimum_role=Role.LEAD).team == personas.team
    # A current team the user has left is not theirs: their team of the lowest id stands in.
    both.current_team = TeamFactory(name="Left")
    assert access.current_team_access(user=both).team == personas.team


def test_current_team_can_is_true_only_in_the_current_team(personas):
    both = member(personas.other_team, Role.GRADER, "both")
    MembershipFactory(team=personas.team, user=both, role=Role.LEAD)
    # A lead of Acme working in Other sees no lead buttons on Acme's pages, though
    # team_access would let the action itself through.
    assert access.current_team_can(user=both, team_id=personas.team.pk,
                                   minimum_role=Role.LEAD) is False
    assert access.can(user=both, team_id=personas.team.pk, minimum_role=Role.LEAD) is True
    both.current_team = personas.team
    assert access.current_team_can(user=both, team_id=personas.team.pk,
                                   minimum_role=Role.LEAD) is True
    assert access.current_team_can(user=both, team_id=personas.team.pk,
                                   minimum_role=Role.ADMIN) is False
    assert access.current_team_can(user=personas.outsider, team_id=personas.team.pk,
                                   minimum_role=Role.GRADER) is False


def test_membership_allows_checks_a_loaded_membership_without_a_query(
        personas, django_assert_num_queries):
    owner = personas.owner.memberships.select_related("team").get()
    grader = personas.grader.memberships.get()
    with django_assert_num_queries(0):
        assert access.membership_allows(owner, minimum_role=Role.ADMIN) is True
        assert access.membership_allows(owner, minimum_role=Role.ADMIN,
                                        team_id=personas.team.pk) is True
        assert access.membership_allows(owner, minimum_role=Role.GRADER,
                                        team_id=personas.other_team.pk) is False
        assert access.membership_allows(grader, minimum_role=Role.LEAD) is False
        assert access.membership_allows(None, minimum_role=Role.GRADER) is False


def test_team_or_current_access_takes_the_named_team_or_else_the_current_one(personas):
    assert access.team_or_current_access(
        user=personas.admin, team_id=None, minimum_role=Role.ADMIN).team == personas.team
    assert access.team_or_current_access(
        user=personas.outsider, team_id=personas.other_team.pk,
        minimum_role=Role.OWNER).team == personas.other_team
    with pytest.raises(Http404):
        access.team_or_current_access(user=personas.outsider, team_id=personas.team.pk,
                                      minimum_role=Role.GRADER)
    with pytest.raises(PermissionDenied, match=r"^This needs the admin role\.$"):
        access.team_or_current_access(user=personas.lead, team_id=None,
                                      minimum_role=Role.ADMIN)
    with pytest.raises(ValidationError) as caught:
        access.team_or_current_access(user=UserFactory(username="loner"), team_id=None,
                                      minimum_role=Role.GRADER)
    assert caught.value.message_dict == {"team": ["You are not in a team."]}


def test_visible_team_ids_are_every_team_of_the_user_and_none_for_a_visitor(personas):
    MembershipFactory(team=personas.other_team, user=personas.grader, role=Role.GRADER)
    assert sorted(access.visible_team_ids(user=personas.grader)) == sorted(
        [personas.team.pk, personas.other_team.pk])
    assert access.visible_team_ids(user=personas.outsider) == [personas.other_team.pk]
    assert access.visible_team_ids(user=AnonymousUser()) == []
    assert access.visible_team_ids(user=UserFactory(username="loner")) == []
