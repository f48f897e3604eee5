"""Reads for teams and memberships, and the access functions every view goes through."""

from django.db.models import Count, Q, QuerySet
from django.http import Http404

from searchtweak import access
from searchtweak.access import current_membership, membership_for  # noqa: F401 (re-exported)
from searchtweak.models import ApiToken, Invitation, Membership, Role, Team, User


def memberships_of_user(*, user: User) -> QuerySet[Membership]:
    return Membership.objects.select_related("team").filter(user=user).order_by("team__name")


def team_members(*, team: Team) -> QuerySet[Membership]:
    """The team's people. A judge's service account is a member so its grades fill slots,
    but it is managed on the judges' pages, never by role changes, removal or tags."""
    return Membership.objects.select_related("user").filter(
        team=team, user__is_judge=False).order_by("user__username")


def team_open_invitations(*, team: Team) -> list[Invitation]:
    return [i for i in team.invitations.filter(accepted_at=None) if i.is_open()]


def invitations_for_user(*, user: User) -> list[Invitation]:
    matches = Q(invitee__iexact=user.username)
    if user.email:
        matches |= Q(invitee__iexact=user.email)
    pending = Invitation.objects.select_related("team").filter(matches, accepted_at=None)
    return [invitation for invitation in pending if invitation.is_open()]


def invitee_warning(*, invitee: str) -> str | None:
    """Why an invitation may never be accepted, told to the inviter: a username (no "@")
    that no account has. It is kept: someone may still register under that name."""
    invitee = invitee.strip()
    if "@" in invitee or User.objects.filter(username__iexact=invitee).exists():
        return None
    return (f"No account is named {invitee!r}: check the spelling. The link works only for "
            "a user of that name; to invite someone without an account, give their e-mail "
            "address.")


def teams_with_member_counts(*, user: User) -> QuerySet[Team]:
    return Team.objects.visible_to(user).annotate(member_count=Count("memberships"))


# --- access functions: 404 for missing rows and for rows outside the caller's teams ---


def team_get_for_user(*, user: User, team_id: int, minimum_role: str = Role.GRADER) -> Team:
    return access.team_access(user=user, team_id=team_id, minimum_role=minimum_role).team


def membership_get_for_user(
    *, user: User, membership_id: int, minimum_role: str = Role.GRADER
) -> Membership:
    membership = (
        Membership.objects.select_related("team", "user")
        .filter(pk=membership_id, user__is_judge=False).first()
    )
    if membership is None:
        raise Http404("No such member.")
    team_get_for_user(user=user, team_id=membership.team_id, minimum_role=minimum_role)
    return membership


def invitation_get_for_user(*, user: User, token: str) -> Invitation:
    """An invitation by its link. Anyone holding the link may see it; only its invitee may
    accept it, which invitation_accept checks."""
    invitation = Invitation.objects.select_related("team", "invited_by").filter(
        token=token
    ).first()
    if invitation is None or (user.is_authenticated and not invitation.is_for(user)):
        raise Http404("No such invitation.")
    return invitation


def api_token_get_for_user(*, user: User, token_id: int) -> ApiToken:
    token = ApiToken.objects.filter(pk=token_id, user=user).first()
    if token is None:
        raise Http404("No such token.")
    return token


def api_tokens_of_user(*, user: User) -> QuerySet[ApiToken]:
    return ApiToken.objects.filter(user=user).order_by("revoked_at", "-created_at")
