"""Schedules ("watches"): a search model re-evaluated over a query set at due times.

Each due time makes one run, an evaluation (ScheduleRun links the two). The schedule's
`next_due_at` is what the tick claims: a conditional UPDATE from the value it read to the
next due time, so two beat processes, or a beat and a restart, fire each due time once
(schedules.firing). The tables keep the names they had in the evaluations app.
"""

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from evaluations.strategies import STRATEGY_CHOICES, STRATEGY_VALUES, strategy_text
from searchtweak.models import Team


class ScheduleQuerySet(models.QuerySet):
    def visible_to(self, user) -> "ScheduleQuerySet":
        if not user.is_authenticated:
            return self.none()
        return self.filter(team__memberships__user=user)


class Schedule(models.Model):
    class Baseline(models.TextChoices):
        TEAM = "team", "The team's baseline"
        FIRST = "first", "The schedule's first run"
        PREVIOUS = "previous", "The previous run"

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="schedules")
    model = models.ForeignKey("evaluations.SearchModel", on_delete=models.PROTECT,
                              related_name="schedules")
    name = models.CharField(max_length=200)
    query_set = models.ForeignKey("evaluations.KeywordSet", on_delete=models.PROTECT,
                                  related_name="schedules")
    scale = models.CharField(max_length=50)
    strategy = models.PositiveSmallIntegerField(choices=STRATEGY_CHOICES)
    # [{"code", "k", "params"}], as an evaluation's metric configuration is created from.
    metrics = models.JSONField(default=list)
    # Exactly one of the two: every this many minutes, or a cron expression.
    interval_minutes = models.PositiveIntegerField(null=True, blank=True)
    cron = models.CharField(max_length=100, blank=True, default="")
    # The IANA zone the cron expression's hours and days are read in.
    time_zone = models.CharField(max_length=64, default="UTC")
    # A run finishes when every slot is graded, or this long after it started with what
    # is graded by then.
    deadline_hours = models.PositiveIntegerField(default=24)
    # Counting judges that grade each run's new pairs (judges.Judge ids, checked by
    # schedules.run_judges.counting_judges when saved).
    judge_ids = models.JSONField(default=list, blank=True)
    baseline = models.CharField(max_length=10, choices=Baseline.choices, default=Baseline.TEAM)
    # The verdict rule: share of keywords with a value below which a run is undecided, and
    # the absolute change a mean must exceed to count (None: any significant change).
    min_coverage = models.FloatField(default=0.90)
    threshold = models.FloatField(null=True, blank=True)
    # ...the tags whose keywords are also judged apart (segments, in order) and whether the
    # traffic-weighted means are judged too (metrics_engine.verdicts.VerdictRule).
    segments = models.JSONField(default=list, db_default=[], blank=True)
    weighted = models.BooleanField(default=False, db_default=False)
    # Runs kept in the lists; older ones are archived (never deleted).
    keep_runs = models.PositiveIntegerField(default=10)

    next_due_at = models.DateTimeField(null=True, blank=True)
    paused_at = models.DateTimeField(null=True, blank=True)
    paused_reason = models.CharField(max_length=300, blank=True, default="")
    # Runs in a row whose fetch failed for every keyword; 3 pause the schedule.
    failed_run_streak = models.PositiveSmallIntegerField(default=0)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)

    objects = ScheduleQuerySet.as_manager()

    class Meta:
        db_table = "evaluations_schedule"
        ordering = ["name", "id"]
        indexes = [
            # The tick's one read: the due schedules that are not paused.
            models.Index(fields=["next_due_at"], condition=Q(paused_at__isnull=True),
                         name="schedule_due_unpaused"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=(Q(interval_minutes__isnull=False, cron="")
                           | Q(interval_minutes__isnull=True) & ~Q(cron="")),
                name="schedule_interval_or_cron"),
            models.CheckConstraint(condition=Q(strategy__in=STRATEGY_VALUES),
                                   name="schedule_strategy_known"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def strategy_text(self) -> str:
        return strategy_text(self.strategy)

    @property
    def is_paused(self) -> bool:
        return self.paused_at is not None

    def when_text(self) -> str:
        if self.interval_minutes:
            minutes = self.interval_minutes
            for size, unit in ((1440, "day"), (60, "hour")):
                if minutes % size == 0:
                    count = minutes // size
                    return f"every {unit}" if count == 1 else f"every {count} {unit}s"
            return f"every {minutes} minutes"
        return f"cron “{self.cron}” ({self.time_zone})"


class ScheduleRun(models.Model):
    """One due time of a schedule and the evaluation it made."""

    schedule = models.ForeignKey(Schedule, on_delete=models.CASCADE, related_name="runs")
    evaluation = models.OneToOneField("evaluations.Evaluation", on_delete=models.CASCADE,
                                      related_name="schedule_run")
    due_at = models.DateTimeField()
    deadline_at = models.DateTimeField()
    created_at = models.DateTimeField(default=timezone.now)
    # Whether the fetch failed for every keyword (counted in the schedule's streak).
    fetch_failed = models.BooleanField(default=False)

    class Meta:
        db_table = "evaluations_schedulerun"
        ordering = ["-due_at", "-id"]
        constraints = [
            # A second guard behind the claim: one run per due time, whatever happens.
            models.UniqueConstraint(fields=["schedule", "due_at"],
                                    name="schedule_run_once_per_due_time"),
        ]
        indexes = [models.Index(fields=["deadline_at"], name="schedule_run_deadline")]

    def __str__(self) -> str:
        return f"{self.schedule_id} @ {self.due_at:%Y-%m-%d %H:%M}"
