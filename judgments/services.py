"""Every write of the judgments app: slots, the grading queue, grades, scales, transformers.

Any service that sets, changes or clears a grade calls `keywords_mark_dirty` inside its
transaction (docs/ARCHITECTURE.md, the recompute pipeline), so a recompute can never miss it.
"""

from collections.abc import Iterable, Sequence
from contextlib import nullcontext
from datetime import timedelta
from typing import Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection, transaction
from django.db.models import Q
from django.utils import timezone

from evaluations.models import Evaluation, EvaluationMetric, Keyword, Snapshot
from judgments import scales as scale_lookup
from judgments.models import (
    FeedbackSlot,
    GraderTags,
    PoolJudgment,
    Scale,
    SlotSkip,
    Transformer,
)
from judgments.selectors import (
    ASSIGNED_SLOT_SELECT,
    GradingTarget,
    assigned_slot,
    assigned_slot_from_row,
    queue_evaluation_ids,
    routes_to,
)
from judgments.signals import grades_changed
from metrics import core
from searchtweak import sql
from searchtweak.models import Team, User

LEASE = timedelta(minutes=5)


class SlotConflict(Exception):
    """Every slot of a snapshot is held or filled by someone else (the API answers 409)."""


# --- recompute bookkeeping ---


def keywords_mark_dirty(*, keyword_ids: Iterable[int]) -> None:
    """Bump each keyword's version and announce the change after commit.

    Must run inside the transaction that changed the grades: the version bump commits or
    rolls back with them, and the metrics app's receiver only ever sees committed work.
    The signal also carries `newly_dirty_ids`, the keywords that were clean before.
    """
    ids = sorted(set(keyword_ids))
    if not ids:
        return
    now = sql.time_param(timezone.now())
    newly_dirty = []
    for keyword_id in ids:
        # Most grades land on a keyword that is dirty already (its recompute is queued or
        # running): one UPDATE. Only a clean keyword needs a run queued for it, so the
        # signal says which ones turned dirty here. Written out: every grade runs this.
        if sql.execute(
                'UPDATE "evaluations_keyword" SET "version" = "version" + 1'
                ' WHERE "id" = %s AND "dirty_since" IS NOT NULL', [keyword_id]):
            continue
        sql.execute(
            'UPDATE "evaluations_keyword" SET "version" = "version" + 1,'
            ' "dirty_since" = COALESCE("dirty_since", %s) WHERE "id" = %s', [now, keyword_id])
        newly_dirty.append(keyword_id)
    _announce_grades_changed(keyword_ids=ids, newly_dirty_ids=newly_dirty)


def _announce_grades_changed(*, keyword_ids: list[int], newly_dirty_ids: list[int]) -> None:
    transaction.on_commit(
        lambda: grades_changed.send(
            sender=FeedbackSlot, keyword_ids=list(keyword_ids), newly_dirty_ids=newly_dirty_ids)
    )


# --- slots ---


@transaction.atomic
def slots_create_for_snapshots(
    *, evaluation: Evaluation, keyword: Keyword, snapshots: Sequence[Snapshot]
) -> list[FeedbackSlot]:
    """Create the evaluation's `strategy` empty slots for each saved snapshot, then fill
    them with earlier grades when the evaluation reuses them."""
    slots = FeedbackSlot.objects.bulk_create([
        FeedbackSlot(snapshot=snapshot, keyword=keyword, evaluation=evaluation, index=index,
                     keyword_position=keyword.position, position=snapshot.position)
        for snapshot in snapshots
        for index in range(evaluation.strategy)
    ])
    if evaluation.reuse_grades != Evaluation.Reuse.NONE and snapshots:
        slots_reuse_fill(evaluation=evaluation, keyword=keyword, snapshots=snapshots)
    return slots


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
    return len(filled)


