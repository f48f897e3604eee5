"""LLM judges: who they are, the runs that put them to work, every call they made, and
the answers kept so the same question is never asked twice.

A judge grades through a service account (`Judge.user`, never able to log in): it fills
feedback slots exactly as a person does (one identity per snapshot), so recompute,
agreement, progress and exports need nothing new. What only a judge has (its reason, its
runs, its calls and cost) lives here.
"""

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from evaluations.models import Evaluation, Keyword, Snapshot
from judges.core.prompts import MAX_BATCH_SIZE
from searchtweak.models import Team


class Judge(models.Model):
    class Provider(models.TextChoices):
        OPENAI = "openai", "OpenAI-compatible chat completions"
        ANTHROPIC = "anthropic", "Anthropic Messages"
        OLLAMA = "ollama", "Ollama"
        # Grades learned from a behaviour source's clicks, computed here, no HTTP
        # (behaviour.ClickGrader holds how); same slots, calibration and trust bar.
        CLICKS = "clicks", "Learned from clicks"

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="judges")
    # The identity its grades carry in slots; created with the judge, inactive, no password.
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="judge")
    name = models.CharField(max_length=100)
    provider = models.CharField(max_length=20, choices=Provider.choices)
    base_url = models.CharField(max_length=500)
    model = models.CharField(max_length=200)
    # Fernet token of the API key (judges.secrets); never shown back, only "set" or not.
    api_key_encrypted = models.TextField(blank=True, default="")
    # {scale code: template}; a scale without one uses the shipped default (judges/core).
    prompt_templates = models.JSONField(default=dict, blank=True)
    batch_size = models.PositiveSmallIntegerField(default=5)
    # Sent with every request (temperature, top_p, max_tokens...); checked by the provider.
    parameters = models.JSONField(default=dict, blank=True)
    # Same rule as graders: it gets an evaluation's work only when it carries all its tags.
    tags = models.JSONField(default=list, blank=True)
    is_active = models.BooleanField(default=True)
    # Its grades may fill slots; set only with evidence or an admin's stated reason
    # (judges.trust). The grant's record stays beside it while it counts.
    counts = models.BooleanField(default=False)
    counts_granted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="+")
    counts_granted_at = models.DateTimeField(null=True, blank=True)
    # The calibration figures and the team's thresholds when counts was granted.
    counts_evidence = models.JSONField(default=dict, blank=True)
    # Not empty: the figures fell short and an admin let it count anyway, for this reason.
    counts_override_reason = models.TextField(blank=True, default="")
    # A redirect to another origin is followed (without the key) only when this is set.
    allow_cross_origin_redirects = models.BooleanField(default=False)
    # Results' images go with the prompt (as URLs) when its template has {{images}}
    # (judges.core.prompts); OpenAI-compatible and Anthropic judges only.
    send_images = models.BooleanField(default=False)
    timeout_seconds = models.FloatField(default=60.0)
    max_retries = models.PositiveSmallIntegerField(default=3)
    # Shared by all workers (searchtweak.outbound_limits), like an endpoint's.
    max_concurrent_requests = models.PositiveSmallIntegerField(default=16)
    requests_per_minute = models.PositiveIntegerField(null=True, blank=True)
    # Optional prices, to show cost next to token totals.
    price_in_per_million = models.DecimalField(
        max_digits=10, decimal_places=4, null=True, blank=True)
    price_out_per_million = models.DecimalField(
        max_digits=10, decimal_places=4, null=True, blank=True)
    # The prices' currency (ISO 4217), shown beside every cost.
    price_currency = models.CharField(max_length=3, default="USD")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["team_id", "name"]
        constraints = [
            models.UniqueConstraint(fields=["team", "name"], name="judge_name_unique_per_team"),
            models.CheckConstraint(
                condition=Q(batch_size__gte=1, batch_size__lte=MAX_BATCH_SIZE),
                name="judge_batch_size_1_to_20"),
            models.CheckConstraint(
                condition=Q(provider__in=["openai", "anthropic", "ollama", "clicks"]),
                name="judge_provider_valid"),
        ]

    def __str__(self) -> str:
        return self.name


# The providers a judge calls over HTTP; the rest (clicks) grade in-process, made and
# configured by the app that owns them, never through the LLM judge's form.
CALLED_PROVIDERS = (Judge.Provider.OPENAI, Judge.Provider.ANTHROPIC, Judge.Provider.OLLAMA)
CALLED_PROVIDER_CHOICES = [(p.value, p.label) for p in CALLED_PROVIDERS]


