"""A team's behaviour data: where it came from, its time window, and its counts summed per
(keyword, document, position, day) and per (keyword, day). The raw events are read once,
by the importers, and not kept (docs/decisions/0020)."""

from datetime import UTC, date, datetime

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.utils import timezone

from searchtweak.models import Team, User


class BehaviourSourceQuerySet(models.QuerySet):
    def visible_to(self, user: User) -> "BehaviourSourceQuerySet":
        if not user.is_authenticated:
            return self.none()
        return self.filter(team__memberships__user=user)


class BehaviourSource(models.Model):
    """One import of a team's behaviour: UBI query and event logs, or a plain CSV of
    per-position counts, never changed after its import (a new log is a new source); or
    a collector's, which grows as a search front end posts batches of UBI queries and
    events (behaviour.collector)."""

    class Kind(models.TextChoices):
        UBI = "ubi", "UBI queries and events"
        CSV = "csv", "CSV of per-position counts"
        COLLECTOR = "collector", "Collected from a search front end"

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="behaviour_sources")
    name = models.CharField(max_length=200)
    kind = models.CharField(max_length=10, choices=Kind.choices)
    # The window the data covers: the first and last search of a UBI log; what the
    # importer says for a CSV (which has no timestamps), or nothing.
    window_start_at = models.DateTimeField(null=True, blank=True)
    window_end_at = models.DateTimeField(null=True, blank=True)
    search_count = models.PositiveBigIntegerField(default=0)
    """Searches read (UBI queries); 0 for a CSV, which counts no searches."""
    event_count = models.PositiveBigIntegerField(default=0)
    """Lines of events read (UBI) or of counts (CSV), every action counted."""
    last_days_on = models.DateField(null=True, blank=True)
    """The day its BehaviourKeywordLastDays rows end on, all of them; None while they
    are not as of the window's last day (a collector's new day, until a task makes
    them again) or for a source without days."""
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)

    objects = BehaviourSourceQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(window_start_at__isnull=True) | Q(window_end_at__isnull=True)
                | Q(window_start_at__lte=F("window_end_at")),
                name="behaviour_source_window_ordered"),
        ]

    def __str__(self) -> str:
        return self.name


class BehaviourCount(models.Model):
    """How often a document was shown and clicked at a position for a keyword, on a day
    (a CSV's rows have no day). Clicks count once per search, so clicks ≤ impressions."""

    source = models.ForeignKey(BehaviourSource, on_delete=models.CASCADE,
                               related_name="counts")
    keyword = models.CharField(max_length=500)
    """The keyword's normalised text (evaluations.models.Keyword.normalize)."""
    doc_id = models.CharField(max_length=500)
    position = models.PositiveIntegerField()
    day = models.DateField(null=True, blank=True)
    impressions = models.PositiveBigIntegerField()
    clicks = models.PositiveBigIntegerField()
    dwell_seconds_sum = models.FloatField(default=0.0)
    dwell_count = models.PositiveBigIntegerField(default=0)
    """Clicks whose dwell time is known (the sum is over these)."""

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["source", "keyword", "doc_id", "position", "day"],
                                    name="behaviour_count_unique"),
            models.CheckConstraint(condition=Q(clicks__lte=F("impressions")),
                                   name="behaviour_count_clicks_shown"),
            models.CheckConstraint(condition=Q(position__gte=1),
                                   name="behaviour_count_position_from_one"),
        ]

    def __str__(self) -> str:
        return f"{self.keyword} / {self.doc_id} @ {self.position}"


class BehaviourSearches(models.Model):
    """A keyword's searches on a day and where each first click fell: what first-click RR
    and abandonment need, which per-position counts cannot say. UBI sources only."""

    source = models.ForeignKey(BehaviourSource, on_delete=models.CASCADE,
                               related_name="searches")
    keyword = models.CharField(max_length=500)
    day = models.DateField(null=True, blank=True)
    search_count = models.PositiveBigIntegerField()
    first_clicks = models.JSONField(default=list)
    """[searches whose first click was at position 1, at 2, ...]."""

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["source", "keyword", "day"],
                                    name="behaviour_searches_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.keyword}: {self.search_count} searches"


ROLLUP_DEPTH = 10
"""Positions a rollup row holds one by one; a keyword whose searches show results deeper
than this is read from the sums themselves (behaviour.summary)."""


