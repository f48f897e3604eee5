"""The evaluation dashboard's counts (metrics.models.DashboardCount), kept by the recompute.

Each keyword's share (KeywordDashboardShare) is what it adds to the counts: how many of its
snapshots have each grade pattern (slots, graded, lowest, highest, sum: the multiset of at
most three grades) and, per metric, which tenth of [0, 1] its value falls in (the bins of
the page's histogram, numpy's rule: [e_i, e_i+1), the last one closed; -1 outside [0, 1]).
A run replaces its keywords' shares old -> new and adds the difference to the counts, so
the page reads a few dozen rows at any number of keywords.

A from-scratch run counts the shares itself from the slots and values it already holds
(shares_count): regrouping every slot in SQL was a large part of such a run at 100,000
keywords (bench/RESULTS.md).
What it counted is kept only for keywords whose version has not moved since it read them
(checked under the evaluation's lock); the others are counted again from the database.

The updates of one evaluation take turns on its row (FOR NO KEY UPDATE): two overlapping
runs cannot both subtract the same old share. The counts are "built" once they cover every
keyword; the first update of an evaluation that is not builds them from every keyword, and
a from-scratch recompute (recompute_metrics) rebuilds them.
"""

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from django.db import transaction
from django.db.models import Q

from evaluations.models import Evaluation
from metrics import queries
from metrics.models import DashboardCount, KeywordDashboardShare
from metrics.selectors import evaluation_keyword_versions
from searchtweak.bulk_insert import bulk_insert, bulk_insert_rows

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


@dataclass(frozen=True)
class CountedShares:
    """Shares a from-scratch run counted (shares_count) and the keyword versions it read
    its slots and computed its values at: {keyword id: version}, {keyword id: share} and
    the sum of those shares, {key: count}."""

    versions: dict[int, int]
    shares: dict[int, dict[str, int]]
    totals: dict[str, int]


def dashboard_aggregates_rebuild(*, evaluation_id: int,
                                 counted: CountedShares | None = None) -> None:
    """Every keyword's share and the counts from scratch (recompute_metrics): `counted`
    where its keyword's version is still the one it was counted at, else from the
    database."""
    with transaction.atomic():
        if not _lock(evaluation_id):
            return
        if counted is None:
            _rebuild(evaluation_id)
        else:
            _store(evaluation_id, *_settled(evaluation_id, counted))


def shares_count(*, slot_table: np.ndarray, keyword_ids: Sequence[int],
                 metric_values: Sequence[tuple[int, np.ndarray]], versions: dict[int, int]
                 ) -> CountedShares:
    """The shares of `keyword_ids`, as queries._share_parts counts them, from rows of
    `slot_table` (selectors.evaluation_slot_table) and each metric's values for the
    keywords, (metric id, values in keyword order, NaN for none), counted at `versions`.
    A keyword with neither slots nor values has an empty share.

    Counted as arrays of (keyword, key, count) entries, a dict built per keyword at the
    end: 1.4M entries at 100,000 keywords, too many to add one by one in Python."""
    ids = np.asarray(keyword_ids, dtype=np.int64)
    table = slot_table[np.isin(slot_table[:, 0], ids)]
    entry_keywords, entry_keys, entry_counts, names = _pattern_entries(table)
    edges = np.asarray(_INNER_EDGES)
    for metric_id, values in metric_values:
        values = np.asarray(values, dtype=float)
        present = ~np.isnan(values)
        bins = np.searchsorted(edges, values[present], side="right")
        bins[(values[present] < 0) | (values[present] > 1)] = -1
        entry_keywords.append(ids[present])
        entry_keys.append(len(names) + bins + 1)
        entry_counts.append(np.ones(len(bins), dtype=np.int64))
        names += [f"b:{metric_id}:{b}" for b in range(-1, BINS)]
    keyword_of = np.concatenate(entry_keywords)
    key_of, count_of = np.concatenate(entry_keys), np.concatenate(entry_counts)
    order = np.argsort(keyword_of, kind="stable")
    keyword_of, key_of, count_of = keyword_of[order], key_of[order], count_of[order]
    firsts = np.flatnonzero(_changes([keyword_of]))
    ends = np.r_[firsts[1:], len(order)][:len(firsts)]  # none when nothing was counted
    key_names = [names[key] for key in key_of.tolist()]
    counts = count_of.tolist()
    shares: dict[int, dict[str, int]] = {pk: {} for pk in keyword_ids}
    for keyword_id, first, end in zip(keyword_of[firsts].tolist(), firsts.tolist(),
                                      ends.tolist(), strict=True):
        shares[keyword_id] = dict(zip(key_names[first:end], counts[first:end], strict=True))
    totals = np.bincount(key_of, weights=count_of, minlength=len(names))
    return CountedShares(versions, shares, {names[key]: int(totals[key])
                                            for key in np.flatnonzero(totals).tolist()})