class JudgeTrustPolicy(models.Model):
    """A team's bar for letting a judge's grades count (judges.trust); a team without a
    row has the defaults."""

    team = models.OneToOneField(Team, on_delete=models.CASCADE, related_name="judge_policy")
    min_pairs = models.PositiveIntegerField(default=30)
    min_kappa = models.FloatField(default=0.4)
    # The most the team's judges may spend in a calendar month (judges.budgets), in
    # monthly_budget_currency; None: no cap. There are no exchange rates: a judge priced in
    # another currency makes no call while the cap is set (judges.budgets).
    monthly_budget = models.DecimalField(max_digits=12, decimal_places=4, null=True,
                                         blank=True)
    monthly_budget_currency = models.CharField(max_length=3, default="USD")
    updated_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(min_pairs__gte=1),
                                   name="judge_policy_min_pairs_positive"),
            models.CheckConstraint(condition=Q(min_kappa__gte=-1, min_kappa__lte=1),
                                   name="judge_policy_min_kappa_in_range"),
        ]

    def __str__(self) -> str:
        return f"team {self.team_id}: {self.min_pairs} pairs, κ ≥ {self.min_kappa}"


class JudgeRun(models.Model):
    """A judge put to work on one evaluation: one item per snapshot it was asked about."""

    class Mode(models.TextChoices):
        UNGRADED = "ungraded", "Grade what is ungraded"
        FILL = "fill", "Fill the slots people left"
        SHADOW = "shadow", "Shadow: grade everything, counting nothing"

    class Status(models.TextChoices):
        RUNNING = "running", "Running"
        PAUSED = "paused", "Paused"
        CANCELLED = "cancelled", "Cancelled"
        DONE = "done", "Done"

    judge = models.ForeignKey(Judge, on_delete=models.CASCADE, related_name="runs")
    evaluation = models.ForeignKey(Evaluation, on_delete=models.CASCADE,
                                   related_name="judge_runs")
    mode = models.CharField(max_length=10, choices=Mode.choices)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.RUNNING)
    # Ask again even when the cache holds an answer.
    refresh_cache = models.BooleanField(default=False)
    started_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)
    # Totals kept by the run's tasks (F() updates), so progress is one row read.
    pair_count = models.PositiveIntegerField(default=0)
    done_count = models.PositiveIntegerField(default=0)
    failed_count = models.PositiveIntegerField(default=0)
    # Pairs a person graded before the judge got to them (counting modes): not failures.
    skipped_count = models.PositiveIntegerField(default=0)
    cached_count = models.PositiveIntegerField(default=0)
    call_count = models.PositiveIntegerField(default=0)
    tokens_in = models.PositiveBigIntegerField(default=0)
    tokens_out = models.PositiveBigIntegerField(default=0)
    # Batches that raised instead of ending in answers or failures, and lanes that died
    # holding a claim; `crash_streak` counts those since the last batch that ended well,
    # and pauses the run at JUDGE_MAX_CRASH_STREAK with `pause_reason`.
    crash_count = models.PositiveIntegerField(default=0)
    crash_streak = models.PositiveIntegerField(default=0)
    last_crash = models.TextField(blank=True, default="")
    pause_reason = models.TextField(blank=True, default="")
    # The most this run may spend at its judge's prices (judges.budgets); None: no cap.
    budget = models.DecimalField(max_digits=12, decimal_places=4, null=True, blank=True)
    # What its calls cost, from their recorded tokens, plus the estimate of the calls out
    # now (settled when they return): the budget guard's counter.
    spend = models.DecimalField(max_digits=14, decimal_places=4, default=0)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(mode__in=["ungraded", "fill", "shadow"]),
                                   name="judge_run_mode_valid"),
            models.CheckConstraint(
                condition=Q(status__in=["running", "paused", "cancelled", "done"]),
                name="judge_run_status_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.judge} on {self.evaluation_id} ({self.mode})"

    @property
    def left_count(self) -> int:
        return max(0, self.pair_count - self.done_count - self.failed_count - self.skipped_count)


class JudgeRunItem(models.Model):
    """One (run, snapshot) pair: claimed in batches with a lease, answered once."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        CLAIMED = "claimed", "Claimed"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"
        SKIPPED = "skipped", "Skipped"

    run = models.ForeignKey(JudgeRun, on_delete=models.CASCADE, related_name="items")
    snapshot = models.ForeignKey(Snapshot, on_delete=models.CASCADE, related_name="+")
    keyword = models.ForeignKey(Keyword, on_delete=models.CASCADE, related_name="+")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    # The claim's stamp: storing an answer quotes it, so a lapsed claim taken over by
    # another task writes nothing (the fetch claims' rule).
    claimed_at = models.DateTimeField(null=True, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    attempt_count = models.PositiveSmallIntegerField(default=0)
    grade = models.SmallIntegerField(null=True, blank=True)
    reason = models.TextField(blank=True, default="")
    # Why it failed: a judges.core.answers.Rejection code or a provider error, and detail.
    failure = models.CharField(max_length=30, blank=True, default="")
    failure_detail = models.TextField(blank=True, default="")
    from_cache = models.BooleanField(default=False)
    call = models.ForeignKey("JudgeCall", null=True, blank=True, on_delete=models.SET_NULL,
                             related_name="+")
    answered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["run_id", "keyword_id", "snapshot_id"]
        constraints = [
            models.UniqueConstraint(fields=["run", "snapshot"], name="judge_item_once_per_run"),
            models.CheckConstraint(
                condition=Q(status__in=["pending", "claimed", "done", "failed", "skipped"]),
                name="judge_item_status_valid"),
        ]
        indexes = [
            # A claim reads a run's pending items in pk order, LIMIT a few batches: with
            # the pk in the index that is a walk from the first pending one, where (run,
            # status) alone sorted every pending item on each claim (10,000 a run).
            models.Index(fields=["run", "status", "id"], name="judge_item_claim_order_idx"),
            models.Index(fields=["snapshot", "status"], name="judge_item_snapshot_idx"),
        ]

    def __str__(self) -> str:
        return f"run {self.run_id} snapshot {self.snapshot_id} ({self.status})"


class JudgeCall(models.Model):
    """One HTTP attempt to a model (a retried call is several rows), key redacted."""

    judge = models.ForeignKey(Judge, on_delete=models.CASCADE, related_name="calls")
    run = models.ForeignKey(JudgeRun, null=True, blank=True, on_delete=models.CASCADE,
                            related_name="calls")
    # "ok", or what went wrong: "http_error", "rate_limited", "timeout", "unreachable",
    # "malformed" (unreadable answer), "refused" (the outbound policy); "in_flight" while
    # the attempt is out, left so when its worker died (the call was made, so it counts).
    status = models.CharField(max_length=20)
    http_status = models.PositiveSmallIntegerField(null=True, blank=True)
    started_at = models.DateTimeField(default=timezone.now)
    latency_ms = models.PositiveIntegerField(default=0)
    tokens_in = models.PositiveIntegerField(null=True, blank=True)
    tokens_out = models.PositiveIntegerField(null=True, blank=True)
    pair_count = models.PositiveSmallIntegerField(default=0)
    # judges.core.redaction.redacted(request): method, url, headers, body; no secret.
    request = models.JSONField(default=dict)
    answer = models.TextField(blank=True, default="")
    error = models.TextField(blank=True, default="")
    # A Test action's call (sample pairs, no run).
    is_test = models.BooleanField(default=False)

    class Meta:
        ordering = ["-started_at", "-id"]
        indexes = [
            models.Index(fields=["judge", "started_at"], name="judge_call_judge_time_idx"),
            models.Index(fields=["run", "started_at"], name="judge_call_run_time_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.judge_id} {self.status} {self.started_at:%Y-%m-%d %H:%M:%S}"


class JudgeAnswer(models.Model):
    """The cache: one answer per judges.core.cache.cache_key (keyword, document fields,
    prompt, provider, model, parameters). A re-run or another evaluation reuses it."""

    key = models.CharField(max_length=64, unique=True)
    judge = models.ForeignKey(Judge, null=True, blank=True, on_delete=models.SET_NULL,
                              related_name="+")
    grade = models.SmallIntegerField()
    reason = models.TextField()
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"{self.key[:12]} = {self.grade}"


class JudgeTeamSpend(models.Model):
    """What a team's judge runs spent in one calendar month (the first day names it), the
    counter the monthly budget is checked against (judges.budgets), kept like
    JudgeRun.spend."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    month_on = models.DateField()
    # One counter per currency: sums of prices in different currencies mean nothing.
    currency = models.CharField(max_length=3, default="USD")
    spend = models.DecimalField(max_digits=14, decimal_places=4, default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["team", "month_on", "currency"],
                                    name="judge_team_spend_once_a_month_per_currency"),
        ]

    def __str__(self) -> str:
        return f"team {self.team_id} {self.month_on:%Y-%m}: {self.spend} {self.currency}"
