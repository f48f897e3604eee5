"""Opening an evaluation's slots: the empty grades each saved snapshot waits for."""

from collections.abc import Mapping, Sequence

from django.db import transaction

from evaluations.models import Evaluation, Keyword, Snapshot
from evaluations.strategies import strategy_slot_counts
from judgments.grading import slots_reuse_fill
from judgments.models import FeedbackSlot
from searchtweak.bulk_insert import bulk_insert_rows


def slots_create_for_snapshots(
    *, evaluation: Evaluation, keyword: Keyword, snapshots: Sequence[Snapshot]
) -> int:
    """slots_create_for_keywords for one keyword."""
    return slots_create_for_keywords(evaluation=evaluation,
                                     snapshots_by_keyword={keyword: snapshots})


@transaction.atomic
def slots_create_for_keywords(
    *, evaluation: Evaluation, snapshots_by_keyword: Mapping[Keyword, Sequence[Snapshot]]
) -> int:
    """Create the evaluation's `strategy` empty slots for each saved snapshot (one under
    "1 → 3": judgments.adaptive opens more), then fill them with earlier grades when the
    evaluation reuses them. All the keywords' slots go in one COPY on PostgreSQL
    (searchtweak.bulk_insert), however many keywords a fetch stores at once; how many
    slots. (COPY returns no ids, and no caller needs the slots' own.)"""
    opened = strategy_slot_counts(evaluation.strategy)[0]
    # Rows, not instances: nothing reads the new slots back, and a FeedbackSlot per row
    # cost more than copying it (a fetch of 100,000 keywords opens a million or more).
    created = bulk_insert_rows(
        FeedbackSlot(evaluation=evaluation),
        ["snapshot_id", "keyword_id", "index", "keyword_position", "position"],
        ((snapshot.pk, keyword.pk, index, keyword.position, snapshot.position)
         for keyword, snapshots in snapshots_by_keyword.items()
         for snapshot in snapshots
         for index in range(opened)))
    if evaluation.reuse_grades != Evaluation.Reuse.NONE:
        for keyword, snapshots in snapshots_by_keyword.items():
            if snapshots:
                slots_reuse_fill(evaluation=evaluation, keyword=keyword, snapshots=snapshots)
    return created
