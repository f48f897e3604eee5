"""The one place a slot's grade is written: the grading page, the grading API (both its
PostgreSQL one-statement path and the portable one), a lead's grade and reset, grades
reused from earlier evaluations or filled from imported judgments, and any later writer
(an LLM judge calls these functions too).

Each writer validates, writes, and announces the changed keywords in the same transaction
(`keywords_mark_dirty`, docs/ARCHITECTURE.md, the recompute pipeline), so a recompute can
never miss a grade. The keywords' versions and dirty marks belong to the metrics app, which
writes them when it receives the announcement; PostgreSQL's one-statement grade embeds the
version bump that metrics registers here at start-up (register_version_bump_cte).

Longer than our ~450-line mark on purpose: splitting it would make two places that write
grades, which is what this module exists to prevent.
"""

from collections.abc import Callable, Collection, Iterable, Sequence
from contextlib import nullcontext
from typing import Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection, transaction
from django.db.models.expressions import RawSQL
from django.utils import timezone

import metrics_engine as core
from evaluations.models import Evaluation, Keyword, Snapshot
from evaluations.strategies import ADAPTIVE_STRATEGY
from judgments import gold, gold_accuracy, queries
from judgments import scales as scale_lookup
from judgments.adaptive import slots_open_where_it_matters
from judgments.models import FeedbackSlot, GoldProbe, PoolJudgment
from judgments.queue import (
    SlotConflict,
    _claim_snapshot,
    _fetch_claim,
    _queue_claim_sql,
    _renew_held_sql,
    slot_claim_next_assigned,
)
from judgments.queue_selectors import routes_to
from judgments.selectors import GradingTarget, assigned_slot_from_row
from judgments.signals import grades_written
from searchtweak import instruments, sql
from searchtweak.models import User

# --- marking the graded keywords dirty ---


def keywords_mark_dirty(*, keyword_ids: Iterable[int]) -> None:
    """Announce that the grades of these keywords changed (judgments.signals.grades_written).

    Must run inside the transaction that changed the grades: the metrics app's receiver
    marks the keywords dirty in it, so the mark commits or rolls back with the grades, and
    queues their recompute after the commit.
    """
    ids = sorted(set(keyword_ids))
    if ids:
        grades_written.send(sender=FeedbackSlot, keyword_ids=ids)


def grades_count(count: int, *, source: str) -> None:
    """Count `count` grades written by `source` (person, judge, reuse) for the operators'
    metrics once the transaction that wrote them commits: every write of a grade on a slot
    in this module calls it, and nothing else counts grades."""
    if count:
        transaction.on_commit(lambda: instruments.GRADES.labels(source).inc(count))


def _open_where_it_matters(*, strategy: int, evaluation_id: int,
                           snapshot_ids: Iterable[int]) -> None:
    """After a grade of a "1 → 3" evaluation, in its transaction: the result's next slot
    where it matters (judgments.adaptive). Costs nothing for the other strategies."""
    if strategy == ADAPTIVE_STRATEGY:
        slots_open_where_it_matters(evaluation_id=evaluation_id, snapshot_ids=snapshot_ids)


# The statement part that bumps a graded keyword's version inside PostgreSQL's one-statement
# grade: `(name, graded) -> "name AS (...)"`, given by metrics at start-up (the versions are
# its table). Until then, or without it, grades take the portable path.
_version_bump_cte: Callable[..., str] | None = None
_grade_own_slot_ctes: str | None = None


def register_version_bump_cte(build: Callable[..., str] | None) -> None:
    """Set the builder of the version-bump CTE: `build(name=..., graded=...)` returns a
    `name AS (...)` statement part that bumps the keyword of the `graded` CTE's row when
    its `changed` column is true, takes one parameter (the time to mark it dirty with) and
    returns `dirty_since`, equal to that time exactly when it turned the keyword dirty."""
    global _version_bump_cte, _grade_own_slot_ctes
    _version_bump_cte, _grade_own_slot_ctes = build, None


# --- grades reused from earlier evaluations and imported judgments ---


