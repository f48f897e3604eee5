"""Who may do what in a team: the one rule every view and API goes through.

A user outside the team (not a member, not logged in, or no such team) gets a 404 that
says nothing of what exists; a member whose role is below the one needed gets a 403 that
names the role ("This needs the admin role."). Roles rank owner > admin > lead > grader >
viewer, each allowed what the ones below it are (searchtweak.models.role_at_least).

A viewer reads results and nothing else: a check lets them in only where it names
Role.VIEWER (READS_ROLE), which the dashboards, comparisons and verdicts do; every other
check names the grader or above (the default) and refuses them, so a page added tomorrow
is closed to viewers until someone opens it. Inside the pages they read, `sees_people`
decides whether a person's name appears (docs/decisions/0026-viewers-and-share-links.md).

The per-object access functions (`evaluation_get_for_user`, `slot_get_for_user`, …) load
their row and ask `team_access` about its team; the grading API's raw statement reads the
caller's role in its own join and asks `check_membership_row`.

Whose grades a member may see is decided here too (`grade_visibility`): every page,
fragment, export and API answer that shows a slot's grade filters its slots with it.
"""

from collections.abc import Callable
from dataclasses import dataclass
from operator import attrgetter
from typing import TypeVar

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Model, Q, QuerySet
from django.http import Http404

from searchtweak.models import Membership, Role, User, role_at_least

M = TypeVar("M", bound=Model)


def role_reason(minimum_role: str) -> str:
    """What a 403 says to a member below `minimum_role`."""
    return f"This needs the {Role(minimum_role).label.lower()} role."


def check_membership_row(role: str | None, minimum_role: str, *, what: str = "team",
                         reason: str = "") -> None:
    """The rule, for a caller whose role in the team is `role` (None: not a member).

    Raises Http404 ("No such <what>.") for a non-member, PermissionDenied with `reason`
    (by default role_reason) for a member below `minimum_role`. There is no way to answer
    that member a 404: a member already knows the team exists, and one rule everywhere is
    what lets the access matrix (tests/searchtweak/test_access_matrix.py) stay short.
    """
    if role is None:
        raise Http404(f"No such {what}.")
    if not role_at_least(role, minimum_role):
        raise PermissionDenied(reason or role_reason(minimum_role))


def membership_for(*, user: User, team_id: int | None) -> Membership | None:
    """The user's membership in this team (its team loaded), or None."""
    if team_id is None or not user.is_authenticated:
        return None
    return Membership.objects.select_related("team").filter(user=user, team_id=team_id).first()


def current_membership(*, user: User) -> Membership | None:
    """The user's membership in their current team, falling back to their first team."""
    if not user.is_authenticated:
        return None
    membership = membership_for(user=user, team_id=user.current_team_id)
    if membership is None:
        membership = Membership.objects.select_related("team").filter(user=user).first()
    return membership


def team_access(*, user: User, team_id: int | None, minimum_role: str = Role.GRADER,
                what: str = "team", reason: str = "") -> Membership:
    """The user's membership in this team, its team loaded, once the rule allows it."""
    membership = membership_for(user=user, team_id=team_id)
    check_membership_row(membership.role if membership else None, minimum_role, what=what,
                         reason=reason)
    return membership


def current_team_access(*, user: User, minimum_role: str = Role.GRADER,
                        reason: str = "") -> Membership:
    """The user's membership in their current team, for the pages that work on it; a user
    in no team at all gets the 404 of a team that is not theirs."""
    membership = current_membership(user=user)
    check_membership_row(membership.role if membership else None, minimum_role,
                         reason=reason)
    return membership


def team_or_current_access(*, user: User, team_id: int | None, minimum_role: str,
                           reason: str = "") -> Membership:
    """For an API call that names its team or defaults to the caller's current one. A
    caller in no team gets a 400 on `team` (there is nothing to default to)."""
    if team_id is None:
        current = current_membership(user=user)
        if current is None:
            raise ValidationError({"team": "You are not in a team."})
        team_id = current.team_id
    return team_access(user=user, team_id=team_id, minimum_role=minimum_role, reason=reason)


def membership_allows(membership: Membership | None, *, minimum_role: str,
                      team_id: int | None = None) -> bool:
    """Whether this membership (already loaded, e.g. the current one) holds `minimum_role`,
    in `team_id` when given. For buttons and links; it never raises."""
    if membership is None or (team_id is not None and membership.team_id != team_id):
        return False
    return role_at_least(membership.role, minimum_role)


def can(*, user: User, team_id: int | None, minimum_role: str) -> bool:
    """Whether team_access would let the user in; for buttons, it never raises."""
    return membership_allows(membership_for(user=user, team_id=team_id),
                             minimum_role=minimum_role)


def current_team_can(*, user: User, team_id: int, minimum_role: str) -> bool:
    """Whether `team_id` is the user's current team and their role there is enough: the
    pages show their action buttons only for the team the user is working in."""
    return membership_allows(current_membership(user=user), minimum_role=minimum_role,
                             team_id=team_id)


def visible_team_ids(*, user: User, minimum_role: str = Role.GRADER) -> list[int]:
    """The ids of every team where the user holds `minimum_role`: what an API list may show
    (of all the user's teams by default)."""
    if not user.is_authenticated:
        return []
    return [team_id for team_id, role in
            Membership.objects.filter(user=user).values_list("team_id", "role")
            if role_at_least(role, minimum_role)]