def _pattern_entries(table: np.ndarray
                     ) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray], list[str]]:
    """Each keyword's grade patterns in `table`'s slots (grouped by (keyword, position),
    one snapshot each) as ([keyword ids], [key numbers], [snapshot counts], key names)."""
    if not len(table):
        return [], [], [], []
    order = np.lexsort((table[:, 1], table[:, 0]))
    keyword_of, position_of, grade = table[order, 0], table[order, 1], table[order, 3]
    graded_slot = grade != queries.UNGRADED
    starts = np.flatnonzero(np.r_[True, (keyword_of[1:] != keyword_of[:-1])
                                        | (position_of[1:] != position_of[:-1])])
    total = np.diff(np.r_[starts, len(order)])
    graded = np.add.reduceat(graded_slot.astype(np.int64), starts)
    grade_sum = np.add.reduceat(np.where(graded_slot, grade, 0), starts)
    # A snapshot without a grade gets the sentinels, the same for every such snapshot; its
    # key leaves them out.
    lowest = np.minimum.reduceat(np.where(graded_slot, grade, np.iinfo(np.int64).max), starts)
    highest = np.maximum.reduceat(np.where(graded_slot, grade, np.iinfo(np.int64).min), starts)
    # Grouped by sorting on the columns themselves: numpy.unique(axis=0) sorts the rows as
    # opaque bytes, 4 s for a million snapshots.
    pattern = (total, graded, lowest, highest, grade_sum)
    by_pattern = np.lexsort(pattern[::-1])
    sorted_pattern = [column[by_pattern] for column in pattern]
    new_pattern = _changes(sorted_pattern)
    pattern_of = np.empty(len(total), dtype=np.int64)
    pattern_of[by_pattern] = np.cumsum(new_pattern) - 1
    names = [_pattern_key(*row) for row in zip(
        *(column[new_pattern].tolist() for column in sorted_pattern), strict=True)]
    pairs = np.lexsort((pattern_of, keyword_of[starts]))
    keyword_sorted, pattern_sorted = keyword_of[starts][pairs], pattern_of[pairs]
    firsts = np.flatnonzero(_changes([keyword_sorted, pattern_sorted]))
    return ([keyword_sorted[firsts]], [pattern_sorted[firsts]],
            [np.diff(np.r_[firsts, len(pairs)])], names)


def _changes(columns: list[np.ndarray]) -> np.ndarray:
    """True where a row of the sorted `columns` differs from the one before (and first)."""
    changed = np.zeros(len(columns[0]), dtype=bool)
    changed[:1] = True
    for column in columns:
        changed[1:] |= column[1:] != column[:-1]
    return changed


def _pattern_key(total: int, graded: int, lowest: int, highest: int, grade_sum: int) -> str:
    if not graded:  # SQL's MIN/MAX/SUM of no grade: null, an empty field
        return f"p:{total}:0:::"
    return f"p:{total}:{graded}:{lowest}:{highest}:{grade_sum}"


def _settled(evaluation_id: int, counted: CountedShares
             ) -> tuple[dict[int, Mapping[str, int]], Counter]:
    """The shares to store and their sum: what was counted for each keyword of the
    evaluation whose version has not moved since, the database's for the others (graded,
    fetched or added meanwhile); a keyword deleted meanwhile has none."""
    current = dict(evaluation_keyword_versions(evaluation_id=evaluation_id))
    moved = sorted(pk for pk, version in current.items()
                   if counted.versions.get(pk) != version or pk not in counted.shares)
    shares: dict[int, Mapping[str, int]] = {
        pk: counted.shares[pk] for pk in current if pk not in moved}
    totals = Counter(counted.totals)
    for pk in {*moved, *(counted.shares.keys() - current.keys())}:
        totals.subtract(counted.shares.get(pk, {}))
    fresh = keyword_shares(moved)
    for share in fresh.values():
        totals.update(share)
    shares.update(fresh)
    return shares, totals


def _store(evaluation_id: int, shares: dict[int, Mapping[str, int]], totals: Counter) -> None:
    """Replace the evaluation's shares and counts by `shares` and their sum `totals` (under
    its lock)."""
    KeywordDashboardShare.objects.filter(evaluation_id=evaluation_id).delete()
    # Rows, not model instances: building 100,000 of them cost more than their COPY.
    bulk_insert_rows(KeywordDashboardShare(evaluation_id=evaluation_id),
                     ["keyword_id", "counts"],
                     ((pk, share) for pk, share in sorted(shares.items()) if share))
    DashboardCount.objects.filter(evaluation_id=evaluation_id).delete()
    bulk_insert([DashboardCount(evaluation_id=evaluation_id, key=key, count=count)
                 for key, count in sorted(totals.items()) if count]
                + [DashboardCount(evaluation_id=evaluation_id, key=BUILT, count=1)])


def dashboard_aggregates_forget(*, evaluation_id: int) -> None:
    """Drop the evaluation's counts and shares, under its lock: what follows changes slots
    or values without a recompute of their keywords (keywords deleted). The page then
    counts from scratch until a run builds them again."""
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