@transaction.atomic
def slots_reuse_fill(
    *, evaluation: Evaluation, keyword: Keyword, snapshots: Sequence[Snapshot]
) -> int:
    """Fill empty slots with grades given earlier in the team's other evaluations on the
    same scale for the same keyword text and document (and position, in position mode),
    then, in document mode, with the team's imported judgments (PoolJudgment).

    The newest grade of each person wins; a person fills at most one slot of a snapshot
    (the same rule as live grading), and unsure grades are not carried over. Grades people
    gave in this tool come first, since they were given to these results under the team's
    guidelines; imported grades only fill the slots left empty, one slot per imported
    grade, never more than the snapshot's slots. Returns the number of slots filled.
    """
    by_position = evaluation.reuse_grades == Evaluation.Reuse.POSITION
    sources = (
        FeedbackSlot.objects.filter(
            evaluation__team_id=evaluation.team_id,
            evaluation__scale=evaluation.scale,
            keyword__normalized_text=keyword.normalized_text,
            snapshot__doc_id__in={s.doc_id for s in snapshots},
            grade__isnull=False,
            user__isnull=False,
            unsure=False,
        )
        .exclude(evaluation_id=evaluation.pk)
        .select_related("snapshot")
        .order_by("-graded_at", "-pk")
    )
    candidates: dict[tuple[str, int | None], list[FeedbackSlot]] = {}
    for source in sources:
        key = (source.snapshot.doc_id, source.snapshot.position if by_position else None)
        candidates.setdefault(key, []).append(source)

    empty = FeedbackSlot.objects.filter(
        snapshot__in=snapshots, grade__isnull=True, user__isnull=True
    ).order_by("snapshot_id", "index")
    empty_by_snapshot: dict[int, list[FeedbackSlot]] = {}
    for slot in empty:
        empty_by_snapshot.setdefault(slot.snapshot_id, []).append(slot)
    taken = set(
        FeedbackSlot.objects.filter(snapshot__in=snapshots, user__isnull=False)
        .values_list("snapshot_id", "user_id")
    )

    now = timezone.now()
    filled: list[FeedbackSlot] = []
    for snapshot in snapshots:
        key = (snapshot.doc_id, snapshot.position if by_position else None)
        free = empty_by_snapshot.get(snapshot.pk, [])
        for source in candidates.get(key, []):
            if not free:
                break
            if (snapshot.pk, source.user_id) in taken:
                continue
            slot = free.pop(0)
            slot.user_id = source.user_id
            slot.grade = source.grade
            slot.assigned_at = now
            slot.graded_at = now
            slot.reused_from_id = source.pk
            taken.add((snapshot.pk, source.user_id))
            filled.append(slot)
    if not by_position:
        filled += _slots_fill_from_pool(
            evaluation=evaluation, keyword=keyword, snapshots=snapshots,
            empty_by_snapshot=empty_by_snapshot, now=now,
        )
    if filled:
        FeedbackSlot.objects.bulk_update(
            filled, ["user", "grade", "assigned_at", "graded_at", "reused_from",
                     "reused_from_pool"]
        )
        keywords_mark_dirty(keyword_ids=[keyword.pk])
    grades_count(len(filled), source="reuse")
    return len(filled)


def _slots_fill_from_pool(
    *, evaluation: Evaluation, keyword: Keyword, snapshots: Sequence[Snapshot],
    empty_by_snapshot: dict[int, list[FeedbackSlot]], now,
) -> list[FeedbackSlot]:
    """Give the slots still empty the team's imported grades of the same scale, keyword
    text and document, each imported row to at most one slot of a snapshot (pops the
    filled slots from `empty_by_snapshot`).

    An imported grade its grader marked unsure is not used, as unsure grades of earlier
    evaluations are not. Only document reuse reads the pool: an imported judgment (CSV,
    TREC qrels) says how relevant a document is to a query, not at which position it was
    shown, so it cannot meet position reuse's promise that the grade was given at the same
    position.
    """
    waiting = {s.doc_id for s in snapshots if empty_by_snapshot.get(s.pk)}
    if not waiting:
        return []
    imported: dict[str, list[PoolJudgment]] = {}
    for row in PoolJudgment.objects.filter(
        team_id=evaluation.team_id, scale=evaluation.scale,
        normalized_text=keyword.normalized_text, doc_id__in=waiting, unsure=False,
    ).order_by("pk").only("pk", "doc_id", "grade"):
        imported.setdefault(row.doc_id, []).append(row)
    filled = []
    for snapshot in snapshots:
        free = empty_by_snapshot.get(snapshot.pk, [])
        for row in imported.get(snapshot.doc_id, []):
            if not free:
                break
            slot = free.pop(0)
            # No grader: the slot is graded, so the queue never hands it out.
            slot.grade = row.grade
            slot.graded_at = now
            slot.reused_from_pool_id = row.pk
            filled.append(slot)
    return filled



