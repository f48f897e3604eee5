"""The evaluation dashboard's counts (metrics.models.DashboardCount), kept by the recompute.

Each keyword's share (KeywordDashboardShare) is what it adds to the counts: how many of its
snapshots have each grade pattern (slots, graded, lowest, highest, sum: the multiset of at
most three grades) and, per metric, which tenth of [0, 1] its value falls in (the bins of
the page's histogram, numpy's rule: [e_i, e_i+1), the last one closed; -1 outside [0, 1]).
A run replaces its keywords' shares old -> new and adds the difference to the counts, so
the page reads a few dozen rows at any number of keywords.

The updates of one evaluation take turns on its row (FOR NO KEY UPDATE): two overlapping
runs cannot both subtract the same old share. The counts are "built" once they cover every
keyword; the first update of an evaluation that is not builds them from every keyword, and
a from-scratch recompute (recompute_metrics) rebuilds them.
"""

from collections import Counter
from collections.abc import Iterable

import numpy as np
from django.db import transaction
from django.db.models import Q

from evaluations.models import Evaluation
from metrics import queries
from metrics.models import DashboardCount, KeywordDashboardShare

BUILT = "built"
BINS = 10
# The inner edges of numpy.histogram's bins over [0, 1] (the page's histogram of a bounded
# metric). The database compares values with them as they are (binary floats, 0.3's edge
# is 0.30000000000000004), so its bins are numpy's.
_INNER_EDGES = [float(edge) for edge in np.linspace(0.0, 1.0, BINS + 1)[1:-1]]
_CHUNK = 2000


def parse_pattern(key: str) -> tuple[int, int, int | None, int | None, int | None]:
    total, graded, lo, hi, grade_sum = (None if v == "" else int(v) for v in key.split(":")[1:])
    return total, graded, lo, hi, grade_sum


def keyword_shares(keyword_ids: list[int]) -> dict[int, Counter]:
    """The shares of `keyword_ids` from their slots and stored values, now."""
    shares: dict[int, Counter] = {pk: Counter() for pk in keyword_ids}
    for start in range(0, len(keyword_ids), _CHUNK):
        for keyword_id, key, count in queries.dashboard_share_rows(
                keyword_ids=keyword_ids[start:start + _CHUNK], inner_edges=_INNER_EDGES):
            shares[keyword_id][key] += count
    return shares


def dashboard_aggregates_update(*, keyword_ids: Iterable[int]) -> None:
    """Replace the keywords' shares with what their slots and values give now and move the
    evaluation's counts by the difference (all the keywords are of one evaluation).
    Six statements and the transaction's two once the counts are built."""
    keyword_ids = sorted(set(keyword_ids))
    if not keyword_ids:
        return
    with transaction.atomic():
        locked = queries.keyword_evaluation_lock(keyword_id=keyword_ids[0], built_key=BUILT)
        if locked is None:
            return
        evaluation_id, built = locked
        if not built:
            _rebuild(evaluation_id)
            return
        new = keyword_shares(keyword_ids)
        delta: Counter = Counter()
        for counts in KeywordDashboardShare.objects.filter(
                keyword_id__in=keyword_ids).values_list("counts", flat=True):
            delta.subtract(counts)
        for counts in new.values():
            delta.update(counts)
        # An upsert, an empty share included: no DELETE first.
        KeywordDashboardShare.objects.bulk_create(
            [KeywordDashboardShare(keyword_id=pk, evaluation_id=evaluation_id,
                                   counts=dict(counts)) for pk, counts in new.items()],
            update_conflicts=True, unique_fields=["keyword"], update_fields=["counts"])
        _add(evaluation_id, {key: n for key, n in delta.items() if n})


def dashboard_aggregates_rebuild(*, evaluation_id: int) -> None:
    """Every keyword's share and the counts from scratch (recompute_metrics)."""
    with transaction.atomic():
        if _lock(evaluation_id):
            _rebuild(evaluation_id)


def dashboard_aggregates_forget(*, evaluation_id: int) -> None:
    """Drop the evaluation's counts and shares, under its lock: what follows changes slots
    or values without a recompute of their keywords (keywords deleted; its last metric
    removed, after which fetches mark nothing dirty). The page then counts from scratch
    until a recompute with metrics builds them again."""
    if _lock(evaluation_id):
        DashboardCount.objects.filter(evaluation_id=evaluation_id).delete()
        KeywordDashboardShare.objects.filter(evaluation_id=evaluation_id).delete()


def evaluation_slot_counts(*, evaluation_id: int) -> tuple[int, int] | None:
    """(slots, graded slots) of the evaluation from its built counts' grade patterns, a
    few dozen rows at any size; None when the counts are not built."""
    rows = DashboardCount.objects.filter(
        Q(key=BUILT) | Q(key__startswith="p:"), evaluation_id=evaluation_id,
    ).values_list("key", "count")
    slots = graded = 0
    built = False
    for key, count in rows:
        if key == BUILT:
            built = True
            continue
        total, graded_here, *_ = parse_pattern(key)
        slots += count * total
        graded += count * graded_here
    return (slots, graded) if built else None


def _lock(evaluation_id: int) -> bool:
    return Evaluation.objects.select_for_update(no_key=True).filter(
        pk=evaluation_id).values_list("pk").exists()


def _rebuild(evaluation_id: int) -> None:
    queries.dashboard_shares_rebuild(evaluation_id=evaluation_id, inner_edges=_INNER_EDGES,
                                     built_key=BUILT)


def _add(evaluation_id: int, delta: dict[str, int]) -> None:
    if not delta:
        return
    queries.dashboard_counts_add(evaluation_id=evaluation_id, delta=delta)
    # A count that fell to 0 stays, as a row the page weighs 0: no DELETE each run.