class KeywordSums(models.Model):
    """What a rollup row holds of a keyword's behaviour, summed over its documents and
    searches: searches, dwell, per position up to ROLLUP_DEPTH its impressions, clicks and
    first clicks (ROLLUP_POSITION_FIELDS), and how deep the sums go."""

    searches = models.PositiveBigIntegerField(default=0)
    dwell_seconds_sum = models.FloatField(default=0.0)
    dwell_count = models.PositiveBigIntegerField(default=0)
    count_depth = models.PositiveIntegerField(default=0)
    """The deepest position of the keyword's count rows; 0: none (searches alone)."""
    first_click_depth = models.PositiveIntegerField(default=0)
    """The deepest position holding first clicks (the length of first_clicks)."""

    class Meta:
        abstract = True


ROLLUP_POSITION_FIELDS = tuple(f"{name}_{position}" for position in range(1, ROLLUP_DEPTH + 1)
                               for name in ("impressions", "clicks", "first_clicks"))
"""impressions_1, clicks_1, first_clicks_1, ..., first_clicks_10."""
# Before the models below: each copies its abstract parent's fields when it is made.
for _name in ROLLUP_POSITION_FIELDS:
    KeywordSums.add_to_class(_name, models.PositiveBigIntegerField(default=0))


class BehaviourKeywordDay(KeywordSums):
    """A keyword's behaviour on a day, summed over its documents (BehaviourCount) and
    with its searches (BehaviourSearches): what the "What users did" panel adds up, ten
    times fewer rows than the sums it is made of (docs/decisions/0028). `whole` rows
    hold a keyword's sum over the source's whole log (no day), so the default window
    reads one row a keyword. Written only by behaviour.rollup, in the transaction that
    writes the sums; per position up to ROLLUP_DEPTH, with `count_depth` and
    `first_click_depth` saying how deep the sums go."""

    # No index of its own: the constraints and the index below lead with the source, and
    # given a plain one PostgreSQL read every row of a source to find its whole rows.
    source = models.ForeignKey(BehaviourSource, on_delete=models.CASCADE,
                               related_name="keyword_days", db_index=False)
    keyword = models.CharField(max_length=500)
    day = models.DateField(null=True, blank=True)
    """None on a `whole` row."""
    whole = models.BooleanField(default=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["source", "keyword", "day"],
                                    condition=Q(whole=False),
                                    name="behaviour_keyword_day_unique"),
            models.UniqueConstraint(fields=["source", "keyword"], condition=Q(whole=True),
                                    name="behaviour_keyword_whole_unique"),
            models.CheckConstraint(condition=Q(whole=True, day__isnull=True)
                                   | Q(whole=False, day__isnull=False),
                                   name="behaviour_keyword_day_or_whole"),
        ]
        indexes = [models.Index(fields=["source", "whole", "day"],
                                name="behaviour_kd_source_day")]

    def __str__(self) -> str:
        return f"{self.keyword} on {self.day or 'the whole log'}"


LAST_DAYS = (7, 30)
"""The window picker's presets, "Last 7 days" and "Last 30 days" of a source's data."""


def last_day_of(window_end_at: datetime | None) -> date | None:
    """The day a source's window ends on, which the presets count back from: a day of
    the sums is a UTC day (behaviour.importing)."""
    return window_end_at.astimezone(UTC).date() if window_end_at is not None else None


class BehaviourKeywordLastDays(KeywordSums):
    """A keyword's sums over the last 7 or 30 days of its source's data, ending on the
    source's `last_days_on`: the sum of its BehaviourKeywordDay rows on those days, so
    the presets read one row a keyword as the whole log does (docs/decisions/0033).
    Written only by behaviour.rollup: with the whole rollup, by a collector's batch for
    its keywords, and all of them again when a batch brings a new last day."""

    source = models.ForeignKey(BehaviourSource, on_delete=models.CASCADE,
                               related_name="keyword_last_days", db_index=False)
    keyword = models.CharField(max_length=500)
    days = models.PositiveSmallIntegerField()
    """7 or 30 (LAST_DAYS)."""

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["source", "days", "keyword"],
                                    name="behaviour_keyword_last_days_unique"),
            models.CheckConstraint(condition=Q(days__in=LAST_DAYS),
                                   name="behaviour_keyword_last_days_preset"),
        ]

    def __str__(self) -> str:
        return f"{self.keyword} over the last {self.days} days"


