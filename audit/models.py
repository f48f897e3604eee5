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
    SHARE_LINK_CREATED = "share_link_created", "Made a share link"
    SHARE_LINK_REVOKED = "share_link_revoked", "Revoked a share link"
    TRAIL_PRUNED = "trail_pruned", "Deleted events older than the retention"
    EVALUATION_CHANGED = "evaluation_changed", "Changed an evaluation"
    EVALUATION_PAUSED = "evaluation_paused", "Paused an evaluation"
    EVALUATION_ARCHIVED = "evaluation_archived", "Archived an evaluation"
    EVALUATION_RESTORED = "evaluation_restored", "Restored an evaluation"
    ENDPOINT_CREATED = "endpoint_created", "Created an endpoint"
    ENDPOINT_CHANGED = "endpoint_changed", "Changed an endpoint"
    ENDPOINT_DELETED = "endpoint_deleted", "Deleted an endpoint"
    SEARCH_MODEL_CREATED = "search_model_created", "Created a search model"
    SEARCH_MODEL_CHANGED = "search_model_changed", "Changed a search model"
    SEARCH_MODEL_DELETED = "search_model_deleted", "Deleted a search model"
    OFFLINE_RUN_IMPORTED = "offline_run_imported", "Imported an offline run"
    QUERY_SET_CREATED = "query_set_created", "Created a query set"
    QUERY_SET_CHANGED = "query_set_changed", "Changed a query set"
    SCALE_CREATED = "scale_created", "Created a grading scale"
    SCALE_CHANGED = "scale_changed", "Changed a grading scale"
    SCALE_DELETED = "scale_deleted", "Deleted a grading scale"
    TRANSFORMER_SAVED = "transformer_saved", "Created or replaced a transformer"
    TRANSFORMER_DELETED = "transformer_deleted", "Deleted a transformer"
    JUDGE_CREATED = "judge_created", "Created a judge"
    JUDGE_CHANGED = "judge_changed", "Changed a judge"
    JUDGE_DELETED = "judge_deleted", "Deleted a judge"
    JUDGE_COUNTS_CHANGED = "judge_counts_changed", "Let a judge's grades count (or not)"
    JUDGE_RUN_STARTED = "judge_run_started", "Started a judge run"
    JUDGE_RUN_CANCELLED = "judge_run_cancelled", "Cancelled a judge run"
    JUDGE_RUN_CHANGED = "judge_run_changed", "Paused, resumed or retried a judge run"
    JUDGE_TRUST_POLICY_CHANGED = "judge_trust_policy_changed", "Changed the judges' trust policy"
    SCHEDULE_CREATED = "schedule_created", "Created a schedule"
    SCHEDULE_CHANGED = "schedule_changed", "Changed a schedule"
    SCHEDULE_DELETED = "schedule_deleted", "Deleted a schedule"
    WEBHOOK_CREATED = "webhook_created", "Created a webhook"
    WEBHOOK_CHANGED = "webhook_changed", "Changed a webhook"
    WEBHOOK_DELETED = "webhook_deleted", "Deleted a webhook"
    TEAM_CREATED = "team_created", "Created a team"
    TEAM_BASELINE_CHANGED = "team_baseline_changed", "Changed the team's baseline"
    GOLD_ITEMS_CHANGED = "gold_items_changed", "Made a result gold or not"
    GOLD_ITEMS_IMPORTED = "gold_items_imported", "Imported gold items"
    MEMBER_ADDED = "member_added", "Joined a team"
    MEMBER_REMOVED = "member_removed", "Removed a member"
    INVITATION_CREATED = "invitation_created", "Invited someone"
    API_TOKEN_REVOKED = "api_token_revoked", "Revoked an API token"
    JUDGMENTS_IMPORTED = "judgments_imported", "Imported judgments"
    BEHAVIOUR_SOURCE_IMPORTED = "behaviour_source_imported", "Imported a behaviour source"
    BEHAVIOUR_SOURCE_CREATED = "behaviour_source_created", "Opened a collector source"


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
