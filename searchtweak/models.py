import hashlib
import secrets
from datetime import timedelta

from django.conf import settings
from django.contrib.auth.models import AbstractUser
from django.db import models
from django.db.models import Q
from django.utils import timezone


class Role(models.TextChoices):
    OWNER = "owner", "Owner"
    ADMIN = "admin", "Admin"
    LEAD = "lead", "Lead"
    GRADER = "grader", "Grader"
    VIEWER = "viewer", "Viewer"


# Each role can do everything the roles below it can: an admin may also lead evaluations.
# A viewer sits below the grader and holds only what a check names Role.VIEWER for: every
# check that names the grader (the default) refuses them (searchtweak/access.py and
# docs/decisions/0026-viewers-and-share-links.md).
ROLE_RANK: dict[str, int] = {Role.VIEWER: 5, Role.GRADER: 10, Role.LEAD: 20, Role.ADMIN: 30,
                             Role.OWNER: 40}


def role_at_least(role: str, minimum: str) -> bool:
    return ROLE_RANK[role] >= ROLE_RANK[minimum]


class User(AbstractUser):
    current_team = models.ForeignKey(
        "searchtweak.Team", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # The service account of an LLM judge (judges.models.Judge.user): it never logs in, and
    # pages say "judge" beside the grades it gave.
    is_judge = models.BooleanField(default=False)

    # Who gave a grade, as pages, exports, the API and leaderboards name it.
    KIND_PERSON, KIND_JUDGE = "person", "judge"
    KINDS = (KIND_PERSON, KIND_JUDGE)

    @property
    def grader_kind(self) -> str:
        return self.KIND_JUDGE if self.is_judge else self.KIND_PERSON


class TeamQuerySet(models.QuerySet):
    def visible_to(self, user: "User") -> "TeamQuerySet":
        if not user.is_authenticated:
            return self.none()
        return self.filter(memberships__user=user)


class Team(models.Model):
    name = models.CharField(max_length=100)
    created_at = models.DateTimeField(default=timezone.now)

    objects = TeamQuerySet.as_manager()

    class Meta:
        ordering = ["name", "id"]

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.GRADER)
    joined_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["team_id", "user__username"]
        constraints = [
            models.UniqueConstraint(fields=["team", "user"], name="membership_unique_team_user"),
            models.CheckConstraint(
                condition=Q(role__in=Role.values), name="membership_role_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.team} ({self.role})"

    def can(self, minimum_role: str) -> bool:
        return role_at_least(self.role, minimum_role)


INVITATION_VALID_FOR = timedelta(days=14)


def _new_invitation_token() -> str:
    return secrets.token_urlsafe(24)


class Invitation(models.Model):
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="invitations")
    invitee = models.CharField(
        max_length=254, help_text="Username or e-mail address of the person invited."
    )
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.GRADER)
    token = models.CharField(max_length=64, unique=True, default=_new_invitation_token)
    invited_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    accepted_at = models.DateTimeField(null=True, blank=True)
    accepted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="+",
    )

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(role__in=Role.values), name="invitation_role_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.invitee} to {self.team}"

    @property
    def expires_at(self):
        return self.created_at + INVITATION_VALID_FOR

    def is_open(self) -> bool:
        return self.accepted_at is None and timezone.now() < self.expires_at

    def is_for(self, user: "User") -> bool:
        wanted = self.invitee.strip().lower()
        return wanted in {user.username.lower(), (user.email or "").strip().lower()}


def hash_token_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


class ApiToken(models.Model):
    """A personal API token. Only its hash is stored; the key is shown once, at creation."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100)
    key_hash = models.CharField(max_length=64, unique=True)
    key_prefix = models.CharField(max_length=8)
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.key_prefix}…)"

