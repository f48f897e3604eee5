"""OIDC_GROUP_ROLES: read (searchtweak.envvars) and applied to a user's groups (sso.services)."""

import pytest
from django.core.exceptions import ImproperlyConfigured

from searchtweak.envvars import TEAM_ROLES, GroupRole, env_list, group_roles_parse
from searchtweak.models import ROLE_RANK, Role
from sso.services import roles_for_groups


def test_group_roles_are_read_from_the_setting():
    mapping = group_roles_parse(env_list("X", [], environ={
        "X": "search leads=3:lead, a=b=4:owner"}))
    assert mapping == (GroupRole("search leads", 3, "lead"), GroupRole("a=b", 4, "owner"))


@pytest.mark.parametrize("item", ["leads=3", "leads=x:lead", "=3:lead", "leads=3:boss",
                                  "leads:3=lead"])
def test_a_malformed_group_role_stops_start_up(item):
    with pytest.raises(ImproperlyConfigured, match="OIDC_GROUP_ROLES"):
        group_roles_parse([item])


def test_the_highest_role_of_a_users_groups_wins():
    mapping = group_roles_parse(["g=1:grader", "a=1:admin", "l=1:lead", "l=2:lead"])
    assert roles_for_groups(mapping, {"g", "l"}) == {1: "lead", 2: "lead"}
    assert roles_for_groups(mapping, {"g", "a", "l"}) == {1: "admin", 2: "lead"}
    assert roles_for_groups(mapping, {"x"}) == {}


def test_the_mappings_roles_are_the_teams_roles_highest_first():
    assert tuple(sorted(Role.values, key=ROLE_RANK.__getitem__, reverse=True)) == TEAM_ROLES
