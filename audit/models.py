"""The audit trail: one row per thing someone did that a team's owner may have to account
for. Rows are only ever added (docs/decisions/0021-an-audit-trail-of-our-own.md); on
PostgreSQL a trigger refuses UPDATE and DELETE on the table."""

from django.db import models
from django.utils import timezone


class Action(models.TextChoices):
    SIGN_IN = "sign_in", "Signed in"
    SIGN_IN_FAILED = "sign_in_failed", "Failed to sign in"
    EVALUATION_CREATED = "evaluation_created", "Created an evaluation"
    EVALUATION_STARTED = "evaluation_started", "Started an evaluation"
    EVALUATION_FINISHED = "evaluation_finished", "Finished an evaluation"
    EVALUATION_DELETED = "evaluation_deleted", "Deleted an evaluation"
    EXPORT_DOWNLOADED = "export_downloaded", "Downloaded an export"
    API_TOKEN_CREATED = "api_token_created", "Created an API token"
    ROLE_CHANGED = "role_changed", "Changed a member's role"
    TRAIL_PRUNED = "trail_pruned", "Deleted events older than the retention"


class AuditEvent(models.Model):
    """Who did what, to which object, when and from where, with the fields it changed.

    Actor and team are plain ids with the actor's name copied, not foreign keys: the trail
    outlives the users and teams it names, and deleting either must not touch it."""

    at = models.DateTimeField(default=timezone.now)
    actor_id = models.IntegerField(null=True, blank=True)
    actor_label = models.CharField(max_length=150, blank=True)
    team_id = models.IntegerField(null=True, blank=True)
    # An Action value (audit_record refuses others). Not the field's choices: a new
    # action is a new Action member and no migration, whichever app adds it.
    action = models.CharField(max_length=40)
    object_type = models.CharField(max_length=40, blank=True)
    object_id = models.CharField(max_length=64, blank=True)
    client_address = models.GenericIPAddressField(null=True, blank=True)
    # {"field": [before, after]}, secrets masked (audit.services.changes_masked).
    changes = models.JSONField(default=dict, blank=True)

    class Meta:
        indexes = [models.Index(fields=["team_id", "-at"], name="audit_team_at_idx"),
                   # The retention job's `at < cutoff` (audit.services.audit_events_prune).
                   models.Index(fields=["at"], name="audit_at_idx")]
        ordering = ["-at", "-pk"]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.actor_label or '-'} {self.action}"

    @property
    def action_label(self) -> str:
        """The action in words ("Created an evaluation"); the stored value when no Action
        member has it any more."""
        try:
            return Action(self.action).label
        except ValueError:
            return self.action
