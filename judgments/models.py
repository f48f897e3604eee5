"""Scales, transformers and feedback slots: what a grade is and where it is stored."""

from datetime import timedelta

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from evaluations.models import Evaluation, Keyword, Snapshot
from searchtweak.models import Team


class Scale(models.Model):
    """An admin-defined integer grading scale lo..hi (the built-ins live in metrics_engine)."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="scales")
    code = models.SlugField(max_length=50)
    name = models.CharField(max_length=100)
    lo = models.SmallIntegerField()
    hi = models.SmallIntegerField()
    # {"<grade>": {"label": "...", "color": "#rrggbb"}} for every grade lo..hi.
    labels = models.JSONField(default=dict)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["team", "code"], name="scale_code_unique_per_team"),
            models.CheckConstraint(condition=Q(hi__gt=models.F("lo")), name="scale_hi_above_lo"),
        ]

    def __str__(self) -> str:
        return self.name


class Transformer(models.Model):
    """A team's mapping of every grade of one scale to one of another (docs/METRICS.md stage 0)."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="transformers")
    source = models.CharField(max_length=50)
    target = models.CharField(max_length=50)
    mapping = models.JSONField(default=dict)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["source", "target"]
        constraints = [
            models.UniqueConstraint(
                fields=["team", "source", "target"], name="transformer_unique_per_team"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.source}->{self.target}"


class OpenedBecause(models.TextChoices):
    """Why judgments.adaptive opened a further slot on a result."""

    UNSURE = "unsure", "A grade of the result was marked unsure"
    DISAGREE = "disagree", "A counting judge and a person disagree"
    CUTOFF = "cutoff", "The grades sit at the binary cut-off (a tie)"
    BOUNDS = "bounds", "A top result of a keyword whose bounds are still wide"
    LOW_GOLD = "low_gold", "Graded only by graders below the team's gold bar"


class FeedbackSlot(models.Model):
    """One grader's place on one snapshot; 1 or 3 per snapshot (the evaluation's strategy),
    or, under "1 → 3", 1 to which a second and third are added where it matters.

    A slot is free when it has no user, or when its lease ran out before a grade came.
    `evaluation` and `keyword` repeat the snapshot's so the queue and the recompute read
    slots without joins.
    """

    # No index of their own: slot_index_unique, slot_keyword_idx and slot_eval_grade_idx
    # lead with these columns, and every index costs each of a million slots' COPY.
    snapshot = models.ForeignKey(Snapshot, on_delete=models.CASCADE, related_name="slots",
                                 db_index=False)
    keyword = models.ForeignKey(Keyword, on_delete=models.CASCADE, related_name="slots",
                                db_index=False)
    evaluation = models.ForeignKey(Evaluation, on_delete=models.CASCADE, related_name="slots",
                                   db_index=False)
    index = models.PositiveSmallIntegerField()
    # The keyword's and snapshot's positions, copied so the queue walks one index in
    # hand-out order (keyword, then position) instead of sorting joined rows per claim.
    keyword_position = models.PositiveIntegerField(default=0)
    position = models.PositiveSmallIntegerField(default=0)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="feedback_slots",
    )
    grade = models.SmallIntegerField(null=True, blank=True)
    assigned_at = models.DateTimeField(null=True, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    graded_at = models.DateTimeField(null=True, blank=True)
    unsure = models.BooleanField(default=False)
    note = models.TextField(blank=True, default="")
    # Where the grader was shown this result among its keyword's results when they graded
    # it (1 = first): the engine's position, or their own place in a shuffled evaluation's
    # order (queries.shuffle_key). Null for judges, leads' corrections, reused and old grades.
    shown_position = models.PositiveSmallIntegerField(null=True, blank=True)
    # Why an LLM judge gave this grade (its slot's user is the judge's account).
    reason = models.TextField(blank=True, default="")
    # Who wrote the current grade when it was not the slot's grader (a lead correcting it).
    graded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="+",
    )
    # Why an adaptive ("1 → 3") evaluation opened this slot after the result's first ones
    # (judgments.adaptive); empty for the slots a result gets when fetched.
    opened_because = models.CharField(max_length=10, choices=OpenedBecause.choices,
                                      blank=True, default="")
    # Where a reused grade came from, if it was copied from an earlier evaluation.
    reused_from = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Where a reused grade came from when it was copied from the team's imported judgment
    # pool. Such a slot has a grade and no grader (an import has no person).
    reused_from_pool = models.ForeignKey(
        "PoolJudgment", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["snapshot_id", "index"]
        constraints = [
            models.UniqueConstraint(fields=["snapshot", "index"], name="slot_index_unique"),
            models.UniqueConstraint(
                fields=["snapshot", "user"], condition=Q(user__isnull=False),
                name="slot_one_per_person_per_snapshot",
            ),
            models.CheckConstraint(
                condition=Q(grade__isnull=True) | Q(user__isnull=False) | Q(
                    reused_from__isnull=False) | Q(reused_from_pool__isnull=False),
                name="slot_grade_has_a_grader",
            ),
        ]
        indexes = [
            models.Index(fields=["evaluation", "grade"], name="slot_eval_grade_idx"),
            models.Index(fields=["keyword"], name="slot_keyword_idx"),
            models.Index(fields=["evaluation", "user"], name="slot_eval_user_idx"),
            models.Index(
                fields=["evaluation", "keyword_position", "position", "index"],
                condition=Q(grade__isnull=True), name="slot_queue_idx",
            ),
            # The slots a grader holds ungraded: read on every "next", and tiny next to the
            # thousands a busy grader has graded in one evaluation.
            models.Index(
                fields=["user", "evaluation"],
                condition=Q(grade__isnull=True, user__isnull=False), name="slot_held_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"slot {self.index} of {self.snapshot_id}"

    @property
    def engine_position(self) -> int | None:
        """The engine's rank of the result as a grader may see it: none when the evaluation
        shuffles results (judgments.slot_json's "position")."""
        return None if self.evaluation.shuffle_results else self.snapshot.position


class SlotSkip(models.Model):
    """A grader put a snapshot aside ("skip for now"): the queue offers it to them again
    only when nothing else is left, and grading it removes the mark."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="slot_skips"
    )
    snapshot = models.ForeignKey(Snapshot, on_delete=models.CASCADE, related_name="+")
    evaluation = models.ForeignKey(Evaluation, on_delete=models.CASCADE, related_name="+")
    skipped_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "snapshot"], name="skip_once_per_snapshot"),
        ]

    def __str__(self) -> str:
        return f"{self.user_id} skipped {self.snapshot_id}"


class GraderTags(models.Model):
    """The tags a member carries in a team; they get an evaluation's work only when they
    carry every one of its tags."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="grader_tags"
    )
    tags = models.JSONField(default=list, blank=True)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["team", "user"], name="grader_tags_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.user_id} in {self.team_id}: {', '.join(self.tags)}"


class PoolJudgment(models.Model):
    """One imported grade of a document for a keyword text, in a team's judgment pool.

    Imported judgments (CSV, TREC qrels) belong to no evaluation and no grader: they join
    the pool of every keyword of the team with the same normalized text on the same scale
    (docs/METRICS.md, the keyword's pool), so `recall`, `best` and `ideal: pool` count them.
    Several rows for one (text, document) are several grades, aggregated like slots.
    """

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="pool_judgments")
    scale = models.CharField(max_length=50)
    normalized_text = models.CharField(max_length=500)
    # The keyword as the file wrote it, for exports and the import page.
    text = models.CharField(max_length=500)
    doc_id = models.CharField(max_length=500)
    grade = models.SmallIntegerField()
    # Where it came from: "csv: file.csv", "trec: qrels.txt"...
    source = models.CharField(max_length=200, blank=True, default="")
    imported_at = models.DateTimeField(default=timezone.now)
    imported_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="+",
    )
    # What a per-slot export (judgments.exports.SLOT_COLUMNS) said of the grade, kept so the
    # pool exports it back unchanged; empty for CSV `keyword,doc_id,grade` and TREC lines.
    grader = models.CharField(max_length=150, blank=True, default="")
    grader_kind = models.CharField(max_length=10, blank=True, default="")
    unsure = models.BooleanField(default=False)
    note = models.TextField(blank=True, default="")
    reason = models.TextField(blank=True, default="")
    position = models.PositiveIntegerField(null=True, blank=True)
    graded_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["team_id", "scale", "normalized_text", "doc_id", "id"]
        indexes = [
            models.Index(fields=["team", "scale", "normalized_text"],
                         name="pool_judgment_text_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.text!r} {self.doc_id} = {self.grade}"


class PoolImportUpload(models.Model):
    """A file previewed on the pool import page, kept until it is imported (or an hour
    passes) so "Import" after "Preview" needs no second upload. In the database, not in a
    worker's memory: the Import may reach another worker than the Preview did."""

    token = models.CharField(max_length=64, unique=True)
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                             related_name="+")
    name = models.CharField(max_length=200)
    content = models.BinaryField()
    mapping_name = models.CharField(max_length=200, blank=True, default="")
    mapping = models.BinaryField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    # A previewed file waits this long for its "Import".
    KEPT_FOR = timedelta(hours=1)

    def __str__(self) -> str:
        return f"{self.name} for {self.team_id}"


class AdjudicatedAnswer(models.Model):
    """A lead's decided answer for one result (judges' triage, judgments.adjudication): every
    graded slot of the snapshot was set to `grade` through judgments.grading when it was
    decided. `gold`: the lead marked it a gold answer, which also makes it a GoldItem. Deciding
    again replaces the row."""

    snapshot = models.OneToOneField(Snapshot, on_delete=models.CASCADE,
                                    related_name="adjudicated_answer")
    evaluation = models.ForeignKey(Evaluation, on_delete=models.CASCADE, related_name="+")
    grade = models.SmallIntegerField()
    gold = models.BooleanField(default=False)
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")
    decided_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"snapshot {self.snapshot_id}: {self.grade}{' (gold)' if self.gold else ''}"


class GoldItem(models.Model):
    """A result of the team with a known answer (judgments.gold): the
    queue slips it into graders' work as a GoldProbe to measure them. Its snapshot is the
    result shown; probes use it only once its evaluation is finished (nothing can grade
    that snapshot's own slots any more, so a grade sent for it can only be the probe's)."""

    class Source(models.TextChoices):
        ADJUDICATED = "adjudicated", "Adjudicated answer"
        IMPORT = "import", "Import"
        PAGE = "page", "Made gold by hand"

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    snapshot = models.OneToOneField(Snapshot, on_delete=models.CASCADE,
                                    related_name="gold_item")
    # The snapshot's evaluation's scale: probes go to evaluations on the same scale.
    scale = models.CharField(max_length=50)
    grade = models.SmallIntegerField()
    source = models.CharField(max_length=12, choices=Source.choices)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["team", "scale"], name="gold_team_scale_idx")]

    def __str__(self) -> str:
        return f"gold {self.snapshot_id} = {self.grade}"


