"""A read-only link to one dashboard or one comparison, for someone with no account.

The link's secret is shown once, when it is made; the row keeps its keyed hash only
(sharing.tokens), so a copy of the database opens nothing."""

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone


class ShareLink(models.Model):
    class Kind(models.TextChoices):
        DASHBOARD = "dashboard", "Dashboard"
        COMPARE = "compare", "Comparison"

    class State(models.TextChoices):
        ACTIVE = "active", "Active"
        EXPIRED = "expired", "Expired"
        REVOKED = "revoked", "Revoked"

    team = models.ForeignKey("searchtweak.Team", on_delete=models.CASCADE,
                             related_name="share_links")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    # The dashboard's evaluation, or A of a comparison (B is `other_evaluation`).
    evaluation = models.ForeignKey("evaluations.Evaluation", on_delete=models.CASCADE,
                                   related_name="+")
    other_evaluation = models.ForeignKey("evaluations.Evaluation", null=True, blank=True,
                                         on_delete=models.CASCADE, related_name="+")
    token_hash = models.CharField(max_length=64)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True,
                                   on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.CheckConstraint(
                condition=Q(kind="dashboard", other_evaluation__isnull=True)
                | Q(kind="compare", other_evaluation__isnull=False),
                name="share_link_kind_matches_evaluations"),
            models.CheckConstraint(condition=Q(expires_at__gt=models.F("created_at")),
                                   name="share_link_expires_after_creation"),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} link {self.pk}"

    def state(self, now=None) -> str:
        """Revoked wins over expired: a revoked link says so even after its date."""
        if self.revoked_at is not None:
            return self.State.REVOKED
        if self.expires_at <= (now or timezone.now()):
            return self.State.EXPIRED
        return self.State.ACTIVE