# --- grades ---


def _check_grade(grade: Any, scale: scale_lookup.GradeScale) -> int:
    if not core.scales.is_integer(grade):
        raise ValidationError({"grade": f"{grade!r} is not an integer grade."})
    value = int(grade)
    if not scale.contains(value):
        raise ValidationError(
            {"grade": f"{value} is not a grade of the {scale.describe()} scale."})
    return value


def grade_checked(*, evaluation: Evaluation, grade: Any) -> int:
    """`grade` as an integer of the evaluation's scale; ValidationError on `grade` otherwise
    (for a writer that checks before it writes several slots, e.g. an adjudication)."""
    return _check_grade(grade, _evaluation_scale(evaluation))


def _evaluation_scale(evaluation: Evaluation) -> scale_lookup.GradeScale:
    scale = scale_lookup.scale_for_team(team_id=evaluation.team_id, code=evaluation.scale)
    if scale is None:
        raise ValidationError({"grade": f"This evaluation's scale {evaluation.scale!r} is gone."})
    return scale


def _check_takes_grades(status: str) -> None:
    """ValidationError unless an evaluation in `status` takes grades (the rule is
    Evaluation.status_takes_grades; this says why not)."""
    if Evaluation.status_takes_grades(status):
        return
    if status == Evaluation.Status.FINISHED:
        raise ValidationError(
            {"evaluation": "This evaluation is finished: its grades can no longer change."})
    raise ValidationError(
        {"evaluation": "This evaluation is not running right now: grading is paused."})


def _write_grade(
    slot: FeedbackSlot, *, grade: int, unsure: bool, note: str, now, graded_by: User | None,
    shown_position: int | RawSQL | None = None,
) -> None:
    changed = slot.grade != grade
    slot.grade = grade
    slot.graded_at = now
    slot.unsure = unsure
    slot.note = note if unsure else ""
    slot.graded_by = graded_by
    slot.shown_position = shown_position
    # A person's grade carries no judge's reason, even on a slot a judge filled before.
    slot.reason = ""
    slot.save(update_fields=["grade", "graded_at", "unsure", "note", "graded_by", "reason",
                             "shown_position"])
    if isinstance(shown_position, RawSQL):
        # Computed by the UPDATE itself (no statement more per grade): deferred, so reading
        # it loads the stored value instead of handing out the expression.
        del slot.__dict__["shown_position"]
    if changed:
        keywords_mark_dirty(keyword_ids=[slot.keyword_id])
    grades_count(1, source="person")


def _lock_slot(slot_id: int) -> FeedbackSlot | None:
    return (
        FeedbackSlot.objects.select_for_update(of=("self",))
        .select_related("evaluation")
        .filter(pk=slot_id)
        .first()
    )


@transaction.atomic
def feedback_submit(
    *, user: User, slot_id: int, grade: Any, unsure: bool = False, note: str = ""
) -> FeedbackSlot:
    """Write the grader's grade on a slot they hold or graded before.

    An ungraded slot needs a live lease; the grader's own graded slot may be re-graded
    (Backspace on the page) while the evaluation is active. Errors name the field and
    change nothing.
    """
    slot = _lock_slot(slot_id)
    if slot is None or slot.user_id != user.pk:
        raise ValidationError(
            {"slot": "This result was handed to another grader; your grade was not saved."})
    now = timezone.now()
    _check_takes_grades(slot.evaluation.status)
    if slot.grade is None and (slot.lease_expires_at is None or slot.lease_expires_at < now):
        raise ValidationError({"slot": (
            "Your 5-minute hold on this result ran out, so the grade was not saved; "
            "the result went back to the queue.")})
    value = _check_grade(grade, _evaluation_scale(slot.evaluation))
    _write_grade(slot, grade=value, unsure=unsure, note=note.strip(), now=now, graded_by=None,
                 shown_position=RawSQL(queries.shown_position_sql(queries.SLOTS), []))
    _open_where_it_matters(strategy=slot.evaluation.strategy, evaluation_id=slot.evaluation_id,
                           snapshot_ids=[slot.snapshot_id])
    return slot


