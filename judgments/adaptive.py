"""Adaptive slots: strategy "1 → 3" (evaluations.models.ADAPTIVE_STRATEGY).

Each result gets one slot when fetched (judgments.slots.slots_create_for_snapshots). After
every grade, judgments.grading asks `slots_open_where_it_matters` whether the result needs
another opinion; the slots it opens are ordinary free slots the queue hands out like any
other, and the spec's aggregation (docs/METRICS.md stage 1) reads whatever slots exist.

Slots open one at a time and only once every slot of the result is graded, so a condition
is judged on complete evidence and a result never waits on two open slots at once:
- the second slot (index 1) opens when the first grade was marked unsure (UNSURE), or when
  the result weighs heavily on a keyword whose bounds are still wide (BOUNDS: its position
  is within the cutoff k of the evaluation's first metric and that keyword's stored bounds
  of that metric are wider than WIDE_BOUNDS, or not stored yet);
- the third (index 2) opens when, with two grades, one of them is unsure (UNSURE), a
  counting judge's and a person's grade disagree (DISAGREE, `grades_disagree`), or the
  grades sit at the binary cut-off (CUTOFF, `at_binary_cutoff`). BOUNDS does not open the
  third: the second opinion on a heavy result is taken, and the third is for a split.
A single grade is never at the cut-off and never has a judge beside a person, so DISAGREE
and CUTOFF only ever open the third slot.
- with the evaluation's second_grader_below_gold_bar on, the second or
  third opens when every grade of the result so far comes from people below the team's
  gold bar (LOW_GOLD, judgments.gold_accuracy.graders_below_bar): such a grader never
  decides a result alone, and two of them not without a third. It comes after UNSURE,
  DISAGREE and CUTOFF (a more telling reason when both hold) and before BOUNDS.

A result with a lead's adjudicated answer (judgments.adjudication) opens nothing: it is
decided. Never more than three slots; a reset empties a slot but never removes one, and nothing
here runs on a reset, so a result is never opened twice for the same reason; an opened
slot's `opened_because` says why (the dashboard and the API read it).
"""

from collections.abc import Callable, Iterable

from django.db import transaction

from evaluations.models import Evaluation, Snapshot
from judgments import gold_accuracy
from judgments import scales as scale_lookup
from judgments.models import AdjudicatedAnswer, FeedbackSlot, OpenedBecause
from metrics_engine.errors import MetricInputError
from metrics_engine.scales import BINARY, SCALES
from metrics_engine.transform import resolve_transformer

# Most slots a result gets under "1 → 3".
MAX_SLOTS = 3
# Bounds of the first metric wider than this (on its 0..1 or 0..k range) count as "still
# wide": the keyword's value may still move by more than half its scale for a 0..1 metric.
WIDE_BOUNDS = 0.5

# The metrics app's bounds, read without importing it (metrics.apps registers this at
# start-up, as it does the decisive queue's key): `read(evaluation_id=, keyword_id=)` gives
# (k of the evaluation's first metric, stored width of that keyword's bounds of it, None
# when none is stored), or None when the evaluation has no metric.
_bounds_width: Callable[..., tuple[int, float | None] | None] | None = None


def register_bounds_width(read: Callable[..., tuple[int, float | None] | None] | None) -> None:
    global _bounds_width
    _bounds_width = read


def binary_mapping(evaluation: Evaluation) -> dict[int, int] | None:
    """Each grade of the evaluation's scale as the binary metrics read it (stage 0: the
    evaluation's transformer to binary, else the team's, else the default); None when the
    scale has no way to binary (an admin scale without a transformer)."""
    scale = scale_lookup.scale_for_team(team_id=evaluation.team_id, code=evaluation.scale)
    if scale is None:
        return None
    prefix = f"{evaluation.scale}->"
    transformers = {
        **{key: mapping for key, mapping in
           scale_lookup.transformer_mappings(team_id=evaluation.team_id).items()
           if key.startswith(prefix)},
        **(evaluation.transformers or {}),
    }
    try:
        mapping = resolve_transformer(scale.core_scale(), SCALES[BINARY], transformers)
    except (MetricInputError, ValueError):
        return None
    return {int(grade): int(value) for grade, value in mapping.items()}


def at_binary_cutoff(grades: Iterable[int], binary: dict[int, int] | None) -> bool:
    """Whether graded slots sit at the binary cut-off: as many of them map to relevant as to
    not relevant, so the binary majority vote of stage 1 is a tie (null). A graded or detail
    scale's cut-off is where its transformer to binary flips (graded by default between 0
    and 1, detail between 1 and 2)."""
    if binary is None:
        return False
    votes = [binary[grade] for grade in grades]
    return bool(votes) and votes.count(1) == votes.count(0)