# --- what a viewer reads ------------------------------------------------------------------

# The role the result pages ask for: dashboards, comparisons, model history, verdicts and
# their APIs. Those pages show aggregates and the viewer's own grades (they have none);
# whatever else would name a person asks `sees_people`.
READS_ROLE = Role.VIEWER

# From this role up a member sees the team's people: who graded how much, who ran a gate.
PEOPLE_ROLE = Role.GRADER


def sees_people(membership: Membership | None) -> bool:
    """Whether a page may name the team's people (graders, who started or judged what) to
    this membership: not to a viewer, and not to a share link's visitor (None)."""
    return membership_allows(membership, minimum_role=PEOPLE_ROLE)


# --- whose grades a member may see ---------------------------------------------------------

# Graders grade independently: Fleiss' κ, the tie rate and every value of a 3-slot
# evaluation rest on nobody having seen the others' grades before giving theirs. From this
# role up a member reviews the grading and sees every grade of the team; below it a grader
# sees their own grades only. The queue never asks anyone to grade a result twice, so a
# result a grader may still be asked to grade holds nothing of theirs: they see nothing of
# it, neither another's grade, grader, note or reason, nor whether the other slots are
# filled. Aggregates over results (metric values, means, κ, coverage, counts) stay visible.
# Pages and APIs that show every grade of an evaluation (the feedback list, exports,
# calibration) ask for this role outright.
GRADES_ROLE = Role.LEAD


@dataclass(frozen=True)
class GradeVisibility:
    """Whose grades one user may see: everyone's in `everyone_team_ids`, their own in the
    other teams (the caller has already checked that the user may open the evaluation)."""

    user_id: int | None
    everyone_team_ids: frozenset[int]

    def sees_everyone(self, team_id: int) -> bool:
        return team_id in self.everyone_team_ids

    def slots(self, prefix: str = "") -> Q:
        """The feedback slots this user may see, as a filter on FeedbackSlot (`prefix`
        reaches the slots from another model, e.g. "slots__"). Filtering the query, not the
        template, keeps the other slots out of every page, fragment and answer alike."""
        visible = Q(**{f"{prefix}pk__in": []})
        if self.everyone_team_ids:
            visible |= Q(**{f"{prefix}evaluation__team_id__in": sorted(self.everyone_team_ids)})
        if self.user_id is not None:
            visible |= Q(**{f"{prefix}user_id": self.user_id})
        return visible


def grade_visibility(*, user: User) -> GradeVisibility:
    """The one rule of who sees whose grades (see GRADES_ROLE), for this user."""
    if not user.is_authenticated:
        return GradeVisibility(None, frozenset())
    return GradeVisibility(user.pk, frozenset(
        visible_team_ids(user=user, minimum_role=GRADES_ROLE)))


def reader_of(*, user: User, team_id: int) -> tuple[GradeVisibility, bool]:
    """grade_visibility and sees_people (in `team_id`) from one query of the user's
    memberships: what every result page asks, at the cost of the visibility alone."""
    if not user.is_authenticated:
        return GradeVisibility(None, frozenset()), False
    roles = dict(Membership.objects.filter(user=user).values_list("team_id", "role"))
    everyone = frozenset(team for team, role in roles.items()
                         if role_at_least(role, GRADES_ROLE))
    return (GradeVisibility(user.pk, everyone),
            team_id in roles and role_at_least(roles[team_id], PEOPLE_ROLE))


def team_creation_refusal(*, user: User) -> str:
    """Why `user` may not create a team (TEAM_CREATION), or "" when they may."""
    if settings.TEAM_CREATION == "staff" and not user.is_staff:
        return ("Only staff may create teams here (TEAM_CREATION=staff): ask an "
                "administrator for a team, or a team admin for an invitation.")
    if not user.is_staff:
        owned = Membership.objects.filter(user=user, role=Role.OWNER).count()
        if owned >= settings.TEAMS_PER_USER:
            return (f"You own {owned} teams, the most one person may create here "
                    "(TEAMS_PER_USER): delete one you no longer use, or ask an "
                    "administrator.")
    return ""


def check_team_creation(*, user: User) -> None:
    """Raises PermissionDenied with the reason when `user` may not create a team."""
    reason = team_creation_refusal(user=user)
    if reason:
        raise PermissionDenied(reason)


def row_get_for_user(rows: QuerySet[M], *, user: User, pk: object, what: str,
                     minimum_role: str = Role.GRADER, reason: str = "",
                     team_id_of: Callable[[M], int] = attrgetter("team_id")) -> M:
    """The row `pk` of `rows` once the rule lets the user at its team (`team_id_of` reads
    the team from the row): "No such <what>." (404) for a missing row and for another
    team's alike, 403 below `minimum_role`. Every per-object access function is this with
    its own query (what it loads) and noun, so the rule is written here once."""
    row = rows.filter(pk=pk).first()
    if row is None:
        raise Http404(f"No such {what}.")
    team_access(user=user, team_id=team_id_of(row), minimum_role=minimum_role, what=what,
                reason=reason)
    return row