# PostgreSQL writes a grade on the caller's own slot in one statement (no BEGIN/COMMIT
# round trips): lock the slot, write the grade, and, when it changed, bump the keyword's
# version with the registered CTE, as the receiver of keywords_mark_dirty would.
# dirty_since comes back equal to the time passed in exactly when this statement turned the
# keyword dirty.
# Written here, not in judgments.queries: this module alone writes grades.
_GRADE_OWN_SLOT_SQL = f"""
old AS (
    SELECT "id", "grade" FROM {queries.SLOTS}
    WHERE "snapshot_id" = %s AND "user_id" = %s FOR UPDATE),
graded AS (
    UPDATE {queries.SLOTS} f
    SET "grade" = %s, "graded_at" = %s, "unsure" = %s, "note" = %s, "graded_by_id" = NULL,
        "shown_position" = {queries.SHOWN_POSITION_SQL}
    FROM old WHERE f."id" = old."id"
    RETURNING f."id", f."keyword_id", old."grade" IS DISTINCT FROM f."grade" AS changed),
"""


def _grade_own_slot_sql_ctes() -> str | None:
    """The one-statement grade's CTEs, or None while no version bump is registered."""
    global _grade_own_slot_ctes
    if _grade_own_slot_ctes is None and _version_bump_cte is not None:
        _grade_own_slot_ctes = _GRADE_OWN_SLOT_SQL + _version_bump_cte(
            name="dirty", graded="graded")
    return _grade_own_slot_ctes


_GRADED_COLUMNS = """graded."id" AS graded_id, graded."keyword_id" AS graded_keyword_id,
    graded.changed AS graded_changed, dirty."dirty_since" AS graded_dirty_since"""
# With the grader's next slot too (the grading loop's one statement a grade): only once
# the grade is written, never on the snapshot just graded, a held slot first.
_NEXT_AFTER_GRADE = "EXISTS (SELECT 1 FROM graded) AND "


def _grade_checked(*, target: GradingTarget, grade: Any, unsure: bool, note: str
                   ) -> tuple[int, str]:
    """The grade and note to write on the target, or a ValidationError naming the field."""
    _check_takes_grades(target.status)
    scale = scale_lookup.scale_for_team(team_id=target.team_id, code=target.scale)
    if scale is None:
        raise ValidationError({"grade": f"This evaluation's scale {target.scale!r} is gone."})
    return _check_grade(grade, scale), note.strip() if unsure else ""


def _grade_own_slot_sql(*, user: User, target: GradingTarget, value: int, unsure: bool,
                        note: str, now) -> tuple[str, list]:
    return (_grade_own_slot_sql_ctes(),
            [target.snapshot_id, user.pk, value, now, unsure, note, now])


def _announce_own_slot_graded(row: dict, *, now) -> int:
    """After the one-statement grade wrote a grade: announce it if it changed (its version
    bump is done: the statement made it); the slot id."""
    grades_count(1, source="person")
    if row["graded_changed"]:
        newly_dirty = [row["graded_keyword_id"]] if row["graded_dirty_since"] == now else []
        grades_written.send(sender=FeedbackSlot, keyword_ids=[row["graded_keyword_id"]],
                            newly_dirty_ids=newly_dirty)
    return row["graded_id"]