def grades_disagree(a: int, b: int, binary: dict[int, int] | None) -> bool:
    """Two grades disagree when they fall on different sides of the binary cut-off (what
    the binary metrics see), or lie more than one grade apart on the evaluation's scale
    (what the graded metrics see: 1 against 2 agrees, 1 against 3 does not)."""
    if binary is not None and binary[a] != binary[b]:
        return True
    return abs(a - b) > 1


def _reason_to_open(slots: list[dict], *, binary: Callable[[], dict[int, int] | None],
                    heavy_and_wide: Callable[[], bool],
                    only_below_bar: Callable[[list[dict]], bool]) -> str | None:
    """Why the result (its slots, index order) needs one more slot, or None."""
    if len(slots) >= MAX_SLOTS or any(slot["grade"] is None for slot in slots):
        return None
    if any(slot["unsure"] for slot in slots):
        return OpenedBecause.UNSURE
    if len(slots) == 1:
        if only_below_bar(slots):
            return OpenedBecause.LOW_GOLD
        return OpenedBecause.BOUNDS if heavy_and_wide() else None
    mapping = binary()
    judges = [s["grade"] for s in slots if s["user__is_judge"]]
    people = [s["grade"] for s in slots if s["user_id"] is not None and not s["user__is_judge"]]
    if any(grades_disagree(j, p, mapping) for j in judges for p in people):
        return OpenedBecause.DISAGREE
    if at_binary_cutoff([s["grade"] for s in slots], mapping):
        return OpenedBecause.CUTOFF
    return OpenedBecause.LOW_GOLD if only_below_bar(slots) else None


@transaction.atomic
def slots_open_where_it_matters(*, evaluation_id: int, snapshot_ids: Iterable[int]
                                ) -> dict[int, str]:
    """Open the next slot of each of these results of a "1 → 3" evaluation where one of
    the module's conditions holds; {snapshot id: reason} of those opened. Does nothing for
    another strategy or an evaluation that takes no grades. Idempotent: run again on the
    same grades it opens nothing more (the opened slot is ungraded)."""
    evaluation = Evaluation.objects.filter(pk=evaluation_id).first()
    ids = sorted(set(snapshot_ids))
    if evaluation is None or not evaluation.is_adaptive or not evaluation.takes_grades() \
            or not ids:
        return {}
    # Two grades landing at once on one result: the second waits here and then reads the
    # first, so the result's last grade always sees the others.
    list(Snapshot.objects.select_for_update().filter(pk__in=ids).values_list("pk", flat=True))
    # A lead's adjudicated answer settles a result: it gets no more graders.
    settled = set(AdjudicatedAnswer.objects.filter(snapshot_id__in=ids)
                  .values_list("snapshot_id", flat=True))
    by_snapshot: dict[int, list[dict]] = {}
    for slot in FeedbackSlot.objects.filter(snapshot_id__in=ids).exclude(
            snapshot_id__in=settled).order_by(
            "snapshot_id", "index").values("snapshot_id", "keyword_id", "keyword_position",
                                           "position", "index",
                                           "grade", "unsure", "user_id", "user__is_judge",
                                           "graded_by_id"):
        by_snapshot.setdefault(slot["snapshot_id"], []).append(slot)
    cached: dict[str, object] = {}

    def binary() -> dict[int, int] | None:
        if "binary" not in cached:
            cached["binary"] = binary_mapping(evaluation)
        return cached["binary"]  # type: ignore[return-value]

    def only_below_bar(slots: list[dict]) -> bool:
        if not evaluation.second_grader_below_gold_bar:
            return False
        if "below" not in cached:  # one read for every grader of these results
            cached["below"] = gold_accuracy.graders_below_bar(
                team_id=evaluation.team_id,
                user_ids={s["user_id"] for rows in by_snapshot.values() for s in rows
                          if s["user_id"] is not None and not s["user__is_judge"]})
        # A grade a lead wrote over the grader's (graded_by) is the lead's, not theirs.
        return all(s["user_id"] in cached["below"] and s["graded_by_id"] is None  # type: ignore[operator]
                   for s in slots)

    opened: dict[int, str] = {}
    new_slots = []
    for snapshot_id, slots in by_snapshot.items():
        first = slots[0]

        def heavy_and_wide(first: dict = first) -> bool:
            if _bounds_width is None:
                return False
            read = _bounds_width(evaluation_id=evaluation.pk, keyword_id=first["keyword_id"])
            if read is None:
                return False
            k, width = read
            return first["position"] <= k and (width is None or width > WIDE_BOUNDS)

        reason = _reason_to_open(slots, binary=binary, heavy_and_wide=heavy_and_wide,
                                 only_below_bar=only_below_bar)
        if reason is None:
            continue
        opened[snapshot_id] = reason
        new_slots.append(FeedbackSlot(
            snapshot_id=snapshot_id, keyword_id=first["keyword_id"], evaluation=evaluation,
            index=len(slots), keyword_position=first["keyword_position"],
            position=first["position"], opened_because=reason))
    FeedbackSlot.objects.bulk_create(new_slots)
    return opened

