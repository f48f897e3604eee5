"""Everything the pipeline "grades → stored values" keeps, owned and written by this app
alone (docs/ARCHITECTURE.md, the recompute pipeline): each keyword's version and dirty mark,
the values per keyword and configured metric, each metric's mean and keyword count, the
evaluation's grading progress and recompute error, and the history of the means.

Other apps read these tables (the evaluations pages show means and progress) but never
write them. A keyword, metric or evaluation with no row here has the defaults: version 0,
clean; no mean, no keyword counted; progress 0 and no error. Rows appear with the first
write, as upserts, so nothing has to create them when keywords or metrics are created.
"""

from django.db import models
from django.db.models import F, Q
from django.utils import timezone

from evaluations.models import Evaluation, EvaluationMetric, Keyword


class KeywordRecomputeMark(models.Model):
    """A keyword's recompute bookkeeping: every grade change bumps `version` and sets
    `dirty_since`; a recompute stores the version it read in `computed_version` and clears
    `dirty_since` only when no newer grade arrived meanwhile (metrics.recompute.marks)."""

    keyword = models.OneToOneField(
        Keyword, on_delete=models.CASCADE, primary_key=True, related_name="recompute_mark")
    # The keyword's evaluation, repeated so that "the dirty keywords of an evaluation",
    # asked after every grade, reads this table alone.
    evaluation = models.ForeignKey(Evaluation, on_delete=models.CASCADE, related_name="+")
    version = models.PositiveIntegerField(default=0)
    computed_version = models.PositiveIntegerField(default=0)
    dirty_since = models.DateTimeField(null=True, blank=True, db_index=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(computed_version__lte=F("version")),
                name="keyword_mark_computed_not_ahead",
            ),
        ]
        indexes = [models.Index(fields=["evaluation", "dirty_since"],
                                name="keyword_mark_dirty_idx")]

    def __str__(self) -> str:
        return f"keyword {self.keyword_id} v{self.version} (computed v{self.computed_version})"


class MetricMean(models.Model):
    """The evaluation's value of one configured metric: the mean over its keywords with a
    value (docs/METRICS.md), how many keywords that is, and when the recompute wrote it."""

    metric = models.OneToOneField(
        EvaluationMetric, on_delete=models.CASCADE, primary_key=True, related_name="stored_mean")
    value = models.FloatField(null=True, blank=True)
    keyword_count = models.PositiveIntegerField(default=0)
    # Bounds under missing grades (docs/METRICS.md): the means of the keywords' non-null
    # lower and upper bounds; bounds_exact False when some keyword's are wider (labelled).
    lower = models.FloatField(null=True, blank=True)
    upper = models.FloatField(null=True, blank=True)
    bounds_exact = models.BooleanField(default=True)
    updated_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.metric_id} = {self.value} over {self.keyword_count}"


class MetricSums(models.Model):
    """Exact running sums of one configured metric's stored keyword values, kept with every
    write of them (metrics.recompute.means), so the means refresh does not read every value
    after every grade. Totals are the values' exact sum in units of 2**-1074, an int as
    hexadecimal text (metrics_engine.exact_sum): exact on every database, and never summed
    in SQL. The counts are of non-null values; inexact_count of keywords whose bounds are
    not exact.

    No row: not known. The next means refresh reads every value and writes it; deleting
    keywords deletes it (metrics.receivers), and recompute_metrics rebuilds it."""

    metric = models.OneToOneField(
        EvaluationMetric, on_delete=models.CASCADE, primary_key=True, related_name="+")
    value_total = models.TextField(default="0")
    value_count = models.PositiveIntegerField(default=0)
    lower_total = models.TextField(default="0")
    lower_count = models.PositiveIntegerField(default=0)
    upper_total = models.TextField(default="0")
    upper_count = models.PositiveIntegerField(default=0)
    inexact_count = models.PositiveIntegerField(default=0)

    def __str__(self) -> str:
        return f"sums of {self.metric_id} over {self.value_count}"


class SegmentSums(models.Model):
    """Exact running sums of one configured metric's stored keyword values over one
    segment (a tag, or "" for every keyword), plain or traffic-weighted
    (metrics_engine.segment_sums), moved with every write of the values
    (metrics.recompute.segments). A segment's mean and bounds are read from them.

    Known for a metric while its plain every-keyword row exists (the marker): then a row
    missing for a tag means no keyword of that tag has counted yet. Forgotten with the
    metric's MetricSums and rebuilt from every value by the next means refresh."""

    metric = models.ForeignKey(EvaluationMetric, on_delete=models.CASCADE, related_name="+",
                               db_index=False)
    segment = models.CharField(max_length=50, blank=True)
    weighted = models.BooleanField()
    value_total = models.TextField(default="0")
    value_count = models.PositiveIntegerField(default=0)
    value_weight = models.PositiveBigIntegerField(default=0)
    lower_total = models.TextField(default="0")
    lower_weight = models.PositiveBigIntegerField(default=0)
    upper_total = models.TextField(default="0")
    upper_weight = models.PositiveBigIntegerField(default=0)
    inexact_count = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["metric", "segment", "weighted"],
                                    name="segment_sums_unique"),
        ]

    def __str__(self) -> str:
        kind = "weighted" if self.weighted else "plain"
        return f"{kind} sums of {self.metric_id} over {self.segment or 'every keyword'}"