def _slots_fill_from_pool(
    *, evaluation: Evaluation, keyword: Keyword, snapshots: Sequence[Snapshot],
    empty_by_snapshot: dict[int, list[FeedbackSlot]], now,
) -> list[FeedbackSlot]:
    """Give the slots still empty the team's imported grades of the same scale, keyword
    text and document, each imported row to at most one slot of a snapshot (pops the
    filled slots from `empty_by_snapshot`).

    Only document reuse reads the pool: an imported judgment (CSV, TREC qrels) says how
    relevant a document is to a query, not at which position it was shown, so it cannot
    meet position reuse's promise that the grade was given at the same position.
    """
    waiting = {s.doc_id for s in snapshots if empty_by_snapshot.get(s.pk)}
    if not waiting:
        return []
    imported: dict[str, list[PoolJudgment]] = {}
    for row in PoolJudgment.objects.filter(
        team_id=evaluation.team_id, scale=evaluation.scale,
        normalized_text=keyword.normalized_text, doc_id__in=waiting,
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


# --- the queue ---


# One statement claims a slot: the first free one in hand-out order (slot_queue_idx), that
# the grader holds no other slot of the snapshot of. FOR UPDATE SKIP LOCKED (PostgreSQL)
# makes parallel claims pass over each other's rows instead of waiting or colliding.
_CLAIM_SQL = """
UPDATE "judgments_feedbackslot"
SET "user_id" = %s, "assigned_at" = %s, "lease_expires_at" = %s, "graded_at" = NULL,
    "unsure" = %s, "note" = '', "graded_by_id" = NULL
WHERE {guard}"id" = (
    SELECT s."id" FROM "judgments_feedbackslot" s
    WHERE {where} AND s."grade" IS NULL AND (s."user_id" IS NULL OR s."lease_expires_at" < %s)
      AND NOT EXISTS (SELECT 1 FROM "judgments_feedbackslot" o
                      WHERE o."snapshot_id" = s."snapshot_id" AND o."user_id" = %s
                        AND o."id" <> s."id")
      {skips}
    ORDER BY {order} LIMIT 1{lock})
RETURNING {returning}
"""
_NOT_SKIPPED = """AND NOT EXISTS (SELECT 1 FROM "judgments_slotskip" k
                      WHERE k."snapshot_id" = s."snapshot_id" AND k."user_id" = %s)"""
# The first slot the grader holds ungraded among some evaluations, its lease renewed.
_RENEW_HELD_SQL = """
UPDATE "judgments_feedbackslot" SET "lease_expires_at" = %s WHERE {guard}"id" = (
    SELECT "id" FROM "judgments_feedbackslot"
    WHERE "user_id" = %s AND "evaluation_id" IN ({marks}) AND "grade" IS NULL
      AND "lease_expires_at" >= %s{besides}
    ORDER BY "assigned_at", "id" LIMIT 1)
RETURNING {returning}
"""
_QUEUE_ORDER = 's."keyword_position", s."position", s."index"'


def _claim_sql(*, user: User, now, where: str, where_params: list, order: str,
               include_skipped: bool, guard: str = "",
               returning: str = '"id", "keyword_id"') -> tuple[str, list]:
    """_CLAIM_SQL for the first free slot matching `where`, and its parameters; `guard`
    is a condition (ending in AND) that must hold for anything to be claimed."""
    statement = _CLAIM_SQL.format(
        where=where, order=order, lock=sql.skip_locked(), guard=guard, returning=returning,
        skips="" if include_skipped else _NOT_SKIPPED)
    params = [user.pk, sql.time_param(now), sql.time_param(now + LEASE), False,
              *where_params, sql.time_param(now), user.pk]
    return statement, params if include_skipped else [*params, user.pk]


def _queue_claim_sql(*, user: User, now, evaluation_id: int, include_skipped: bool,
                     besides_snapshot_id: int | None = None, guard: str = "") -> tuple[str, list]:
    """_claim_sql for an evaluation's queue, returning the whole slot."""
    where, where_params = 's."evaluation_id" = %s', [evaluation_id]
    if besides_snapshot_id is not None:
        where, where_params = where + ' AND s."snapshot_id" <> %s', [
            evaluation_id, besides_snapshot_id]
    return _claim_sql(user=user, now=now, where=where, where_params=where_params,
                      order=_QUEUE_ORDER, include_skipped=include_skipped, guard=guard,
                      returning="*")


def _renew_held_sql(*, user: User, evaluation_ids: list[int], now, guard: str = "",
                    besides_snapshot_id: int | None = None,
                    returning: str = '"id"') -> tuple[str, list]:
    statement = _RENEW_HELD_SQL.format(
        marks=", ".join(["%s"] * len(evaluation_ids)), guard=guard, returning=returning,
        besides="" if besides_snapshot_id is None else ' AND "snapshot_id" <> %s')
    params = [sql.time_param(now + LEASE), user.pk, *evaluation_ids, sql.time_param(now)]
    return statement, params if besides_snapshot_id is None else [*params, besides_snapshot_id]


def _fetch_claim(statement: str, params: list) -> dict | None:
    for _ in range(3):
        try:
            # A savepoint when the caller has a transaction open, so a lost race (below)
            # leaves it usable; none otherwise, the statement is atomic on its own.
            with transaction.atomic() if connection.in_atomic_block else nullcontext():
                return sql.fetch_one(statement, params)
        except IntegrityError:
            # The same person claimed another slot of this snapshot in a parallel request.
            continue
    return None


def _claim(*, user: User, now, where: str, where_params: list, order: str,
           include_skipped: bool) -> dict | None:
    """Lease the first free slot matching `where` to the user: its id and keyword_id."""
    return _fetch_claim(*_claim_sql(user=user, now=now, where=where, where_params=where_params,
                                    order=order, include_skipped=include_skipped))


def _renew_held(*, user: User, evaluation_ids: list[int], now) -> int | None:
    """Renew the lease of a slot the grader holds ungraded, if any; its id."""
    row = sql.fetch_one(*_renew_held_sql(user=user, evaluation_ids=evaluation_ids, now=now))
    return row["id"] if row else None


# PostgreSQL renews a held slot or else claims a free one, and reads the slot as the
# grading API answers it, in one statement: each grade's request runs this. The slot's
# own columns come from RETURNING, since the outer SELECT sees the table as it was.
_RENEW_OR_CLAIM_CTES = """held AS ({renew}), claimed AS ({claim}),
     f AS (SELECT * FROM held UNION ALL SELECT * FROM claimed)"""
_HELD_FIRST = "NOT EXISTS (SELECT 1 FROM held) AND "


def _claim_next_assigned_postgresql(*, user: User, evaluation_ids: list[int]) -> dict | None:
    now = timezone.now()
    columns, joins = ASSIGNED_SLOT_SELECT
    for include_skipped in (False, True):
        for evaluation_id in evaluation_ids:
            if not include_skipped and evaluation_id == evaluation_ids[0]:
                # Only the first statement asks for a held slot: once it found none, the
                # grader holds none (their other requests aside, which may claim anyway).
                renew, renew_params = _renew_held_sql(
                    user=user, evaluation_ids=evaluation_ids, now=now, returning="*")
                claim, claim_params = _queue_claim_sql(
                    user=user, now=now, evaluation_id=evaluation_id, include_skipped=False,
                    guard=_HELD_FIRST)
                ctes = _RENEW_OR_CLAIM_CTES.format(renew=renew, claim=claim)
                params = [*renew_params, *claim_params]
            else:
                claim, params = _queue_claim_sql(user=user, now=now, evaluation_id=evaluation_id,
                                                 include_skipped=include_skipped)
                ctes = f"f AS ({claim})"
            row = _fetch_claim(f"WITH {ctes} SELECT {columns} FROM f {joins}", params)
            if row is not None:
                return assigned_slot_from_row(row)
    return None


def _claim_next_id_portable(*, user: User, evaluation_ids: list[int]) -> int | None:
    """SQLite's slot_claim_next_assigned, one statement a step (it has no UPDATE in WITH)."""
    now = timezone.now()
    held = _renew_held(user=user, evaluation_ids=evaluation_ids, now=now)
    if held is not None:
        return held
    for include_skipped in (False, True):
        for evaluation_id in evaluation_ids:
            claimed = _claim(
                user=user, now=now, where='s."evaluation_id" = %s', where_params=[evaluation_id],
                order=_QUEUE_ORDER, include_skipped=include_skipped)
            if claimed is not None:
                return claimed["id"]
    return None


def slot_claim_next_assigned(*, user: User, evaluation_ids: list[int]) -> dict | None:
    """The grader's next slot among these evaluations (in this order), leased, as
    selectors.assigned_slot reads it; None when nothing is left for them.

    A slot the grader already holds comes back first (reloading the page or asking twice
    does not hoard leases); then the first free slot in evaluation, keyword and position
    order; results the grader skipped come last. On PostgreSQL each step leases and reads
    in one statement. The caller has checked that the evaluations are active and route
    work to the grader (selectors.queue_evaluation_ids, selectors.target_queue).
    """
    if not evaluation_ids:
        return None
    if sql.is_postgresql():
        return _claim_next_assigned_postgresql(user=user, evaluation_ids=evaluation_ids)
    slot_id = _claim_next_id_portable(user=user, evaluation_ids=evaluation_ids)
    return None if slot_id is None else assigned_slot(slot_id=slot_id)


def slot_claim_next(
    *, user: User, team: Team, evaluation: Evaluation | None = None
) -> FeedbackSlot | None:
    """The grader's next slot in the team's queue (or one evaluation's), leased and loaded
    as a model; see slot_claim_next_assigned."""
    evaluation_ids = queue_evaluation_ids(user=user, team=team, evaluation=evaluation)
    slot = slot_claim_next_assigned(user=user, evaluation_ids=evaluation_ids)
    if slot is None:
        return None
    return FeedbackSlot.objects.select_related("keyword", "snapshot").get(pk=slot["id"])


@transaction.atomic
def slot_skip(*, user: User, slot_id: int) -> None:
    """Put a held result aside: release its slot to the pool and remember the skip."""
    slot = FeedbackSlot.objects.select_for_update().filter(pk=slot_id, user=user).first()
    if slot is None or slot.grade is not None:
        return
    FeedbackSlot.objects.filter(pk=slot.pk).update(
        user=None, assigned_at=None, lease_expires_at=None
    )
    SlotSkip.objects.update_or_create(
        user=user, snapshot_id=slot.snapshot_id,
        defaults={"evaluation_id": slot.evaluation_id, "skipped_at": timezone.now()},
    )


# --- grades ---


def _check_grade(grade: Any, scale: scale_lookup.GradeScale) -> int:
    if not core.scales.is_integer(grade):
        raise ValidationError({"grade": f"{grade!r} is not an integer grade."})
    value = int(grade)
    if not scale.contains(value):
        raise ValidationError(
            {"grade": f"{value} is not a grade of the {scale.describe()} scale."})
    return value


def _evaluation_scale(evaluation: Evaluation) -> scale_lookup.GradeScale:
    scale = scale_lookup.scale_for_team(team_id=evaluation.team_id, code=evaluation.scale)
    if scale is None:
        raise ValidationError({"grade": f"This evaluation's scale {evaluation.scale!r} is gone."})
    return scale


def _check_accepts_grades(evaluation: Evaluation) -> None:
    _check_status(evaluation.status)


def _check_status(status: str) -> None:
    if status == Evaluation.Status.FINISHED:
        raise ValidationError(
            {"evaluation": "This evaluation is finished: its grades can no longer change."})
    if status != Evaluation.Status.ACTIVE:
        raise ValidationError(
            {"evaluation": "This evaluation is not running right now: grading is paused."})


def _write_grade(
    slot: FeedbackSlot, *, grade: int, unsure: bool, note: str, now, graded_by: User | None
) -> None:
    changed = slot.grade != grade
    slot.grade = grade
    slot.graded_at = now
    slot.unsure = unsure
    slot.note = note if unsure else ""
    slot.graded_by = graded_by
    slot.save(update_fields=["grade", "graded_at", "unsure", "note", "graded_by"])
    if changed:
        keywords_mark_dirty(keyword_ids=[slot.keyword_id])


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
    _check_accepts_grades(slot.evaluation)
    if slot.grade is None and (slot.lease_expires_at is None or slot.lease_expires_at < now):
        raise ValidationError({"slot": (
            "Your 5-minute hold on this result ran out, so the grade was not saved; "
            "the result went back to the queue.")})
    value = _check_grade(grade, _evaluation_scale(slot.evaluation))
    _write_grade(slot, grade=value, unsure=unsure, note=note.strip(), now=now, graded_by=None)
    return slot


# PostgreSQL writes a grade on the caller's own slot in one statement (no BEGIN/COMMIT
# round trips): lock the slot, write the grade, and, when it changed, bump the keyword's
# version as keywords_mark_dirty does. dirty_since comes back equal to the time passed in
# exactly when this statement turned the keyword dirty.
_GRADE_OWN_SLOT_CTES = """
old AS (
    SELECT "id", "grade" FROM "judgments_feedbackslot"
    WHERE "snapshot_id" = %s AND "user_id" = %s FOR UPDATE),
graded AS (
    UPDATE "judgments_feedbackslot" f
    SET "grade" = %s, "graded_at" = %s, "unsure" = %s, "note" = %s, "graded_by_id" = NULL
    FROM old WHERE f."id" = old."id"
    RETURNING f."id", f."keyword_id", old."grade" IS DISTINCT FROM f."grade" AS changed),
dirty AS (
    UPDATE "evaluations_keyword" k
    SET "version" = k."version" + 1, "dirty_since" = COALESCE(k."dirty_since", %s)
    FROM graded WHERE k."id" = graded."keyword_id" AND graded.changed
    RETURNING k."dirty_since")"""
_GRADED_COLUMNS = """graded."id" AS graded_id, graded."keyword_id" AS graded_keyword_id,
    graded.changed AS graded_changed, dirty."dirty_since" AS graded_dirty_since"""
# With the grader's next slot too (the grading loop's one statement a grade): only once
# the grade is written, never on the snapshot just graded, a held slot first.
_NEXT_AFTER_GRADE = "EXISTS (SELECT 1 FROM graded) AND "


def _grade_checked(*, target: GradingTarget, grade: Any, unsure: bool, note: str
                   ) -> tuple[int, str]:
    """The grade and note to write on the target, or a ValidationError naming the field."""
    _check_status(target.status)
    scale = scale_lookup.scale_for_team(team_id=target.team_id, code=target.scale)
    if scale is None:
        raise ValidationError({"grade": f"This evaluation's scale {target.scale!r} is gone."})
    return _check_grade(grade, scale), note.strip() if unsure else ""


def _grade_own_slot_sql(*, user: User, target: GradingTarget, value: int, unsure: bool,
                        note: str, now) -> tuple[str, list]:
    return _GRADE_OWN_SLOT_CTES, [target.snapshot_id, user.pk, value, now, unsure, note, now]


def _announce_own_slot_graded(row: dict, *, now) -> int:
    """After _GRADE_OWN_SLOT_CTES wrote a grade: announce it if it changed; the slot id."""
    if row["graded_changed"]:
        newly_dirty = [row["graded_keyword_id"]] if row["graded_dirty_since"] == now else []
        _announce_grades_changed(
            keyword_ids=[row["graded_keyword_id"]], newly_dirty_ids=newly_dirty)
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
    if sql.is_postgresql():
        ctes, params = _grade_own_slot_sql(
            user=user, target=target, value=value, unsure=unsure, note=note, now=now)
        row = sql.fetch_one(
            f"WITH {ctes} SELECT {_GRADED_COLUMNS} FROM graded LEFT JOIN dirty ON TRUE", params)
        if row is not None:
            return _announce_own_slot_graded(row, now=now)
    with transaction.atomic():
        slot = sql.fetch_one(
            'SELECT "id", "grade", "keyword_id" FROM "judgments_feedbackslot"'
            f' WHERE "snapshot_id" = %s AND "user_id" = %s{sql.for_update()}',
            [target.snapshot_id, user.pk])
        if slot is None:
            if not routes_to(user=user, team_id=target.team_id, tags=target.tags):
                raise ValidationError({"snapshot": (
                    "This evaluation's work is routed to graders with other tags.")})
            claimed = _claim(user=user, now=now, where='s."snapshot_id" = %s',
                             where_params=[target.snapshot_id], order='s."index"',
                             include_skipped=True)
            if claimed is None:
                raise SlotConflict("Every slot of this result belongs to another grader.")
            slot = {"id": claimed["id"], "grade": None, "keyword_id": claimed["keyword_id"]}
        # The caller names the snapshot, so an expired hold of theirs is simply graded.
        sql.execute(
            'UPDATE "judgments_feedbackslot" SET "grade" = %s, "graded_at" = %s, "unsure" = %s,'
            ' "note" = %s, "graded_by_id" = NULL WHERE "id" = %s',
            [value, sql.time_param(now), unsure, note, slot["id"]])
        if slot["grade"] != value:
            keywords_mark_dirty(keyword_ids=[slot["keyword_id"]])
    return slot["id"]


def snapshot_grade_and_claim_next(
    *, user: User, target: GradingTarget, grade: Any, unsure: bool = False, note: str = "",
    evaluation_ids: list[int],
) -> dict | None:
    """snapshot_grade, then slot_claim_next_assigned among `evaluation_ids`: the grader's
    next slot, or None. The grading loop (the API's next/ with a grade) runs this for every
    grade, so on PostgreSQL, when the grader holds the snapshot's slot as they do in that
    loop, the grade, the lease and the read are one statement.
    """
    if sql.is_postgresql() and evaluation_ids:
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
            besides_snapshot_id=target.snapshot_id, guard=_NEXT_AFTER_GRADE + _HELD_FIRST)
        columns, joins = ASSIGNED_SLOT_SELECT
        row = _fetch_claim(
            f"WITH {grade_ctes}, {_RENEW_OR_CLAIM_CTES.format(renew=renew, claim=claim)}"
            f" SELECT {_GRADED_COLUMNS}, {columns}"
            f" FROM graded LEFT JOIN dirty ON TRUE LEFT JOIN (f {joins}) ON TRUE",
            [*grade_params, *renew_params, *claim_params])
        if row is not None:
            _announce_own_slot_graded(row, now=now)
            if row["id"] is not None:
                return assigned_slot_from_row(row)
            # Nothing unskipped left in the first evaluation: the others, the skipped.
            return slot_claim_next_assigned(user=user, evaluation_ids=evaluation_ids)
        # No slot of theirs on the snapshot (or a lost race): the general path.
    snapshot_grade(user=user, target=target, grade=grade, unsure=unsure, note=note)
    return slot_claim_next_assigned(user=user, evaluation_ids=evaluation_ids)


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
        return slot
    if FeedbackSlot.objects.filter(snapshot_id=slot.snapshot_id, user=lead).exclude(
            pk=slot.pk).exists():
        raise ValidationError({"slot": "You already fill another slot of this result."})
    slot.user = lead
    slot.assigned_at = slot.assigned_at or now
    slot.lease_expires_at = None
    slot.reused_from = None
    slot.reused_from_pool = None
    slot.save(update_fields=["user", "assigned_at", "lease_expires_at", "reused_from",
                             "reused_from_pool"])
    _write_grade(slot, grade=value, unsure=False, note="", now=now, graded_by=None)
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
        "reused_from_pool": None,
    }.items():
        setattr(slot, name, value)
    slot.save(update_fields=[
        "user", "grade", "assigned_at", "lease_expires_at", "graded_at", "unsure", "note",
        "graded_by", "reused_from", "reused_from_pool",
    ])
    if had_grade:
        keywords_mark_dirty(keyword_ids=[slot.keyword_id])
    return slot


