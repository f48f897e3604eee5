"""Each keyword's snapshots with the slots a viewer may see: the expanding rows of the
per-keyword table and the side-by-side keyword view of compare.
"""

from collections import defaultdict
from dataclasses import dataclass

from evaluations.models import Snapshot
from judgments.models import FeedbackSlot
from searchtweak.access import GradeVisibility


@dataclass(frozen=True)
class SlotView:
    """What the expanding rows show of one slot (plain values: the table builds hundreds)."""

    index: int
    grade: int | None
    unsure: bool
    username: str | None


@dataclass(frozen=True)
class SnapshotDetail:
    snapshot: Snapshot
    slots: list[SlotView]


def snapshot_details(keyword_ids: list[int], *, visibility: GradeVisibility
                     ) -> dict[int, list[SnapshotDetail]]:
    """Each keyword's snapshots in position order with the slots `visibility` lets the
    viewer see (a grader: their own only), in two queries."""
    slots: dict[int, list[SlotView]] = defaultdict(list)
    rows = FeedbackSlot.objects.filter(visibility.slots(), keyword_id__in=keyword_ids).order_by(
        "snapshot_id", "index").values_list(
        "snapshot_id", "index", "grade", "unsure", "user__username", "reused_from_pool_id")
    for snapshot_id, index, grade, unsure, username, pool_id in rows:
        # A grade copied from the team's imported judgments has no grader.
        if username is None and pool_id is not None:
            username = "(import)"
        slots[snapshot_id].append(SlotView(index, grade, unsure, username))
    details: dict[int, list[SnapshotDetail]] = defaultdict(list)
    for snapshot in Snapshot.objects.filter(keyword_id__in=keyword_ids).only(
            "pk", "keyword_id", "position", "doc_id", "name").order_by("keyword_id", "position"):
        details[snapshot.keyword_id].append(SnapshotDetail(snapshot, slots[snapshot.pk]))
    return details
