"""Evaluations and their configured metrics.

The shape shared with judgments (slots hang off Snapshot) and metrics (values hang off
Keyword and EvaluationMetric) is fixed here and in models.keywords; extend it, don't
rename it.
"""

from django.conf import settings
from django.db import models
from django.db.models import F, Q, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

import metrics_engine as core
from evaluations.models.endpoints import SearchModel
from evaluations.models.team_owned import TeamOwnedQuerySet
from evaluations.strategies import (
    ADAPTIVE_STRATEGY,
    STRATEGY_CHOICES,
    STRATEGY_VALUES,
    strategy_slot_counts,
    strategy_text,
)
from searchtweak.models import Team


class EvaluationQuerySet(TeamOwnedQuerySet):
    def taking_grades(self) -> "EvaluationQuerySet":
        """The evaluations that take grades now (Evaluation.status_takes_grades)."""
        return self.filter(status__in=[status for status in Evaluation.Status.values
                                       if Evaluation.status_takes_grades(status)])

    def with_recompute_state(self) -> "EvaluationQuerySet":
        """Annotate `progress` (share of slots graded, 0..100) and `recompute_error`.

        The metrics app keeps and alone writes them (metrics.EvaluationRecomputeState, no
        row until its first recompute); evaluations reads them by relation name to show
        them, so it imports nothing of metrics."""
        return self.annotate(
            progress=Coalesce(F("recompute_state__progress"), Value(0.0),
                              output_field=models.FloatField()),
            recompute_error=Coalesce(F("recompute_state__recompute_error"), Value(""),
                                     output_field=models.TextField()),
        )


class EvaluationMetricQuerySet(models.QuerySet):
    def with_stored_mean(self) -> "EvaluationMetricQuerySet":
        """Annotate `value` (the evaluation's mean of this metric), `keyword_count`, the
        mean's bounds `lower`, `upper` and `bounds_exact`, and `updated_at`, kept and
        written by the metrics app alone (metrics.MetricMean, no row until the first
        recompute): read here by relation name, as with_recompute_state."""
        return self.annotate(
            value=F("stored_mean__value"),
            keyword_count=Coalesce(F("stored_mean__keyword_count"), Value(0),
                                   output_field=models.IntegerField()),
            lower=F("stored_mean__lower"),
            upper=F("stored_mean__upper"),
            bounds_exact=Coalesce(F("stored_mean__bounds_exact"), Value(True),
                                  output_field=models.BooleanField()),
            updated_at=F("stored_mean__updated_at"),
        )