# --- scales, transformers, grader tags (admins) ---


def _scale_codes_in_use(team: Team, code: str) -> bool:
    return Evaluation.objects.filter(team=team, scale=code).exists()


def _check_scale(*, team: Team, code: str, lo: int, hi: int, labels: dict) -> None:
    if code in core.SCALES:
        raise ValidationError({"code": f"{code!r} is a built-in scale."})
    if "->" in code:
        raise ValidationError({"code": "A scale code may not contain '->'."})
    if lo < 0 or hi > scale_lookup.MAX_GRADE:
        raise ValidationError({"hi": "Grades must lie within 0..10 (one digit key each)."})
    if hi <= lo:
        raise ValidationError({"hi": "The highest grade must be above the lowest."})
    if hi - lo > 9:
        raise ValidationError({"hi": "A scale has at most ten grades (one digit key each)."})
    missing = [g for g in range(lo, hi + 1) if str(g) not in labels]
    if missing:
        raise ValidationError({"labels": f"Grade {missing[0]} has no label."})
    extra = [g for g in labels if not (lo <= int(g) <= hi)]
    if extra:
        raise ValidationError({"labels": f"Grade {extra[0]} is outside {lo}..{hi}."})


@transaction.atomic
def scale_create(
    *, team: Team, code: str, name: str, lo: int, hi: int, labels: dict[str, dict]
) -> Scale:
    _check_scale(team=team, code=code, lo=lo, hi=hi, labels=labels)
    if Scale.objects.filter(team=team, code=code).exists():
        raise ValidationError({"code": f"The team already has a scale {code!r}."})
    return Scale.objects.create(team=team, code=code, name=name, lo=lo, hi=hi, labels=labels)


