"""What notifications are stored as: the in-app list, each user's choices, the teams'
webhooks and every delivery to them. The service that writes them is
notifications.services. Their tables keep the names they had in the searchtweak app."""

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone


class Event(models.TextChoices):
    """Everything a notification can be about: the catalogue users choose from."""

    EVALUATION_FINISHED = "evaluation_finished", "Evaluation finished"
    RUN_REGRESSED = "run_regressed", "Run regressed"
    RUN_IMPROVED = "run_improved", "Run improved"
    RUN_UNDECIDED = "run_undecided", "Run undecided"
    JUDGE_RUN_FAILED = "judge_run_failed", "Judge run failed"
    JUDGE_RUN_PAUSED = "judge_run_paused", "Judge run paused at its budget"
    SCHEDULE_PAUSED = "schedule_paused", "Schedule paused after repeated failures"
    GOLD_ACCURACY_LOW = "gold_accuracy_low", "A grader's accuracy on gold items fell low"
    RECOMPUTE_FAILED = "recompute_failed", "An evaluation's metrics could not be computed"


class Channel(models.TextChoices):
    IN_APP = "in_app", "In the app"
    MAIL = "mail", "E-mail"


# What a user gets before choosing: every event in the app; by mail only what asks for a
# person to act or look (a finished evaluation, a regression, a failure), not the news
# that a run improved or stayed undecided.
MAIL_BY_DEFAULT = frozenset({Event.EVALUATION_FINISHED, Event.RUN_REGRESSED,
                             Event.JUDGE_RUN_FAILED, Event.JUDGE_RUN_PAUSED,
                             Event.SCHEDULE_PAUSED, Event.GOLD_ACCURACY_LOW,
                             Event.RECOMPUTE_FAILED})


def enabled_by_default(event: str, channel: str) -> bool:
    return channel == Channel.IN_APP or event in MAIL_BY_DEFAULT


class Notification(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                             related_name="notifications")
    team = models.ForeignKey("searchtweak.Team", on_delete=models.CASCADE, related_name="+")
    event = models.CharField(max_length=40, choices=Event.choices)
    text = models.CharField(max_length=500)
    url = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    read_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "searchtweak_notification"
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["user", "read_at"], name="notification_user_unread")]

    def __str__(self) -> str:
        return self.text


class NotificationPreference(models.Model):
    """A user's choice for one event on one channel; without a row the default holds
    (enabled_by_default)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                             related_name="notification_preferences")
    event = models.CharField(max_length=40, choices=Event.choices)
    channel = models.CharField(max_length=10, choices=Channel.choices)
    enabled = models.BooleanField()

    class Meta:
        db_table = "searchtweak_notificationpreference"
        constraints = [
            models.UniqueConstraint(fields=["user", "event", "channel"],
                                    name="notification_preference_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.event} {self.channel}: {'on' if self.enabled else 'off'}"


class Webhook(models.Model):
    """A team's receiver: every event in `events` is POSTed to `url`, signed with the
    secret (stored encrypted, shown once at creation)."""

    team = models.ForeignKey("searchtweak.Team", on_delete=models.CASCADE,
                             related_name="webhooks")
    url = models.CharField(max_length=500)
    events = models.JSONField(default=list)
    secret_encrypted = models.TextField()
    active = models.BooleanField(default=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True,
                                   on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "searchtweak_webhook"
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return self.url

    def event_labels(self) -> list[str]:
        return [Event(event).label for event in self.events if event in Event.values]


class DeliveryStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    SENT = "sent", "Sent"
    FAILED = "failed", "Failed"


class WebhookDelivery(models.Model):
    Status = DeliveryStatus

    webhook = models.ForeignKey(Webhook, on_delete=models.CASCADE, related_name="deliveries")
    # An event of the catalogue, or "test" (the Send test button).
    event = models.CharField(max_length=40)
    # The body of the latest attempt, as sent and signed: each attempt stamps its own time
    # in `timestamp` (delivery.webhook_delivery_attempt).
    body = models.TextField()
    # Attempts claimed so far; an attempt is claimed (counted, stamped) before it is sent,
    # so no attempt number is sent twice.
    attempt_count = models.PositiveIntegerField(default=0)
    # The claim of the attempt in flight (its lease, delivery.lease_seconds);
    # None between attempts. A worker that dies mid-attempt leaves it to lapse.
    claimed_at = models.DateTimeField(null=True, blank=True)
    # When the next attempt is due (creation, then after each retry's backoff): the sweep
    # sends what is overdue and unclaimed, so a lost message only delays a delivery.
    next_attempt_at = models.DateTimeField(default=timezone.now)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    status_code = models.PositiveIntegerField(null=True, blank=True)
    latency_ms = models.PositiveIntegerField(null=True, blank=True)
    error = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "searchtweak_webhookdelivery"
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(status__in=["pending", "sent", "failed"]),
                                   name="webhook_delivery_status_valid"),
        ]
        indexes = [models.Index(fields=["next_attempt_at"], condition=Q(status="pending"),
                                name="webhook_delivery_pending_idx")]

    def __str__(self) -> str:
        return f"{self.event} to webhook {self.webhook_id}: {self.status}"
