"""The grading queue: which slot a grader gets next, leased for a while, and skips.

Claims are single conditional statements (judgments.queries): parallel graders pass over
each other's rows instead of waiting or colliding. Grades are written by judgments.grading.
"""

from collections.abc import Collection
from contextlib import nullcontext
from datetime import timedelta

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from evaluations.models import Evaluation
from judgments import gold, queries
from judgments.models import FeedbackSlot, SlotSkip
from judgments.queue_selectors import queue_evaluations
from judgments.selectors import assigned_slot, assigned_slot_from_row
from searchtweak import sql
from searchtweak.models import Team, User

LEASE = timedelta(minutes=5)


class SlotConflict(Exception):
    """Every slot of a snapshot is held or filled by someone else (the API answers 409)."""


def _queue_claim_sql(*, user: User, now, evaluation_id: int, include_skipped: bool,
                     besides_snapshot_id: int | None = None, guard: str = "",
                     shuffled_ids: Collection[int] = (),
                     decisive_ids: Collection[int] = ()) -> tuple[str, list]:
    """queries.queue_claim_sql with this queue's lease."""
    return queries.queue_claim_sql(
        user_id=user.pk, now=now, lease_until=now + LEASE, evaluation_id=evaluation_id,
        include_skipped=include_skipped, besides_snapshot_id=besides_snapshot_id, guard=guard,
        shuffled=evaluation_id in shuffled_ids, decisive=evaluation_id in decisive_ids)


def _renew_held_sql(*, user: User, evaluation_ids: list[int], now, guard: str = "",
                    besides_snapshot_id: int | None = None,
                    returning: str = '"id"') -> tuple[str, list]:
    """queries.renew_held_sql with this queue's lease."""
    return queries.renew_held_sql(
        user_id=user.pk, evaluation_ids=evaluation_ids, now=now, lease_until=now + LEASE,
        guard=guard, besides_snapshot_id=besides_snapshot_id, returning=returning)


def _fetch_claim(statement: str, params: list, *, generic_plan: bool = False
                 ) -> dict | None:
    for _ in range(3):
        try:
            # A savepoint when the caller has a transaction open, so a lost race (below)
            # leaves it usable; none otherwise, the statement is atomic on its own.
            with transaction.atomic() if connection.in_atomic_block else nullcontext():
                return sql.fetch_one(statement, params, generic_plan=generic_plan)
        except IntegrityError:
            # The same person claimed another slot of this snapshot in a parallel request.
            continue
    return None


def _claim_snapshot(*, user: User, now, snapshot_id: int) -> dict | None:
    """Lease the user a free slot of the snapshot: its id and keyword_id."""
    return _fetch_claim(*queries.snapshot_claim_sql(
        user_id=user.pk, now=now, lease_until=now + LEASE, snapshot_id=snapshot_id))


def _renew_held(*, user: User, evaluation_ids: list[int], now) -> int | None:
    """Renew the lease of a slot the grader holds ungraded, if any; its id."""
    row = sql.fetch_one(*_renew_held_sql(user=user, evaluation_ids=evaluation_ids, now=now))
    return row["id"] if row else None


def _claim_next_assigned_postgresql(*, user: User, evaluation_ids: list[int],
                                    shuffled_ids: Collection[int],
                                    decisive_ids: Collection[int]) -> dict | None:
    now = timezone.now()
    columns, joins = queries.ASSIGNED_SLOT_SELECT
    for include_skipped in (False, True):
        for evaluation_id in evaluation_ids:
            if not include_skipped and evaluation_id == evaluation_ids[0]:
                # Only the first statement asks for a held slot: once it found none, the
                # grader holds none (their other requests aside, which may claim anyway).
                renew, renew_params = _renew_held_sql(
                    user=user, evaluation_ids=evaluation_ids, now=now, returning="*")
                claim, claim_params = _queue_claim_sql(
                    user=user, now=now, evaluation_id=evaluation_id, include_skipped=False,
                    guard=queries.HELD_FIRST, shuffled_ids=shuffled_ids,
                    decisive_ids=decisive_ids)
                ctes = queries.RENEW_OR_CLAIM_CTES.format(renew=renew, claim=claim)
                params = [*renew_params, *claim_params]
            else:
                claim, params = _queue_claim_sql(user=user, now=now, evaluation_id=evaluation_id,
                                                 include_skipped=include_skipped,
                                                 shuffled_ids=shuffled_ids,
                                                 decisive_ids=decisive_ids)
                ctes = f"f AS ({claim})"
            # A decisive claim's plan has the same shape whatever its parameters (its
            # candidates an array PostgreSQL guesses small), but PostgreSQL re-planned it
            # on every claim, which cost about as much as running it.
            row = _fetch_claim(f"WITH {ctes} SELECT {columns} FROM f {joins}", params,
                               generic_plan=evaluation_id in decisive_ids)
            if row is not None:
                return assigned_slot_from_row(row)
    return None


