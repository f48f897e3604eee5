"""An evaluation's keywords and the snapshots (results) fetched for them."""

from django.db import models
from django.db.models import Q

from evaluations.models.evaluations import Evaluation


class Keyword(models.Model):
    class FetchStatus(models.TextChoices):
        PENDING = "pending", "Not fetched"
        FETCHED = "fetched", "Fetched"
        FAILED = "failed", "Failed"

    evaluation = models.ForeignKey(Evaluation, on_delete=models.CASCADE, related_name="keywords")
    position = models.PositiveIntegerField()
    text = models.CharField(max_length=500)
    # Trimmed, case-folded text: the pool of a keyword is every judgment of this text.
    normalized_text = models.CharField(max_length=500, db_index=True)
    # How often people ask it, and its tags (sorted strings): services.keywords states the
    # rules; docs/decisions/0008 why a column and a JSON list.
    weight = models.PositiveIntegerField(default=1, db_default=1)
    tags = models.JSONField(default=list, db_default=[], blank=True)
    fetch_status = models.CharField(
        max_length=10, choices=FetchStatus.choices, default=FetchStatus.PENDING
    )
    fetch_status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    fetch_duration_ms = models.PositiveIntegerField(null=True, blank=True)
    fetch_error = models.TextField(blank=True, default="")
    fetched_at = models.DateTimeField(null=True, blank=True)
    # Set by the fetch task that claimed the keyword (a conditional UPDATE), and the claim
    # itself: the task quotes it to store the keyword. A claim older than the endpoint's
    # requests can take (fetching.search_requests.fetch_claim_lease_seconds) belongs to a
    # worker that died and may be taken over.
    fetch_claimed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["evaluation_id", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["evaluation", "normalized_text"], name="keyword_unique_per_evaluation"
            ),
            models.UniqueConstraint(
                fields=["evaluation", "position"], name="keyword_position_unique"
            ),
        ]
        indexes = [
            # "Is any keyword still waiting?" after every fetch task: without it the answer
            # walked the evaluation's fetched keywords first, all 100,000 near the end.
            models.Index(fields=["evaluation"], condition=Q(fetch_status="pending"),
                         name="keyword_pending_idx"),
        ]

    def __str__(self) -> str:
        return self.text

    @staticmethod
    def normalize(text: str) -> str:
        return text.strip().casefold()

    @staticmethod
    def search_q(search: str, *, through: str = "") -> Q:
        """The keywords a search finds (its normalized text within theirs), as a filter on
        Keyword, or on a model that reaches it `through` a relation ("keyword__")."""
        return Q(**{f"{through}normalized_text__contains": Keyword.normalize(search)})


class Snapshot(models.Model):
    """One result the endpoint returned for a keyword, at its position (1-based)."""

    keyword = models.ForeignKey(Keyword, on_delete=models.CASCADE, related_name="snapshots")
    position = models.PositiveSmallIntegerField()
    doc_id = models.CharField(max_length=500)
    name = models.TextField(blank=True, default="")
    image = models.TextField(blank=True, default="")
    fields = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["keyword_id", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["keyword", "position"], name="snapshot_position_unique"
            ),
            models.CheckConstraint(condition=Q(position__gte=1), name="snapshot_position_from_1"),
        ]

    def __str__(self) -> str:
        return f"{self.keyword_id}#{self.position} {self.doc_id}"
