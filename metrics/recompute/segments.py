"""Per-segment and traffic-weighted sums of an evaluation's metrics (metrics.models.SegmentSums),
kept beside the plain running sums (metrics.recompute.means) by the same writers, under
the same evaluation lock:
- every write of keyword values moves them old -> new (segment_sums_move), weighted and
  grouped by the keywords' weights and tags as they are now;
- a means refresh rebuilds a metric's from every stored value when they are not known
  (new, forgotten, or recompute_metrics' rebuild);
- a change of a started evaluation's keyword weights or tags rebuilds them at once
  (metrics.receivers), since the moves assume each keyword's weight and tags are the ones
  its stored value was added with.
A metric's segment sums are known only while its plain sums are (queries.metric_sums_forget
drops both): the writes move them only then.
"""

from collections.abc import Iterable

from evaluations.models import Keyword
from metrics import queries
from metrics.models import SegmentSums
from metrics.selectors import segment_totals_from_values, segment_totals_read
from metrics_engine.exact_sum import total_encode
from metrics_engine.segment_sums import EVERY, SegmentKey, SegmentTotals, keyword_shares

_TOTAL_FIELDS = ("value_total", "lower_total", "upper_total")
_COUNT_FIELDS = ("value_count", "value_weight", "lower_weight", "upper_weight",
                 "inexact_count")


def segment_sums_move(*, metric_ids: Iterable[int],
                      changes: list[tuple[queries.KeywordValueRow | None,
                                          queries.KeywordValueRow]]) -> None:
    """Move the known segment sums of `metric_ids` by each (old row or None, new row)
    change of a keyword's value; a metric a non-finite value breaks is forgotten (the
    refresh rebuilds it). Runs in the value write's transaction."""
    if not changes:
        return
    keyword_ids = sorted({new.keyword_id for _, new in changes})
    traffic = {pk: (weight, tags) for pk, weight, tags in Keyword.objects.filter(
        pk__in=keyword_ids).values_list("pk", "weight", "tags")}
    # Only the rows these keywords count in: a team may tag by brand, thousands of tags.
    stored = segment_totals_read(
        metric_ids=metric_ids,
        segments={EVERY, *(tag for _, tags in traffic.values() for tag in tags)})
    changes = [(old, new) for old, new in changes if new.metric_id in stored]
    touched: dict[int, dict[SegmentKey, SegmentTotals]] = {}
    broken: set[int] = set()
    for old, new in changes:
        weight, tags = traffic.get(new.keyword_id, (1, []))
        by_segment = stored[new.metric_id]
        for key, share in keyword_shares(weight, tags):
            totals = by_segment.setdefault(key, SegmentTotals())
            try:
                for row, sign in ((old, -1), (new, 1)):
                    if row is not None:
                        totals.move(sign, share, row.value, row.lower, row.upper,
                                    row.bounds_exact)
            except (OverflowError, ValueError):
                broken.add(new.metric_id)
            touched.setdefault(new.metric_id, {})[key] = totals
    _store({pk: by_segment for pk, by_segment in touched.items() if pk not in broken},
           replace=False)
    segment_sums_forget(metric_ids=sorted(broken))


def segment_sums_rebuild(*, metric_ids: list[int]) -> None:
    """Replace the metrics' segment sums with those of every stored value."""
    SegmentSums.objects.filter(metric_id__in=metric_ids).delete()
    rebuilt = segment_totals_from_values(metric_ids=metric_ids)
    # A metric whose values no exact sum holds stays unknown (read from its values).
    _store(rebuilt, replace=True)


def segment_sums_reweigh(*, evaluation_id: int) -> None:
    """The evaluation's keyword weights or tags changed in the transaction under way:
    rebuild its known segment sums from the values with the new ones (the others stay
    unknown until the next refresh). Under the evaluation's lock."""
    if not queries.evaluation_lock(evaluation_id=evaluation_id):
        return
    known = list(SegmentSums.objects.filter(
        metric__evaluation_id=evaluation_id, segment=EVERY, weighted=False
    ).values_list("metric_id", flat=True))
    segment_sums_forget(evaluation_id=evaluation_id)
    if known:
        segment_sums_rebuild(metric_ids=known)


def segment_sums_forget(*, metric_ids: list[int] | None = None,
                        evaluation_id: int | None = None) -> None:
    """Delete the segment sums of these metrics (or of the evaluation's): not known."""
    if metric_ids is not None:
        if metric_ids:
            SegmentSums.objects.filter(metric_id__in=metric_ids).delete()
        return
    SegmentSums.objects.filter(metric__evaluation_id=evaluation_id).delete()


def _row(metric_id: int, key: SegmentKey, totals: SegmentTotals) -> SegmentSums:
    return SegmentSums(
        metric_id=metric_id, segment=key[0], weighted=key[1],
        **{name: total_encode(getattr(totals, name)) for name in _TOTAL_FIELDS},
        **{name: getattr(totals, name) for name in _COUNT_FIELDS})


def _store(totals: dict[int, dict[SegmentKey, SegmentTotals]], *, replace: bool) -> None:
    rows = [_row(metric_id, key, segment) for metric_id, by_segment in sorted(totals.items())
            for key, segment in sorted(by_segment.items())]
    if not rows:
        return
    if replace:
        SegmentSums.objects.bulk_create(rows, batch_size=1000)
        return
    SegmentSums.objects.bulk_create(
        rows, batch_size=1000, update_conflicts=True,
        unique_fields=["metric", "segment", "weighted"],
        update_fields=[*_TOTAL_FIELDS, *_COUNT_FIELDS])