def snapshot_grade(
    *, user: User, target: GradingTarget, grade: Any, unsure: bool = False, note: str = ""
) -> int:
    """Grade a snapshot on the caller's own slot, claiming a free one when they hold none;
    the slot's id. `target` comes from selectors.snapshot_target_for_user.

    Raises SlotConflict when every slot belongs to someone else. The grading API calls this
    for every grade, so its statements are written out (searchtweak.sql).
    """
    value, note = _grade_checked(target=target, grade=grade, unsure=unsure, note=note)
    now = timezone.now()
    if sql.is_postgresql() and _grade_own_slot_sql_ctes() is not None:
        ctes, params = _grade_own_slot_sql(
            user=user, target=target, value=value, unsure=unsure, note=note, now=now)
        # An adaptive evaluation opens its next slot in the grade's transaction, before the
        # recompute (and an automatic finish) can see the result as complete.
        with _adaptive_atomic(target):
            row = sql.fetch_one(
                f"WITH {ctes} SELECT {_GRADED_COLUMNS} FROM graded LEFT JOIN dirty ON TRUE",
                params)
            if row is not None:
                _open_where_it_matters(strategy=target.strategy,
                                       evaluation_id=target.evaluation_id,
                                       snapshot_ids=[target.snapshot_id])
                return _announce_own_slot_graded(row, now=now)
    with transaction.atomic():
        slot = queries.own_slot_row_for_update(snapshot_id=target.snapshot_id,
                                               user_id=user.pk)
        if slot is None:
            if not routes_to(user=user, team_id=target.team_id, tags=target.tags):
                raise ValidationError({"snapshot": (
                    "This evaluation's work is routed to graders with other tags.")})
            claimed = _claim_snapshot(user=user, now=now, snapshot_id=target.snapshot_id)
            if claimed is None:
                raise SlotConflict("Every slot of this result belongs to another grader.")
            slot = {"id": claimed["id"], "grade": None, "keyword_id": claimed["keyword_id"]}
        # The caller names the snapshot, so an expired hold of theirs is simply graded.
        sql.execute(
            f'UPDATE {queries.SLOTS} AS f SET "grade" = %s, "graded_at" = %s, "unsure" = %s,'
            f' "note" = %s, "graded_by_id" = NULL,'
            f' "shown_position" = {queries.SHOWN_POSITION_SQL} WHERE f."id" = %s',
            [value, sql.time_param(now), unsure, note, slot["id"]])
        if slot["grade"] != value:
            keywords_mark_dirty(keyword_ids=[slot["keyword_id"]])
        grades_count(1, source="person")
        _open_where_it_matters(strategy=target.strategy, evaluation_id=target.evaluation_id,
                               snapshot_ids=[target.snapshot_id])
    return slot["id"]


def _adaptive_atomic(target: GradingTarget):
    return transaction.atomic() if target.strategy == ADAPTIVE_STRATEGY else nullcontext()


def snapshot_grade_and_claim_next(
    *, user: User, target: GradingTarget, grade: Any, unsure: bool = False, note: str = "",
    evaluation_ids: list[int], shuffled_ids: Collection[int] = (),
    decisive_ids: Collection[int] = (), gold_ids: Collection[int] = (),
) -> dict | None:
    """snapshot_grade, then slot_claim_next_assigned among `evaluation_ids`: the grader's
    next slot, or None. The grading loop (the API's next/ with a grade) runs this for every
    grade, so on PostgreSQL, when the grader holds the snapshot's slot as they do in that
    loop, the grade, the lease and the read are one statement.
    """
    # A queue that slips in gold probes decides each claim first (judgments.queue), so it
    # takes the general path: the grade, then the claim.
    if (sql.is_postgresql() and evaluation_ids and evaluation_ids[0] not in gold_ids
            and _grade_own_slot_sql_ctes() is not None):
        value, checked_note = _grade_checked(target=target, grade=grade, unsure=unsure,
                                             note=note)
        now = timezone.now()
        grade_ctes, grade_params = _grade_own_slot_sql(
            user=user, target=target, value=value, unsure=unsure, note=checked_note, now=now)
        renew, renew_params = _renew_held_sql(
            user=user, evaluation_ids=evaluation_ids, now=now, guard=_NEXT_AFTER_GRADE,
            besides_snapshot_id=target.snapshot_id, returning="*")
        claim, claim_params = _queue_claim_sql(
            user=user, now=now, evaluation_id=evaluation_ids[0], include_skipped=False,
            besides_snapshot_id=target.snapshot_id, guard=_NEXT_AFTER_GRADE + queries.HELD_FIRST,
            shuffled_ids=shuffled_ids, decisive_ids=decisive_ids)
        columns, joins = queries.ASSIGNED_SLOT_SELECT
        with _adaptive_atomic(target):
            row = _fetch_claim(
                f"WITH {grade_ctes},"
                f" {queries.RENEW_OR_CLAIM_CTES.format(renew=renew, claim=claim)}"
                f" SELECT {_GRADED_COLUMNS}, {columns}"
                f" FROM graded LEFT JOIN dirty ON TRUE LEFT JOIN (f {joins}) ON TRUE",
                [*grade_params, *renew_params, *claim_params])
            if row is not None:
                _open_where_it_matters(strategy=target.strategy,
                                       evaluation_id=target.evaluation_id,
                                       snapshot_ids=[target.snapshot_id])
                _announce_own_slot_graded(row, now=now)
        if row is not None:
            if row["id"] is not None:
                return assigned_slot_from_row(row)
            # Nothing unskipped left in the first evaluation: the others, the skipped.
            return slot_claim_next_assigned(user=user, evaluation_ids=evaluation_ids,
                                            shuffled_ids=shuffled_ids,
                                            decisive_ids=decisive_ids)
        # No slot of theirs on the snapshot (or a lost race): the general path.
    snapshot_grade(user=user, target=target, grade=grade, unsure=unsure, note=note)
    return slot_claim_next_assigned(user=user, evaluation_ids=evaluation_ids,
                                    shuffled_ids=shuffled_ids, decisive_ids=decisive_ids,
                                    gold_ids=gold_ids)