class EvaluationRecomputeState(models.Model):
    """An evaluation's grading progress (share of its slots that hold a grade, 0..100) and
    the last recompute's error, if it failed."""

    evaluation = models.OneToOneField(
        Evaluation, on_delete=models.CASCADE, primary_key=True, related_name="recompute_state")
    progress = models.FloatField(default=0.0)
    recompute_error = models.TextField(blank=True, default="")

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(progress__gte=0) & Q(progress__lte=100),
                name="evaluation_state_progress_percent",
            ),
        ]

    def __str__(self) -> str:
        return f"evaluation {self.evaluation_id}: {self.progress:.1f} % graded"


class KeywordMetricValue(models.Model):
    # No index of their own: keyword_metric_value_unique leads with the keyword and
    # kmv_metric_value_kw_idx with the metric, and each index costs every one of the
    # 600,000 rows a recompute of 100,000 keywords writes.
    keyword = models.ForeignKey(Keyword, on_delete=models.CASCADE, related_name="metric_values",
                                db_index=False)
    metric = models.ForeignKey(
        EvaluationMetric, on_delete=models.CASCADE, related_name="keyword_values",
        db_index=False,
    )
    # Null: the metric is undefined for this keyword (nothing graded, no results, ...).
    value = models.FloatField(null=True, blank=True)
    # Where the value can still go once every slot is graded (docs/METRICS.md, bounds);
    # bounds_exact False: wider sound bounds, which the pages and the API say.
    lower = models.FloatField(null=True, blank=True)
    upper = models.FloatField(null=True, blank=True)
    bounds_exact = models.BooleanField(default=True)
    # The keyword version whose grades produced this value.
    computed_version = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["keyword", "metric"], name="keyword_metric_value_unique"
            ),
        ]
        # The per-keyword table sorted by a metric walks this, forwards or backwards (ties
        # in keyword order, reversed when descending), instead of sorting every keyword
        # (metrics.reports.keyword_table.MetricOrder). No descending twin: it cost every
        # value write.
        indexes = [models.Index(fields=["metric", "value", "keyword"],
                                name="kmv_metric_value_kw_idx")]

    def __str__(self) -> str:
        return f"{self.metric} of {self.keyword_id} = {self.value}"


class KeywordQueueWidth(models.Model):
    """How unsettled a keyword is, for the decisive grading queue (metrics.queue_order):
    the width (upper - lower) of its stored bounds of its evaluation's first metric,
    queue_order.UNKNOWN_WIDTH when they are null. Written by the recompute with the values
    it derives from (queries.keyword_queue_widths_store), so a claim finds the widest
    keywords by an index scan instead of sorting every keyword's bounds."""

    keyword = models.OneToOneField(Keyword, on_delete=models.CASCADE, primary_key=True,
                                   related_name="+")
    # No index of its own: kqw_evaluation_width_idx starts with it.
    evaluation = models.ForeignKey(Evaluation, on_delete=models.CASCADE, related_name="+",
                                   db_index=False)
    # The keyword's position, copied: ties between equally wide keywords go in keyword
    # order, inside the index.
    keyword_position = models.PositiveIntegerField()
    width = models.FloatField()

    class Meta:
        indexes = [models.Index(fields=["evaluation", "-width", "keyword_position"],
                                name="kqw_evaluation_width_idx")]

    def __str__(self) -> str:
        return f"queue width of {self.keyword_id} = {self.width}"


class MetricHistoryPoint(models.Model):
    """The evaluation's mean of one metric after a burst of recomputes."""

    metric = models.ForeignKey(EvaluationMetric, on_delete=models.CASCADE, related_name="history")
    value = models.FloatField(null=True, blank=True)
    keyword_count = models.PositiveIntegerField(default=0)
    recorded_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        ordering = ["metric_id", "recorded_at"]

    def __str__(self) -> str:
        return f"{self.metric} = {self.value} at {self.recorded_at:%Y-%m-%d %H:%M:%S}"


