"""Writes for teams, memberships, invitations, API tokens and users."""

import logging
import secrets

from django.conf import settings
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.mail import send_mail
from django.db import transaction
from django.template.loader import render_to_string
from django.utils import timezone

from audit.models import Action
from audit.services import audit_object, audit_record
from searchtweak.models import (
    ROLE_RANK,
    ApiToken,
    Invitation,
    Membership,
    Role,
    Team,
    User,
    hash_token_key,
)

logger = logging.getLogger(__name__)


@transaction.atomic
def team_create(*, user: User, name: str) -> Team:
    name = name.strip()
    if not name:
        raise ValidationError({"name": "A team needs a name."})
    team = Team.objects.create(name=name)
    Membership.objects.create(team=team, user=user, role=Role.OWNER)
    audit_object(action=Action.TEAM_CREATED, instance=team, object_type="team", actor=user,
                 team_id=team.pk, after={"name": name})
    if user.current_team_id is None:
        user.current_team = team
        user.save(update_fields=["current_team"])
    return team


def user_switch_team(*, user: User, team: Team) -> None:
    if not Membership.objects.filter(team=team, user=user).exists():
        raise ValidationError({"team": "You are not a member of that team."})
    user.current_team = team
    user.save(update_fields=["current_team"])


@transaction.atomic
def invitation_create(*, team: Team, invited_by: User, invitee: str, role: str) -> Invitation:
    invitee = invitee.strip()
    if not invitee:
        raise ValidationError({"invitee": "Give a username or an e-mail address."})
    if role not in Role.values:
        raise ValidationError({"role": f"Unknown role {role!r}."})
    inviter = Membership.objects.get(team=team, user=invited_by)
    if ROLE_RANK[role] > ROLE_RANK[inviter.role]:
        raise ValidationError({"role": "You cannot invite someone to a role above your own."})
    lowered = invitee.lower()
    already_member = Membership.objects.filter(team=team).filter(
        user__username__iexact=lowered
    ) | Membership.objects.filter(team=team, user__email__iexact=lowered)
    if already_member.exists():
        raise ValidationError({"invitee": f"{invitee} is already a member of {team.name}."})
    invitation = Invitation.objects.create(
        team=team, invitee=invitee, role=role, invited_by=invited_by
    )
    audit_object(action=Action.INVITATION_CREATED, instance=invitation,
                 object_type="invitation", actor=invited_by,
                 after={"invitee": invitee, "role": role})
    return invitation


def invitation_send(*, invitation: Invitation, link: str) -> bool:
    """E-mail the invitation's link to an invitee named by e-mail address, through the
    configured mail backend (without EMAIL_URL the console's: the mail is printed, as
    password resets are). Returns whether the mail went out; a mail server that fails is
    logged, not raised: the invitation exists either way and the inviter still has the
    link to pass on."""
    if "@" not in invitation.invitee:
        return False
    context = {"invitation": invitation, "team": invitation.team, "link": link,
               "inviter": invitation.invited_by}
    try:
        send_mail(
            subject=f"You are invited to {invitation.team.name} on SearchTweak",
            message=render_to_string("searchtweak/invitation_email.txt", context),
            from_email=None,
            recipient_list=[invitation.invitee],
        )
    except OSError as error:  # smtplib's errors and refused connections alike
        logger.warning("Invitation %s: the e-mail to %s failed: %s",
                       invitation.pk, invitation.invitee, error)
        return False
    return True


def mail_is_printed() -> bool:
    """Whether "mailed" means printed on the server's console (no EMAIL_URL, or
    console://): pages say so rather than promise a delivery."""
    return settings.EMAIL_BACKEND == "django.core.mail.backends.console.EmailBackend"


@transaction.atomic
def invitation_accept(*, invitation: Invitation, user: User) -> Membership:
    # Lock the row so a link clicked twice at once joins only once.
    invitation = Invitation.objects.select_for_update().get(pk=invitation.pk)
    if not invitation.is_open():
        raise ValidationError({"invitation": "This invitation was used or has expired."})
    if not invitation.is_for(user):
        raise ValidationError({"invitation": "This invitation is for someone else."})
    membership, joined = Membership.objects.get_or_create(
        team=invitation.team, user=user, defaults={"role": invitation.role}
    )
    if joined:
        audit_object(action=Action.MEMBER_ADDED, instance=membership, object_type="membership",
                     actor=user, after={"user": user.pk, "role": membership.role,
                                        "invitation": invitation.pk})
    invitation.accepted_at = timezone.now()
    invitation.accepted_by = user
    invitation.save(update_fields=["accepted_at", "accepted_by"])
    user.current_team = invitation.team
    user.save(update_fields=["current_team"])
    return membership