# --- gold probes (judgments.gold): a grade that measures the grader, never a metric ---


@transaction.atomic
def gold_probe_grade(*, user: User, snapshot_id: int, grade: Any, unsure: bool = False,
                     note: str = "", evaluation_id: int | None = None) -> GoldProbe | None:
    """Write the grader's grade on their probe showing this result (in this evaluation
    when given): on the probe, never on a slot, so no keyword is marked and no metric
    reads it. None when they hold no such probe (the caller treats the grade as a slot's).
    The same checks as a slot's grade: the probe's evaluation takes grades, the grade is on
    its scale; a graded probe may be re-graded while it does."""
    probe = gold.probe_for_grade(user=user, snapshot_id=snapshot_id,
                                 evaluation_id=evaluation_id)
    if probe is None:
        return None
    evaluation = Evaluation.objects.only("status", "team_id", "scale").get(
        pk=probe.evaluation_id)
    _check_takes_grades(evaluation.status)
    previous_grade = probe.grade
    probe.grade = _check_grade(grade, _evaluation_scale(evaluation))
    probe.unsure = unsure
    probe.note = note.strip() if unsure else ""
    probe.graded_at = timezone.now()
    probe.lease_expires_at = None
    probe.save(update_fields=["grade", "unsure", "note", "graded_at", "lease_expires_at"])
    gold_accuracy.grader_accuracy_check(user=user, team_id=evaluation.team_id,
                                        probe_id=probe.pk, previous_grade=previous_grade)
    return probe


@transaction.atomic
def slot_grade_by_lead(*, lead: User, slot_id: int, grade: Any) -> FeedbackSlot:
    """A lead sets any slot's grade. A slot nobody holds becomes the lead's; a grader's
    slot keeps its grader and records the lead as the one who wrote the grade."""
    slot = _lock_slot(slot_id)
    if slot is None:
        raise ValidationError({"slot": "No such slot."})
    value = _check_grade(grade, _evaluation_scale(slot.evaluation))
    now = timezone.now()
    held = slot.user_id is not None and (
        slot.grade is not None or (slot.lease_expires_at and slot.lease_expires_at >= now))
    if held and slot.user_id != lead.pk:
        _write_grade(slot, grade=value, unsure=False, note="", now=now, graded_by=lead)
        _open_where_it_matters(strategy=slot.evaluation.strategy,
                               evaluation_id=slot.evaluation_id, snapshot_ids=[slot.snapshot_id])
        return slot
    if FeedbackSlot.objects.filter(snapshot_id=slot.snapshot_id, user=lead).exclude(
            pk=slot.pk).exists():
        if slot.grade is None:
            raise ValidationError({"slot": "You already fill another slot of this result."})
        # A reused grade nobody holds, on a result the lead grades in another slot: a
        # person holds one slot of a result, so the lead corrects it in place, as a
        # grader's, and it keeps where it came from.
        _write_grade(slot, grade=value, unsure=False, note="", now=now, graded_by=lead)
        return slot
    slot.user = lead
    slot.assigned_at = slot.assigned_at or now
    slot.lease_expires_at = None
    slot.reused_from = None
    slot.reused_from_pool = None
    slot.save(update_fields=["user", "assigned_at", "lease_expires_at", "reused_from",
                             "reused_from_pool"])
    _write_grade(slot, grade=value, unsure=False, note="", now=now, graded_by=None)
    _open_where_it_matters(strategy=slot.evaluation.strategy, evaluation_id=slot.evaluation_id,
                           snapshot_ids=[slot.snapshot_id])
    return slot


