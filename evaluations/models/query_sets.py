"""Query sets: a team's named, versioned keyword lists.

The set itself is the KeywordSet model (a name that does not shadow Django's QuerySet); the
pages and the API call it a query set, and its table, fields and URLs keep that name."""

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.db.models.functions import Lower
from django.utils import timezone

from evaluations.models.team_owned import TeamOwnedQuerySet
from searchtweak.models import Team


class KeywordSet(models.Model):
    """A query set: a team's named, reusable keyword list. Its keywords live in versions:
    editing the list adds a version, the newest is the current one, and an evaluation
    created from the set records the version it ran (Evaluation.query_set_version).
    Archived, never deleted by the pages or the API."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="query_sets")
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True, default="")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="+",
    )
    created_at = models.DateTimeField(default=timezone.now)
    archived_at = models.DateTimeField(null=True, blank=True)
    # Traffic segments: each version's keywords tagged head, torso or tail by their weights'
    # cumulative share (metrics_engine.weighted.traffic_segments, cut points in percent).
    traffic_segments = models.BooleanField(default=False, db_default=False)
    traffic_head_cut = models.PositiveSmallIntegerField(default=50, db_default=50)
    traffic_torso_cut = models.PositiveSmallIntegerField(default=80, db_default=80)

    objects = TeamOwnedQuerySet.as_manager()

    class Meta:
        db_table = "evaluations_queryset"
        verbose_name = "query set"
        ordering = ["name", "id"]
        constraints = [
            # Case-insensitive, among the sets in use: an archived set frees its name.
            models.UniqueConstraint(
                Lower("name"), "team", condition=Q(archived_at__isnull=True),
                name="query_set_name_unique_per_team",
            ),
            models.CheckConstraint(
                condition=Q(traffic_head_cut__lt=F("traffic_torso_cut"),
                            traffic_torso_cut__lte=100),
                name="query_set_traffic_cuts_ordered",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def current_version(self) -> "QuerySetVersion | None":
        return self.versions.order_by("-number").first()

    def traffic_cuts(self) -> tuple[int, int] | None:
        """The cut points when traffic segments are on, else None."""
        return (self.traffic_head_cut, self.traffic_torso_cut) if self.traffic_segments \
            else None


class QuerySetVersion(models.Model):
    """One state of a query set's keyword list, numbered 1..n; never changed once written."""

    query_set = models.ForeignKey(KeywordSet, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    keyword_count = models.PositiveIntegerField()
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="+",
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["query_set_id", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["query_set", "number"],
                                    name="query_set_version_number_unique"),
            models.CheckConstraint(condition=Q(number__gte=1),
                                   name="query_set_version_number_from_1"),
        ]

    def __str__(self) -> str:
        return f"{self.query_set_id} v{self.number}"


class QuerySetKeyword(models.Model):
    """One keyword of a version, in a table (not JSON) so a list may grow to 100,000."""

    version = models.ForeignKey(QuerySetVersion, on_delete=models.CASCADE,
                                related_name="keywords")
    position = models.PositiveIntegerField()
    text = models.CharField(max_length=500)
    # Keyword.normalize(text): the same key an evaluation's keywords are unique on.
    normalized_text = models.CharField(max_length=500)
    # As an evaluation's Keyword carries them, and copied to it.
    weight = models.PositiveIntegerField(default=1, db_default=1)
    tags = models.JSONField(default=list, db_default=[], blank=True)

    class Meta:
        ordering = ["version_id", "position"]
        constraints = [
            models.UniqueConstraint(fields=["version", "normalized_text"],
                                    name="query_set_keyword_unique_per_version"),
            models.UniqueConstraint(fields=["version", "position"],
                                    name="query_set_keyword_position_unique"),
        ]

    def __str__(self) -> str:
        return self.text