class Evaluation(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        FETCHING = "fetching", "Fetching"
        ACTIVE = "active", "Active"
        FINISHED = "finished", "Finished"

    class Reuse(models.TextChoices):
        NONE = "none", "Do not reuse earlier grades"
        DOCUMENT = "document", "Same keyword and document"
        POSITION = "position", "Same keyword, document and position"

    class GradingOrder(models.TextChoices):
        POSITION = "position", "Keyword and position order"
        DECISIVE = "decisive", "Grade what decides first"

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="evaluations")
    model = models.ForeignKey(SearchModel, on_delete=models.PROTECT, related_name="evaluations")
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True, default="")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    # "binary", "graded", "detail" (metrics_engine built-ins) or a team scale's code.
    scale = models.CharField(max_length=50)
    strategy = models.PositiveSmallIntegerField(choices=STRATEGY_CHOICES)
    # Overrides of the default transformers: {"graded->binary": {"0": 0, ...}, ...}.
    transformers = models.JSONField(default=dict, blank=True)
    tags = models.JSONField(default=list, blank=True)
    guidelines = models.TextField(blank=True, default="")
    reuse_grades = models.CharField(max_length=10, choices=Reuse.choices, default=Reuse.NONE)
    auto_finish = models.BooleanField(default=True)
    show_position = models.BooleanField(default=False)
    # Hand each grader a keyword's results in their own random order (stable for them) and
    # hide the engine's rank, so calibration can tell position bias.
    shuffle_results = models.BooleanField(default=False)
    # "decisive": the queue hands out first the slots whose grade can narrow the widest
    # metric bounds most (judgments.queries, decisive order).
    grading_order = models.CharField(max_length=10, choices=GradingOrder.choices,
                                     default=GradingOrder.POSITION)
    # The share of a grader's claims that hand out a gold item instead of a slot
    # (judgments.gold): their grades measure the grader and never enter metrics.
    gold_rate = models.FloatField(default=0.05)
    # Under "1 → 3": a result whose every grade so far comes from graders below the team's
    # gold bar opens a further slot (judgments.adaptive, reason LOW_GOLD), so a grader who
    # fails the gold items never decides a result alone.
    second_grader_below_gold_bar = models.BooleanField(default=False)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="+",
    )
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    archived_at = models.DateTimeField(null=True, blank=True)
    # When fetch tasks for its keywords were last handed to the broker (or tried to be):
    # the sweep sends again the pending keywords no task has claimed long after it
    # (fetching.dispatch.keywords_fetch_requeue_lapsed), as after a send the broker refused.
    fetch_sent_at = models.DateTimeField(null=True, blank=True)
    # --- query sets ---
    # The query set version whose keywords this evaluation was created with (null: typed or
    # uploaded keywords). PROTECT: an evaluation keeps saying which version it ran, so a
    # version is never deleted while an evaluation refers to it.
    query_set_version = models.ForeignKey(
        "QuerySetVersion", null=True, blank=True, on_delete=models.PROTECT,
        related_name="evaluations",
    )
    # --- end query sets ---

    objects = EvaluationQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(strategy__in=STRATEGY_VALUES), name="evaluation_strategy_known"
            ),
            models.CheckConstraint(
                condition=Q(gold_rate__gte=0) & Q(gold_rate__lte=0.5),
                name="evaluation_gold_rate_0_to_half",
            ),
            # A further slot exists only under "1 → 3"; elsewhere the option would do nothing.
            models.CheckConstraint(
                condition=Q(second_grader_below_gold_bar=False) | Q(strategy=ADAPTIVE_STRATEGY),
                name="evaluation_second_grader_needs_adaptive",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def max_slots(self) -> int:
        """The most slots a result of this evaluation can have (3 for "1 → 3")."""
        return strategy_slot_counts(self.strategy)[1]

    @property
    def is_adaptive(self) -> bool:
        return self.strategy == ADAPTIVE_STRATEGY

    @property
    def strategy_text(self) -> str:
        return strategy_text(self.strategy)

    def has_started(self) -> bool:
        """Scale, strategy and transformers freeze at the first start."""
        return self.started_at is not None

    @classmethod
    def status_takes_grades(cls, status: str) -> bool:
        """Whether an evaluation in `status` takes grades, from people, judges, reuse and
        imports alike: only while active (before, its results are not all fetched; once
        finished, its grades are frozen). For callers that read the status alone."""
        return status == cls.Status.ACTIVE

    def takes_grades(self) -> bool:
        return self.status_takes_grades(self.status)


class EvaluationMetric(models.Model):
    """One configured metric of an evaluation: code + k + params (see docs/METRICS.md)."""

    # The k column's range (a small integer); every path that configures metrics checks it.
    K_MAX = 32_767

    evaluation = models.ForeignKey(
        Evaluation, on_delete=models.CASCADE, related_name="metric_configs"
    )
    code = models.CharField(max_length=20)
    k = models.PositiveSmallIntegerField()
    params = models.JSONField(default=dict, blank=True)
    position = models.PositiveSmallIntegerField(default=0)

    objects = EvaluationMetricQuerySet.as_manager()

    class Meta:
        ordering = ["evaluation_id", "position", "id"]
        constraints = [
            models.CheckConstraint(condition=Q(k__gte=1), name="evaluation_metric_k_positive"),
        ]

    def __str__(self) -> str:
        return core.metric_code_at_k(self.code, self.k)