class GoldProbe(models.Model):
    """A gold item handed to one grader inside an evaluation's queue, shown like any
    slot; its grade is written here (judgments.grading.gold_probe_grade), never on a
    FeedbackSlot, so metrics never read it."""

    gold = models.ForeignKey(GoldItem, on_delete=models.CASCADE, related_name="probes")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                             related_name="gold_probes")
    evaluation = models.ForeignKey(Evaluation, on_delete=models.CASCADE, related_name="+")
    # The gold item's answer when it was handed out (it may be decided again later).
    expected = models.SmallIntegerField()
    grade = models.SmallIntegerField(null=True, blank=True)
    unsure = models.BooleanField(default=False)
    note = models.TextField(blank=True, default="")
    assigned_at = models.DateTimeField(default=timezone.now)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    graded_at = models.DateTimeField(null=True, blank=True)
    # Skipped on the grading page: put aside for good (the row stays, so the unique
    # constraint keeps the item from coming back to this grader), never graded.
    skipped_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            # Never the same gold item twice to one grader, whatever races.
            models.UniqueConstraint(fields=["user", "gold"], name="gold_probe_once_per_user"),
        ]
        indexes = [models.Index(fields=["user", "evaluation"], name="gold_probe_user_eval_idx")]

    def __str__(self) -> str:
        return f"probe of {self.gold_id} for {self.user_id}"
