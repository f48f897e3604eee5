from django.http import HttpRequest

from searchtweak import access
from searchtweak.models import Membership, Role
from searchtweak.selectors import memberships_of_user


def team_context(request: HttpRequest) -> dict:
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    memberships = list(memberships_of_user(user=user))
    # One query serves both the team switcher and the current team.
    current = next((m for m in memberships if m.team_id == user.current_team_id), None)
    if current is None and memberships:
        current = memberships[0]
    return {"current_membership": current, "user_memberships": memberships,
            "current_allows": allows_by_role(current)}


def allows_by_role(membership: Membership | None) -> dict[str, bool]:
    """For links and buttons: {"lead": True, "admin": False, …}, decided by access."""
    return {role: access.membership_allows(membership, minimum_role=role)
            for role in Role.values}