@transaction.atomic
def user_register_from_invitation(
    *, invitation: Invitation, username: str, password: str
) -> User:
    """Create the account an e-mail invitation points to, then accept the invitation."""
    if "@" not in invitation.invitee:
        raise ValidationError({"username": "This invitation is for an existing account."})
    if User.objects.filter(username__iexact=username).exists():
        raise ValidationError({"username": "That username is taken."})
    if User.objects.filter(email__iexact=invitation.invitee).exists():
        raise ValidationError({"username": "An account with this e-mail already exists."})
    user = User(username=username, email=invitation.invitee)
    try:
        validate_password(password, user)
    except ValidationError as error:
        raise ValidationError({"password": error.messages}) from None
    user.set_password(password)
    user.save()
    invitation_accept(invitation=invitation, user=user)
    return user


@transaction.atomic
def membership_change_role(*, membership: Membership, changed_by: User, role: str) -> Membership:
    if role not in Role.values:
        raise ValidationError({"role": f"Unknown role {role!r}."})
    changer = Membership.objects.get(team=membership.team, user=changed_by)
    if ROLE_RANK[role] > ROLE_RANK[changer.role] or (
        ROLE_RANK[membership.role] > ROLE_RANK[changer.role]
    ):
        raise ValidationError({"role": "You cannot change a role above your own."})
    _ensure_an_owner_remains(membership=membership, new_role=role)
    previous = membership.role
    membership.role = role
    membership.save(update_fields=["role"])
    audit_record(action=Action.ROLE_CHANGED, actor=changed_by, team_id=membership.team_id,
                 object_type="membership", object_id=membership.pk,
                 before={"user": membership.user_id, "role": previous},
                 after={"user": membership.user_id, "role": role})
    return membership


@transaction.atomic
def membership_remove(*, membership: Membership, removed_by: User) -> None:
    remover = Membership.objects.get(team=membership.team, user=removed_by)
    if membership.user_id != removed_by.pk and (
        ROLE_RANK[membership.role] > ROLE_RANK[remover.role]
    ):
        raise ValidationError({"role": "You cannot remove a member above your own role."})
    _ensure_an_owner_remains(membership=membership, new_role=None)
    user = membership.user
    audit_object(action=Action.MEMBER_REMOVED, instance=membership, object_type="membership",
                 actor=removed_by, before={"user": user.pk, "role": membership.role})
    membership.delete()
    if user.current_team_id == membership.team_id:
        next_membership = Membership.objects.filter(user=user).order_by("joined_at").first()
        user.current_team = next_membership.team if next_membership else None
        user.save(update_fields=["current_team"])


def _ensure_an_owner_remains(*, membership: Membership, new_role: str | None) -> None:
    if membership.role != Role.OWNER or new_role == Role.OWNER:
        return
    # Lock the team's owner rows: two owners demoting each other at once must not both win.
    owners = list(
        Membership.objects.select_for_update().filter(team=membership.team, role=Role.OWNER)
    )
    if len(owners) <= 1:
        raise ValidationError({"role": "A team needs at least one owner."})


def user_change_name(*, user: User, first_name: str, last_name: str) -> User:
    user.first_name = first_name.strip()
    user.last_name = last_name.strip()
    user.save(update_fields=["first_name", "last_name"])
    return user


def api_token_create(*, user: User, name: str) -> tuple[ApiToken, str]:
    """Create a token and return it with its key, which is not stored: it is shown once."""
    name = name.strip()
    if not name:
        raise ValidationError({"name": "Give the token a name."})
    key = secrets.token_hex(20)
    with transaction.atomic():
        token = ApiToken.objects.create(
            user=user, name=name, key_hash=hash_token_key(key), key_prefix=key[:8]
        )
        audit_record(action=Action.API_TOKEN_CREATED, actor=user, object_type="api_token",
                     object_id=token.pk, after={"name": name, "key_prefix": key[:8]})
    return token, key


def api_token_revoke(*, token: ApiToken) -> None:
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        with transaction.atomic():
            token.save(update_fields=["revoked_at"])
            audit_record(action=Action.API_TOKEN_REVOKED, actor_id=token.user_id,
                         object_type="api_token", object_id=token.pk,
                         before={"name": token.name, "key_prefix": token.key_prefix},
                         after={"revoked_at": token.revoked_at.isoformat()})