@transaction.atomic
def scale_update(*, scale: Scale, name: str, lo: int, hi: int, labels: dict[str, dict]) -> Scale:
    """Names, labels and colours may always change; the range only while no evaluation
    uses the scale (its grades would fall outside)."""
    _check_scale(team=scale.team, code=scale.code, lo=lo, hi=hi, labels=labels)
    if (lo, hi) != (scale.lo, scale.hi) and _scale_codes_in_use(scale.team, scale.code):
        raise ValidationError({"hi": "Evaluations use this scale: its range cannot change."})
    scale.name, scale.lo, scale.hi, scale.labels = name, lo, hi, labels
    scale.save(update_fields=["name", "lo", "hi", "labels"])
    return scale


@transaction.atomic
def scale_delete(*, scale: Scale) -> None:
    if _scale_codes_in_use(scale.team, scale.code):
        raise ValidationError({"code": "Evaluations use this scale: it cannot be deleted."})
    Transformer.objects.filter(team=scale.team).filter(
        Q(source=scale.code) | Q(target=scale.code)).delete()
    scale.delete()


@transaction.atomic
def transformer_save(
    *, team: Team, source: str, target: str, mapping: dict[Any, Any]
) -> Transformer:
    """Create or replace the team's transformer source → target after validating that it
    maps every source grade to a target grade."""
    src = scale_lookup.scale_for_team(team_id=team.pk, code=source)
    dst = scale_lookup.scale_for_team(team_id=team.pk, code=target)
    if src is None:
        raise ValidationError({"source": f"Unknown scale {source!r}."})
    if dst is None:
        raise ValidationError({"target": f"Unknown scale {target!r}."})
    if source == target:
        raise ValidationError({"target": "Choose a scale other than the source."})
    try:
        parsed = core.validate_transformer(mapping, src.core_scale(), dst.core_scale())
    except core.MetricInputError as error:
        raise ValidationError({"mapping": error.problem}) from error
    stored = {str(k): v for k, v in sorted(parsed.items())}
    transformer, _ = Transformer.objects.update_or_create(
        team=team, source=source, target=target,
        defaults={"mapping": stored, "updated_at": timezone.now()},
    )
    return transformer


