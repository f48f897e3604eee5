"""OIDC_GROUP_ROLES read: which identity-provider group gives which role in which team.

Pure Python (settings.py calls it, so a typo stops start-up). Each item is
`group=team-id:role`: members of `group` get `role` in the team with that id. A group may
appear in several items (several teams); a team may be named by several groups, and a user
in more than one of them gets the highest of their roles there.
"""

from dataclasses import dataclass

from django.core.exceptions import ImproperlyConfigured

# searchtweak.models.Role, highest first (a test keeps the two in step).
ROLES = ("owner", "admin", "lead", "grader")


@dataclass(frozen=True)
class GroupRole:
    group: str
    team_id: int
    role: str


def group_roles_parse(items: list[str]) -> tuple[GroupRole, ...]:
    """The mapping of OIDC_GROUP_ROLES's comma-separated items; ImproperlyConfigured names
    the first item that is not `group=team-id:role` with a known role."""
    mapping = []
    for item in items:
        group, equals, target = item.rpartition("=")
        team, colon, role = target.partition(":")
        if not (equals and colon and group.strip() and team.strip().isdigit()
                and role.strip() in ROLES):
            raise ImproperlyConfigured(
                f"OIDC_GROUP_ROLES: {item!r} is not group=team-id:role with role one of "
                + ", ".join(ROLES))
        mapping.append(GroupRole(group=group.strip(), team_id=int(team), role=role.strip()))
    return tuple(mapping)


def roles_for_groups(mapping: tuple[GroupRole, ...], groups: set[str]) -> dict[int, str]:
    """{team id: the highest role `groups` give there} for the teams the mapping names and
    the user's groups reach."""
    roles: dict[int, str] = {}
    for entry in mapping:
        if entry.group not in groups:
            continue
        held = roles.get(entry.team_id)
        if held is None or ROLES.index(entry.role) < ROLES.index(held):
            roles[entry.team_id] = entry.role
    return roles