class TeamBaseline(models.Model):
    """The finished evaluation a team compares its other evaluations against.

    It lives here rather than on searchtweak.Team because searchtweak may not know about
    evaluations (docs/ARCHITECTURE.md dependency direction).
    """

    team = models.OneToOneField(
        "searchtweak.Team", on_delete=models.CASCADE, related_name="metric_baseline"
    )
    evaluation = models.ForeignKey(
        "evaluations.Evaluation", on_delete=models.CASCADE, related_name="+"
    )
    set_by = models.ForeignKey(
        "searchtweak.User", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    set_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"baseline of {self.team_id}: {self.evaluation_id}"


class RecomputeDue(models.Model):
    """A recompute run answers for the evaluation's grades (metrics.tasks): one queued for
    `due_at`, or one running since then. Null: none.

    Such a run reads every keyword dirty when it starts, and when it ends queues the next
    run if a keyword is still dirty, or lifts the mark and then looks once more. So a grade
    that sees the mark needs no task of its own (metrics.receivers): while an evaluation is
    being graded, one run every short while reads them all.
    """

    evaluation = models.OneToOneField(
        "evaluations.Evaluation", on_delete=models.CASCADE, primary_key=True, related_name="+"
    )
    due_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"recompute of {self.evaluation_id} due at {self.due_at}"


class RegressionVerdict(models.Model):
    """A run against its baseline, per metric and overall (metrics.reports.verdicts): stored for
    every finished evaluation of a team with a baseline, and for every gate call."""

    class Verdict(models.TextChoices):
        REGRESSED = "regressed", "Regressed"
        IMPROVED = "improved", "Improved"
        NO_CHANGE = "no_change", "No change"
        UNDECIDED = "undecided", "Undecided"

    class Source(models.TextChoices):
        FINISHED = "finished", "Evaluation finished"
        GATE = "gate", "Gate (API)"
        COMMAND = "command", "manage.py evaluate"
        SCHEDULE = "schedule", "Scheduled run finished"

    # The sources whose rule stands for the evaluation: the team's rule when it finished,
    # or its schedule's for a schedule's run (which gets no other on finish). A gate or a
    # command is someone's ad-hoc rule: listed, never shown as the evaluation's verdict.
    STANDING_SOURCES = (Source.SCHEDULE, Source.FINISHED)
    RULE_OWNERS = {Source.FINISHED: "the team's rule", Source.SCHEDULE: "the schedule's rule",
                   Source.GATE: "an ad-hoc gate call", Source.COMMAND: "manage.py evaluate --gate"}

    evaluation = models.ForeignKey(
        "evaluations.Evaluation", on_delete=models.CASCADE, related_name="regression_verdicts"
    )
    # The baseline may be deleted later; the verdict and the baseline's name stay.
    baseline = models.ForeignKey(
        "evaluations.Evaluation", null=True, blank=True, on_delete=models.SET_NULL,
        related_name="+"
    )
    baseline_name = models.CharField(max_length=200, blank=True)
    verdict = models.CharField(max_length=10, choices=Verdict.choices)
    # The overall reason first, then one line per metric, then what was not compared.
    reasons = models.JSONField(default=list)
    # Per compared metric: label, code, k, params, verdict, mean_delta, ci, p, p_adjusted,
    # coverage, counts and the worst keywords.
    metrics = models.JSONField(default=list)
    rule = models.JSONField(default=dict)
    source = models.CharField(max_length=10, choices=Source.choices)
    created_by = models.ForeignKey(
        "searchtweak.User", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["evaluation", "-created_at"],
                                name="verdict_evaluation_idx")]

    def __str__(self) -> str:
        return f"{self.evaluation_id} vs {self.baseline_id}: {self.verdict}"

    @property
    def standing(self) -> bool:
        return self.source in self.STANDING_SOURCES

    @property
    def rule_text(self) -> str:
        """Who decided and by which rule, in words: "the schedule's rule: coverage ≥ 70 %,
        ≥ 5 shared keywords, alpha 0.05, any change"."""
        from metrics_engine.verdicts import VerdictRule

        owner = self.RULE_OWNERS.get(self.source, self.source)
        fields = {name: self.rule[name] for name in VerdictRule().as_dict()
                  if isinstance(self.rule, dict) and name in self.rule}
        try:
            text = f"{owner}: {VerdictRule(**fields).text}"
        except (TypeError, ValueError):
            text = owner
        metrics = self.rule.get("metrics") if isinstance(self.rule, dict) else None
        if metrics:
            text += f"; metrics {', '.join(str(name) for name in metrics)}"
        return text


class KeywordDashboardShare(models.Model):
    """What one keyword adds to its evaluation's DashboardCount rows, as {key: count}: its
    snapshots' grade patterns and the histogram bin of each of its metric values. Written
    by the recompute with the values (metrics.recompute.aggregates), which subtracts the
    stored share and adds the new one, so the dashboard reads a few counts instead of
    every slot and value."""

    keyword = models.OneToOneField(Keyword, on_delete=models.CASCADE, primary_key=True,
                                   related_name="+")
    evaluation = models.ForeignKey(Evaluation, on_delete=models.CASCADE, related_name="+")
    counts = models.JSONField(default=dict)

    def __str__(self) -> str:
        return f"dashboard share of {self.keyword_id}"


class DashboardCount(models.Model):
    """One count of the evaluation dashboard, summed over the evaluation's keywords'
    shares (KeywordDashboardShare). Keys (metrics.recompute.aggregates): "p:<slots>:
    <graded>:<lowest>:<highest>:<sum>" snapshots with that grade pattern; "b:<metric id>:
    <bin>" keywords whose value of the metric is in that tenth of [0, 1] (-1: outside it);
    "built": the counts cover every keyword (else the page counts from scratch)."""

    evaluation = models.ForeignKey(Evaluation, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=80)
    count = models.BigIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["evaluation", "key"],
                                               name="dashboard_count_unique")]

    def __str__(self) -> str:
        return f"{self.evaluation_id} {self.key} = {self.count}"