@transaction.atomic
def transformer_delete(*, transformer: Transformer) -> None:
    transformer.delete()


def normalize_tags(tags: Iterable[str]) -> list[str]:
    return sorted({tag.strip().lower() for tag in tags if tag and tag.strip()})


@transaction.atomic
def grader_tags_set(*, team: Team, user: User, tags: Iterable[str]) -> GraderTags:
    if not user.memberships.filter(team=team).exists():
        raise ValidationError({"user": "Not a member of this team."})
    row, _ = GraderTags.objects.update_or_create(
        team=team, user=user, defaults={"tags": normalize_tags(tags), "updated_at": timezone.now()}
    )
    return row


# --- the team's judgment pool (imports) ---


def _pool_keyword_ids(*, team: Team, scale: str, texts: set[str]) -> list[int]:
    """Keywords of the team with one of these texts whose evaluation is on `scale` and
    configures a pool metric: their values depend on the pool."""
    if not texts:
        return []
    evaluation_ids = set()
    for config in EvaluationMetric.objects.filter(
        evaluation__team=team, evaluation__scale=scale
    ).only("evaluation_id", "code", "params"):
        try:
            if config.code in core.METRICS and core.needs_pool(
                    config.code, core.resolve_params(config.params)):
                evaluation_ids.add(config.evaluation_id)
        except core.MetricInputError:
            continue
    if not evaluation_ids:
        return []
    return list(Keyword.objects.filter(
        evaluation_id__in=evaluation_ids, normalized_text__in=texts
    ).values_list("pk", flat=True))