@transaction.atomic
def slot_reset(*, slot_id: int) -> FeedbackSlot:
    """Empty a slot: no grader, no grade; it returns to the queue."""
    slot = _lock_slot(slot_id)
    if slot is None:
        raise ValidationError({"slot": "No such slot."})
    had_grade = slot.grade is not None
    for name, value in {
        "user": None, "grade": None, "assigned_at": None, "lease_expires_at": None,
        "graded_at": None, "unsure": False, "note": "", "graded_by": None, "reused_from": None,
        "reused_from_pool": None, "reason": "", "shown_position": None,
    }.items():
        setattr(slot, name, value)
    slot.save(update_fields=[
        "user", "grade", "assigned_at", "lease_expires_at", "graded_at", "unsure", "note",
        "graded_by", "reused_from", "reused_from_pool", "reason", "shown_position",
    ])
    if had_grade:
        keywords_mark_dirty(keyword_ids=[slot.keyword_id])
    return slot




# --- LLM judges (judges.runs): one more writer through the same rules ---


def judge_slots_claim(*, judge_user: User, snapshot_ids: Sequence[int], now, lease_until
                      ) -> dict[int, int]:
    """Lease the judge's account a free slot of each snapshot, as a person's claim does (one
    identity per snapshot, a lapsed lease is free again); {snapshot id: slot id} for the
    snapshots that had one. One conditional statement claims them all (each snapshot's
    pick is a person's claim's), so parallel runs and people never hold the same slot."""
    if not snapshot_ids:
        return {}
    statement, params = queries.snapshots_claim_sql(
        user_id=judge_user.pk, now=now, lease_until=lease_until, snapshot_ids=list(snapshot_ids))
    for _ in range(3):
        try:
            # A savepoint inside a transaction, so a lost race leaves it usable (_fetch_claim).
            with transaction.atomic() if connection.in_atomic_block else nullcontext():
                return {snapshot_id: slot_id
                        for slot_id, snapshot_id in sql.fetch_all(statement, params)}
        except IntegrityError:
            # Two slots of one snapshot for the judge's account: a parallel claim won.
            continue
    return {}


@transaction.atomic
def judge_grades_write(*, judge_user: User, evaluation: Evaluation,
                       grades: Sequence[tuple[int, Any, str]], now) -> set[int]:
    """Write a judge's (snapshot id, grade, reason) on the slot its account holds ungraded
    there (one identity per snapshot, so at most one); the snapshot ids written. A slot it
    no longer holds (reset by a lead) is left alone. Raises ValidationError, writing
    nothing, when the evaluation takes no grades or a grade is off the scale."""
    # Read now, not from the caller's copy: a model's answer can take a minute to arrive.
    _check_takes_grades(
        Evaluation.objects.values_list("status", flat=True).get(pk=evaluation.pk))
    scale = _evaluation_scale(evaluation)
    checked = {snapshot_id: (_check_grade(grade, scale), reason)
               for snapshot_id, grade, reason in grades}
    held = list(FeedbackSlot.objects.select_for_update().filter(
        snapshot_id__in=list(checked), user=judge_user, grade__isnull=True,
        evaluation=evaluation).values_list("pk", "snapshot_id", "keyword_id"))
    # One statement for every slot, each with its grade and reason (a model's reasons
    # differ per result: grouping by them was a statement per slot).
    sql.rows_update(
        FeedbackSlot, fields=["grade", "reason"],
        rows=[(slot_id, *checked[snapshot_id]) for slot_id, snapshot_id, _ in held],
        constants={"graded_at": now, "lease_expires_at": None, "unsure": False, "note": "",
                   "graded_by": None, "shown_position": None})
    keywords_mark_dirty(keyword_ids=[keyword_id for _, _, keyword_id in held])
    grades_count(len(held), source="judge")
    written = {snapshot_id for _, snapshot_id, _ in held}
    _open_where_it_matters(strategy=evaluation.strategy, evaluation_id=evaluation.pk,
                           snapshot_ids=written)
    return written


def judge_slots_release(*, judge_user: User, snapshot_ids: Iterable[int]) -> int:
    """Give back the slots the judge holds ungraded on these snapshots (a rejected pair, an
    answer that cannot be stored)."""
    return FeedbackSlot.objects.filter(
        snapshot_id__in=list(snapshot_ids), user=judge_user, grade__isnull=True).update(
        user=None, assigned_at=None, lease_expires_at=None, reason="")