class ClickGrader(models.Model):
    """How a judge of provider "clicks" learns its grades: from which source, over which
    days, by which click model, how many impressions a result needs before it is graded,
    and where the learned relevance is cut into grades (behaviour.core.learned). The
    judge itself (judges.Judge) is what fills slots, shadows, is calibrated and counts."""

    class Model(models.TextChoices):
        COEC = "coec", "COEC (clicks over expected clicks)"
        PBM = "pbm", "Position-based model (EM)"

    judge = models.OneToOneField("judges.Judge", on_delete=models.CASCADE,
                                 related_name="click_grader")
    # A source is evidence its grades cite: it is not deleted while a grader reads it.
    source = models.ForeignKey(BehaviourSource, on_delete=models.PROTECT,
                               related_name="click_graders")
    click_model = models.CharField(max_length=10, choices=Model.choices)
    # The window as days, both included; none: the whole source (a CSV has no days).
    start_on = models.DateField(null=True, blank=True)
    end_on = models.DateField(null=True, blank=True)
    min_impressions = models.PositiveIntegerField(default=10)
    # n - 1 rising cut points in (0, 1) for a scale of n grades; empty: evenly spaced.
    cuts = models.JSONField(default=list, blank=True)

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(click_model__in=["coec", "pbm"]),
                                   name="click_grader_model_valid"),
            models.CheckConstraint(condition=Q(min_impressions__gte=1),
                                   name="click_grader_min_impressions_positive"),
            models.CheckConstraint(
                condition=Q(start_on__isnull=True) | Q(end_on__isnull=True)
                | Q(start_on__lte=F("end_on")), name="click_grader_window_ordered"),
        ]

    def __str__(self) -> str:
        return f"{self.judge_id}: {self.click_model} on {self.source_id}"

    @property
    def window_text(self) -> str:
        """The days it reads, in words: "all days", or "2026-03-01 to …"."""
        if self.start_on is None and self.end_on is None:
            return "all days"
        return f"{self.start_on or '…'} to {self.end_on or '…'}"


class LearnedGrade(models.Model):
    """What one learned grade rests on, beside the run item that holds it: the model, the
    window, the source and the evidence (impressions, clicks, the learned relevance). A
    result without a grade (too few impressions) has one too, with no grade."""

    item = models.OneToOneField("judges.JudgeRunItem", on_delete=models.CASCADE,
                                related_name="learned")
    source = models.ForeignKey(BehaviourSource, on_delete=models.PROTECT, related_name="+")
    click_model = models.CharField(max_length=10, choices=ClickGrader.Model.choices)
    start_on = models.DateField(null=True, blank=True)
    end_on = models.DateField(null=True, blank=True)
    min_impressions = models.PositiveIntegerField()
    impressions = models.PositiveBigIntegerField()
    clicks = models.PositiveBigIntegerField()
    relevance = models.FloatField(null=True, blank=True)
    """The estimated click-through at position 1; None: no grade."""
    grade = models.SmallIntegerField(null=True, blank=True)

    def __str__(self) -> str:
        return f"item {self.item_id}: {self.grade} ({self.clicks}/{self.impressions})"


class CollectedQuery(models.Model):
    """A search a collector source has counted, kept while events may still name it:
    what makes a re-sent query add nothing, what an event's keyword and day come from,
    and where the search's first click fell so far (docs/decisions/0023). Pruned once
    its search is older than the collector's retention."""

    source = models.ForeignKey(BehaviourSource, on_delete=models.CASCADE,
                               related_name="collected_queries")
    query_id = models.CharField(max_length=500)
    keyword = models.CharField(max_length=500)
    searched_at = models.DateTimeField()
    hit_ids = models.JSONField(default=list)
    """The results the search showed, in order (their impressions are counted)."""
    first_click = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["source", "query_id"],
                                    name="behaviour_collected_query_unique"),
        ]
        indexes = [models.Index(fields=["source", "searched_at"],
                                name="behaviour_cq_source_time")]

    def __str__(self) -> str:
        return self.query_id


class CollectedEvent(models.Model):
    """An event a collector source has counted, by its id: a re-sent event adds nothing.
    A click or impression keeps what it said, so a second click on the same result of
    the same search counts once (its longer dwell kept), as the importer counts it.
    Goes with its search (cascade) when that is pruned; an event of no known search (an
    action left out of the sums) is pruned by when it came."""

    source = models.ForeignKey(BehaviourSource, on_delete=models.CASCADE,
                               related_name="collected_events")
    event_id = models.CharField(max_length=500)
    query = models.ForeignKey(CollectedQuery, null=True, blank=True,
                              on_delete=models.CASCADE, related_name="events")
    received_at = models.DateTimeField()
    doc_id = models.CharField(max_length=500, blank=True)
    """Empty for an action left out of the sums (add_to_cart, ...)."""
    position = models.PositiveIntegerField(null=True, blank=True)
    clicked = models.BooleanField(default=False)
    dwell_seconds = models.FloatField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["source", "event_id"],
                                    name="behaviour_collected_event_unique"),
        ]
        indexes = [models.Index(fields=["source", "received_at"],
                                name="behaviour_ce_source_time")]

    def __str__(self) -> str:
        return self.event_id
