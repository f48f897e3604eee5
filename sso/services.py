"""Who a verified identity-provider sign-in is here, and the team roles its groups give.

Called by sso.backends.OidcBackend once the ID token's signature, issuer, audience, expiry
and nonce have been checked; every refusal is an SsoRefused whose message the refusal page
shows (docs/decisions/0025-single-sign-on-through-openid-connect.md).
"""

import re

from django.conf import settings
from django.db import transaction

from audit.models import Action
from audit.services import audit_record
from searchtweak.envvars import TEAM_ROLES, GroupRole
from searchtweak.models import Membership, Role, Team, User


class SsoRefused(Exception):
    """A sign-in through the provider that is refused; str() is the reason, for people."""


_USERNAME_UNSAFE = re.compile(r"[^\w.@+-]")


@transaction.atomic
def sso_sign_in(*, claims: dict, groups: set[str]) -> User:
    """The account for verified `claims`: the one whose e-mail matches (case-insensitive),
    else a new one; then its roles in the teams OIDC_GROUP_ROLES names, from `groups`.

    Refused: no e-mail, an e-mail the provider says it has not verified (matching it would
    hand someone else's account to whoever typed that address at the provider), several
    accounts with that e-mail, an inactive account, a judge's service account."""
    email = str(claims.get("email") or "").strip()
    if not email or "@" not in email:
        raise SsoRefused("The identity provider did not send an e-mail address for you; "
                         "SearchTweak matches accounts by e-mail.")
    if claims.get("email_verified") is False:
        raise SsoRefused(f"The identity provider has not verified the address {email}.")
    users = list(User.objects.filter(email__iexact=email)[:2])
    if len(users) > 1:
        raise SsoRefused(f"More than one SearchTweak account has the address {email}; "
                         "an administrator must give one of them another address.")
    if users:
        user = users[0]
        if not user.is_active or user.is_judge:
            raise SsoRefused(f"The SearchTweak account for {email} is disabled.")
    else:
        user = User.objects.create_user(
            username=_free_username(claims, email), email=email,
            first_name=str(claims.get("given_name") or "")[:150],
            last_name=str(claims.get("family_name") or "")[:150])
    sso_team_roles_apply(user=user, groups=groups)
    return user


def _free_username(claims: dict, email: str) -> str:
    """preferred_username (or the e-mail) cleaned to Django's characters, numbered when
    taken."""
    base = _USERNAME_UNSAFE.sub("", str(claims.get("preferred_username") or email))[:140]
    base = base or "user"
    candidate, number = base, 1
    while User.objects.filter(username__iexact=candidate).exists():
        number += 1
        candidate = f"{base}{number}"
    return candidate


def sso_team_roles_apply(*, user: User, groups: set[str]) -> None:
    """Make the user's memberships in the teams OIDC_GROUP_ROLES names what `groups` give:
    added or changed to the highest mapped role, removed when no group gives one. Teams the
    mapping does not name are left alone, and so is a team's last owner (a team is never
    left without one). Each change is recorded in the audit trail as a role change made by
    the provider (no actor): role None before is an added membership, None after a removed
    one."""
    mapping = settings.OIDC_GROUP_ROLES
    if not mapping:
        return
    wanted = roles_for_groups(mapping, groups)
    mapped_teams = {entry.team_id for entry in mapping}
    held = {membership.team_id: membership for membership in Membership.objects
            .select_for_update().filter(user=user, team_id__in=mapped_teams)}
    # A team deleted since the mapping was written is skipped, not an error at sign-in.
    existing_teams = set(Team.objects.filter(pk__in=mapped_teams).values_list("pk", flat=True))
    for team_id in sorted(mapped_teams & existing_teams):
        membership, role = held.get(team_id), wanted.get(team_id)
        before = membership.role if membership else None
        if before == role or (before == Role.OWNER and _last_owner(membership)):
            continue
        if membership is None:
            membership = Membership.objects.create(team_id=team_id, user=user, role=role)
            if user.current_team_id is None:
                user.current_team_id = team_id
                user.save(update_fields=["current_team"])
        elif role is None:
            membership_id = membership.pk
            membership.delete()
            membership.pk = membership_id
            if user.current_team_id == team_id:
                # As searchtweak.services.membership_remove: on to the oldest team left.
                next_membership = (Membership.objects.filter(user=user)
                                   .order_by("joined_at").first())
                user.current_team_id = next_membership.team_id if next_membership else None
                user.save(update_fields=["current_team"])
        else:
            membership.role = role
            membership.save(update_fields=["role"])
        audit_record(action=Action.ROLE_CHANGED, actor_label="single sign-on", team_id=team_id,
                     object_type="membership", object_id=membership.pk,
                     before={"user": user.pk if before else None, "role": before},
                     after={"user": user.pk if role else None, "role": role})


def _last_owner(membership: Membership) -> bool:
    return not Membership.objects.select_for_update().filter(
        team_id=membership.team_id, role=Role.OWNER).exclude(pk=membership.pk).exists()


def roles_for_groups(mapping: tuple[GroupRole, ...], groups: set[str]) -> dict[int, str]:
    """{team id: the highest role `groups` give there} for the teams the mapping names and
    the user's groups reach."""
    roles: dict[int, str] = {}
    for entry in mapping:
        if entry.group not in groups:
            continue
        held = roles.get(entry.team_id)
        if held is None or TEAM_ROLES.index(entry.role) < TEAM_ROLES.index(held):
            roles[entry.team_id] = entry.role
    return roles