def _claim_next_id_portable(*, user: User, evaluation_ids: list[int],
                            shuffled_ids: Collection[int],
                            decisive_ids: Collection[int]) -> int | None:
    """SQLite's slot_claim_next_assigned, one statement a step (it has no UPDATE in WITH)."""
    now = timezone.now()
    held = _renew_held(user=user, evaluation_ids=evaluation_ids, now=now)
    if held is not None:
        return held
    for include_skipped in (False, True):
        for evaluation_id in evaluation_ids:
            claimed = _fetch_claim(*queries.evaluation_claim_sql(
                user_id=user.pk, now=now, lease_until=now + LEASE, evaluation_id=evaluation_id,
                include_skipped=include_skipped, shuffled=evaluation_id in shuffled_ids,
                decisive=evaluation_id in decisive_ids))
            if claimed is not None:
                return claimed["id"]
    return None


def _gold_probe_next(*, user: User, evaluation_ids: list[int],
                     gold_ids: Collection[int]) -> dict | None:
    """A probe for this claim (judgments.gold.probe_next, the rule the grading page uses
    too), as a slot's row; None: claim a slot."""
    probe = gold.probe_next(user=user, evaluation_ids=evaluation_ids, gold_ids=gold_ids)
    return None if probe is None else gold.probe_row(probe)


def slot_claim_next_assigned(*, user: User, evaluation_ids: list[int],
                             shuffled_ids: Collection[int] = (),
                             decisive_ids: Collection[int] = (),
                             gold_ids: Collection[int] = ()) -> dict | None:
    """The grader's next slot among these evaluations (in this order), leased, as
    selectors.assigned_slot reads it; None when nothing is left for them.

    A slot the grader already holds comes back first (reloading the page or asking twice
    does not hoard leases); then the first free slot in evaluation, keyword and position
    order (in `shuffled_ids`' evaluations, each keyword's results in the grader's own
    order: queries.shuffle_key; in `decisive_ids`', first the slots whose grade can narrow
    the widest bounds most: queries.decisive_queue_order); results the grader skipped come
    last. In `gold_ids`' evaluations (a gold rate and gold items to use) a share of claims
    hands out a gold probe instead, read as a slot (_gold_probe_next). On PostgreSQL each
    step leases and reads in one statement. The caller has checked that the evaluations are
    active and route work to the grader (queue_selectors.queue_evaluation_ids,
    queue_selectors.target_queue).
    """
    if not evaluation_ids:
        return None
    if gold_ids:
        probe = _gold_probe_next(user=user, evaluation_ids=evaluation_ids, gold_ids=gold_ids)
        if probe is not None:
            return probe
    if sql.is_postgresql():
        return _claim_next_assigned_postgresql(user=user, evaluation_ids=evaluation_ids,
                                               shuffled_ids=shuffled_ids,
                                               decisive_ids=decisive_ids)
    slot_id = _claim_next_id_portable(user=user, evaluation_ids=evaluation_ids,
                                      shuffled_ids=shuffled_ids, decisive_ids=decisive_ids)
    return None if slot_id is None else assigned_slot(slot_id=slot_id)


def slot_claim_next(
    *, user: User, team: Team, evaluation: Evaluation | None = None
) -> FeedbackSlot | None:
    """The grader's next slot in the team's queue (or one evaluation's), leased and loaded
    as a model; see slot_claim_next_assigned."""
    evaluation_ids, shuffled_ids, decisive_ids = queue_evaluations(
        user=user, team=team, evaluation=evaluation)
    slot = slot_claim_next_assigned(user=user, evaluation_ids=evaluation_ids,
                                    shuffled_ids=shuffled_ids, decisive_ids=decisive_ids)
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