def _pool_slots_repoint(*, team: Team, scale: str, stale: list[int]) -> None:
    """Point slots that copied a pool row about to be replaced at a new row of the same
    (text, document): one with the same grade when there is one, else the first.

    A reused grade is a copy taken when the slot was made (grades reused from earlier
    evaluations do not follow later re-grades either, and a finished evaluation's grades
    never change), so the slot keeps its grade; but it must keep a source, or deleting
    the old row (SET_NULL) would leave a graded slot with neither grader nor source,
    which slot_grade_has_a_grader rejects. Every replaced pair has new rows: a row is
    replaced only by the same pair in the new file.
    """
    affected = []
    for start in range(0, len(stale), 2000):
        affected += FeedbackSlot.objects.filter(
            reused_from_pool_id__in=stale[start:start + 2000]
        ).values_list("pk", "grade", "reused_from_pool__normalized_text",
                      "reused_from_pool__doc_id")
    if not affected:
        return
    replacements: dict[tuple[str, str], list[tuple[int, int]]] = {}
    fresh = PoolJudgment.objects.filter(
        team=team, scale=scale, normalized_text__in={text for _, _, text, _ in affected},
    ).exclude(pk__in=stale).order_by("pk")
    for pk, text, doc_id, grade in fresh.values_list("pk", "normalized_text", "doc_id",
                                                     "grade"):
        replacements.setdefault((text, doc_id), []).append((pk, grade))
    updates = []
    for slot_id, grade, text, doc_id in affected:
        candidates = replacements[(text, doc_id)]
        row_id = next((pk for pk, g in candidates if g == grade), candidates[0][0])
        updates.append(FeedbackSlot(pk=slot_id, reused_from_pool_id=row_id))
    FeedbackSlot.objects.bulk_update(updates, ["reused_from_pool"], batch_size=2000)


