"""Endpoints, search models, evaluations, their keywords and the fetched snapshots.

The shape shared with judgments (slots hang off Snapshot) and metrics (values hang off
Keyword and EvaluationMetric) is fixed here; extend it, don't rename it.
"""

from django.conf import settings
from django.db import models
from django.db.models import F, Q, Value
from django.db.models.functions import Coalesce, Lower
from django.utils import timezone

import metrics_engine as core
from evaluations.strategies import (
    ADAPTIVE_STRATEGY,
    STRATEGY_CHOICES,
    STRATEGY_VALUES,
    strategy_slot_counts,
    strategy_text,
)
from searchtweak.models import Team, User


class TeamOwnedQuerySet(models.QuerySet):
    def visible_to(self, user: User) -> "TeamOwnedQuerySet":
        if not user.is_authenticated:
            return self.none()
        return self.filter(team__memberships__user=user)


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


class Endpoint(models.Model):
    """A search engine's HTTP API and how to read documents out of its JSON answer."""

    class Method(models.TextChoices):
        GET = "GET"
        POST = "POST"
        PUT = "PUT"

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="endpoints")
    name = models.CharField(max_length=100)
    url = models.URLField(max_length=2000)
    method = models.CharField(max_length=4, choices=Method.choices, default=Method.GET)
    headers = models.JSONField(default=dict, blank=True)
    # JSON {header: value} encrypted with a key derived from SECRET_KEY; never shown back.
    secret_headers_encrypted = models.TextField(blank=True, default="")
    timeout_seconds = models.FloatField(default=10.0)
    # {"documents": <JMESPath>, "id": …, "name": …, "image": … or null, "fields": {label: …}}
    mapper = models.JSONField(default=dict)
    # Limits shared by every worker (searchtweak.outbound_limits); null: no limit.
    max_concurrent_requests = models.PositiveIntegerField(null=True, blank=True, default=16)
    requests_per_minute = models.PositiveIntegerField(null=True, blank=True)
    # Off: a redirect to another origin is an error. On: followed, without any header set
    # here (plain or secret), so credentials never leave the endpoint's own origin.
    allow_cross_origin_redirects = models.BooleanField(default=False)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="+",
    )
    created_at = models.DateTimeField(default=timezone.now)
    archived_at = models.DateTimeField(null=True, blank=True)

    objects = TeamOwnedQuerySet.as_manager()

    class Meta:
        ordering = ["name", "id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(timeout_seconds__gt=0), name="endpoint_timeout_positive"
            ),
            models.CheckConstraint(
                condition=Q(max_concurrent_requests__isnull=True)
                | Q(max_concurrent_requests__gte=1),
                name="endpoint_max_concurrent_requests_positive",
            ),
            models.CheckConstraint(
                condition=Q(requests_per_minute__isnull=True) | Q(requests_per_minute__gte=1),
                name="endpoint_requests_per_minute_positive",
            ),
        ]

    def __str__(self) -> str:
        return self.name


class SearchModel(models.Model):
    """One way of querying an endpoint: params, body and headers with #query# in them."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="search_models")
    endpoint = models.ForeignKey(Endpoint, on_delete=models.PROTECT, related_name="models")
    name = models.CharField(max_length=100)
    description = models.TextField(blank=True, default="")
    class BodyFormat(models.TextChoices):
        JSON = "json", "JSON"
        FORM = "form", "Form (application/x-www-form-urlencoded)"

    params = models.JSONField(default=dict, blank=True)
    body = models.TextField(null=True, blank=True)  # noqa: DJ001 (null = no body, "" = empty body)
    # How #query# is escaped in the body, and the Content-Type sent with it.
    body_format = models.CharField(
        max_length=4, choices=BodyFormat.choices, default=BodyFormat.JSON
    )
    headers = models.JSONField(default=dict, blank=True)
    # Headers with sensitive names (Authorization, X-Api-Key, …), encrypted as an
    # endpoint's secret headers are (evaluations.crypto), shown back masked.
    secret_headers_encrypted = models.TextField(blank=True, default="")
    default_keywords = models.TextField(blank=True, default="")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="+",
    )
    created_at = models.DateTimeField(default=timezone.now)
    archived_at = models.DateTimeField(null=True, blank=True)

    objects = TeamOwnedQuerySet.as_manager()

    class Meta:
        ordering = ["name", "id"]

    def __str__(self) -> str:
        return self.name


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
    # (services.fetch.keywords_fetch_requeue_lapsed), as after a send the broker refused.
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
    fetch_status = models.CharField(
        max_length=10, choices=FetchStatus.choices, default=FetchStatus.PENDING
    )
    fetch_status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    fetch_duration_ms = models.PositiveIntegerField(null=True, blank=True)
    fetch_error = models.TextField(blank=True, default="")
    fetched_at = models.DateTimeField(null=True, blank=True)
    # Set by the fetch task that claimed the keyword (a conditional UPDATE), and the claim
    # itself: the task quotes it to store the keyword. A claim older than the endpoint's
    # requests can take (fetching.fetch_claim_lease_seconds) belongs to a worker that died
    # and may be taken over.
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


class DemoProduct(models.Model):
    """One product of the built-in demo catalog that /demo/search ranks (evaluations.demo)."""

    sku = models.CharField(max_length=20, unique=True)
    title = models.CharField(max_length=200)
    description = models.TextField()
    category = models.CharField(max_length=60)
    brand = models.CharField(max_length=60)
    price = models.DecimalField(max_digits=8, decimal_places=2)
    color = models.CharField(max_length=20)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return self.title


# --- query sets: a team's named, versioned keyword lists -------------------------


class QuerySet(models.Model):
    """A team's named, reusable keyword list. Its keywords live in versions: editing the
    list adds a version, the newest is the current one, and an evaluation created from the
    set records the version it ran (Evaluation.query_set_version). Archived, never deleted
    by the pages or the API."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="query_sets")
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True, default="")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="+",
    )
    created_at = models.DateTimeField(default=timezone.now)
    archived_at = models.DateTimeField(null=True, blank=True)

    objects = TeamOwnedQuerySet.as_manager()

    class Meta:
        ordering = ["name", "id"]
        constraints = [
            # Case-insensitive, among the sets in use: an archived set frees its name.
            models.UniqueConstraint(
                Lower("name"), "team", condition=Q(archived_at__isnull=True),
                name="query_set_name_unique_per_team",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def current_version(self) -> "QuerySetVersion | None":
        return self.versions.order_by("-number").first()


class QuerySetVersion(models.Model):
    """One state of a query set's keyword list, numbered 1..n; never changed once written."""

    query_set = models.ForeignKey(QuerySet, on_delete=models.CASCADE, related_name="versions")
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