@transaction.atomic
def pool_judgments_import(
    *, team: Team, scale: str, judgments: Sequence[Any], source: str, user: User | None
) -> dict[str, int]:
    """Store parsed judgments (judgments.imports.ParsedJudgment) in the team's pool.

    For every (keyword text, document) pair in the file the file's grades replace the ones
    imported earlier, so importing the same file twice changes nothing. Keywords whose
    values read the pool are marked dirty in this transaction (their values recompute
    after commit). Returns counts: imported, replaced, keywords (texts), dirty_keywords.
    """
    if scale_lookup.scale_for_team(team_id=team.pk, code=scale) is None:
        raise ValidationError({"scale": f"Unknown scale {scale!r}."})
    rows = [
        PoolJudgment(team=team, scale=scale, normalized_text=Keyword.normalize(item.text),
                     text=item.text.strip(), doc_id=item.doc_id, grade=item.grade,
                     source=source[:200], imported_by=user, imported_at=timezone.now())
        for item in judgments
    ]
    pairs = {(row.normalized_text, row.doc_id) for row in rows}
    texts = {text for text, _ in pairs}
    replaced = 0
    stale: list[int] = []
    if texts:
        earlier = PoolJudgment.objects.filter(team=team, scale=scale, normalized_text__in=texts)
        stale = [pk for pk, text, doc_id in earlier.values_list("pk", "normalized_text", "doc_id")
                 if (text, doc_id) in pairs]
    PoolJudgment.objects.bulk_create(rows, batch_size=2000)
    _pool_slots_repoint(team=team, scale=scale, stale=stale)
    for start in range(0, len(stale), 2000):
        replaced += PoolJudgment.objects.filter(pk__in=stale[start:start + 2000]).delete()[0]
    dirty = _pool_keyword_ids(team=team, scale=scale, texts=texts)
    keywords_mark_dirty(keyword_ids=dirty)
    return {"imported": len(rows), "replaced": replaced, "keywords": len(texts),
            "dirty_keywords": len(dirty)}
