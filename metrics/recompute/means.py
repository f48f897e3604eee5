"""After each run: an evaluation's means, keyword counts, history and progress (the run
then asks the evaluation's lifecycle to finish it if it is complete: metrics.recompute.run).

The means come from exact running sums (MetricSums) that every write of keyword values
keeps, in the write's own transaction (keyword_values_write), so a refresh reads one row
per metric instead of every keyword's value.
"""

from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from metrics import queries
from metrics.models import MetricHistoryPoint
from metrics.recompute import aggregates, segments
from metrics_engine.exact_sum import exact_total, exact_units, mean_from_total

# Rows per INSERT statement: far below SQLite's 32,766 bound parameters.
WRITE_CHUNK = 2000


def keyword_values_write(*, evaluation_id: int, columns: queries.KeywordValueColumns) -> None:
    """Upsert keyword values of one evaluation (queries.keyword_values_upsert: an older
    version never overwrites) and move its metrics' running sums by each written row's
    old -> new value, in one transaction per chunk. The one writer of KeywordMetricValue.

    The evaluation's lock (the one its means refreshes take) is held first, so every
    writer of its values, and a refresh rebuilding its sums, runs after the previous one
    committed: the old values read here are the ones the upsert replaces.
    """
    now = timezone.now()
    for start in range(0, columns.row_count, WRITE_CHUNK):
        chunk = columns.part(start, start + WRITE_CHUNK)
        with transaction.atomic():
            if not queries.evaluation_lock(evaluation_id=evaluation_id):
                return  # deleted since
            metric_ids = sorted(set(chunk.metric_ids))
            sums = queries.metric_sums_read(metric_ids=metric_ids)
            if not sums:  # none known (recompute_metrics drops them): nothing to move
                queries.keyword_values_upsert_count(chunk, now=now)
                continue
            old = {(row.keyword_id, row.metric_id): row for row in queries.keyword_values_read(
                keyword_ids=sorted(set(chunk.keyword_ids)), metric_ids=metric_ids)}
            written = queries.keyword_values_upsert(chunk.rows(), now=now)
            moved, broken = sums_move(sums, [(old.get((row.keyword_id, row.metric_id)), row)
                                             for row in written])
            queries.metric_sums_store(moved)
            # A value no exact sum holds (inf): the refresh reads every value instead.
            queries.metric_sums_forget(metric_ids=sorted(broken))
            segments.segment_sums_move(
                metric_ids=sorted(moved),
                changes=[(old.get((row.keyword_id, row.metric_id)), row) for row in written])


def sums_move(sums: dict[int, queries.Sums],
              changes: list[tuple[queries.KeywordValueRow | None, queries.KeywordValueRow]]
              ) -> tuple[dict[int, queries.Sums], set[int]]:
    """The sums after each (old row or None, new row) change of their configs' values;
    and the configs a non-finite value left without a sum."""
    totals = {pk: list(row) for pk, row in sums.items()}
    broken: set[int] = set()
    for old, new in changes:
        current = totals.get(new.metric_id)
        if current is None:
            continue  # not known: the refresh rebuilds it
        try:
            for row, sign in ((old, -1), (new, 1)):
                if row is None:
                    continue
                for index, item in ((0, row.value), (2, row.lower), (4, row.upper)):
                    if item is not None:
                        current[index] += sign * exact_units(item)
                        current[index + 1] += sign
                if not row.bounds_exact:
                    current[6] += sign
        except (OverflowError, ValueError):
            broken.add(new.metric_id)
    return ({pk: queries.Sums(*row) for pk, row in totals.items() if pk not in broken},
            broken)


def _sums_from_values(config: queries.ConfigValues) -> queries.Sums:
    return queries.Sums(exact_total(config.present), len(config.present),
                        exact_total(config.lowers), len(config.lowers),
                        exact_total(config.uppers), len(config.uppers),
                        config.inexact_count)


def evaluation_means_refresh(*, evaluation_id: int, force_history: bool = False,
                             rebuild: bool = False) -> float | None:
    """Means over non-null keywords, keyword counts, a throttled history point and
    progress; returns the progress stored (None when the evaluation is gone), which the
    run hands to the lifecycle's finish rule once its marks are cleared.

    The means are each metric's exact running sum over its count: bit for bit the float
    core.mean_over_keywords gives over the stored values (fsum / count), the rule a
    from-scratch recompute follows. A metric without sums (new, its keywords deleted, or
    `rebuild`, which recompute_metrics asks for) has them rebuilt here from every stored
    value, under the lock its writers take.
    """
    now = timezone.now()
    with transaction.atomic():
        # Serialise refreshes and value writes of one evaluation: each reads after the
        # previous wrote, so the last refresh sees every value committed before it.
        if not queries.evaluation_lock(evaluation_id=evaluation_id):
            return None
        configs = queries.metric_config_means(evaluation_id=evaluation_id)
        sums = {config.pk: config.sums for config in configs
                if config.sums is not None and not rebuild}
        missing = [config.pk for config in configs if config.pk not in sums]
        if missing:
            sums.update(_sums_rebuild(evaluation_id, missing))
        # After the plain sums: segment sums are known only beside them.
        unknown = [config.pk for config in configs if rebuild or not config.segments_known]
        if unknown:
            segments.segment_sums_rebuild(metric_ids=unknown)
        rows = [(config.pk, config.mean, config.keyword_count,
                 mean_from_total(sums[config.pk].value_total, sums[config.pk].value_count),
                 sums[config.pk].value_count) for config in configs]
        means = [(pk, mean, count) for pk, _, _, mean, count in rows]
        if means:
            # Written even when equal: updated_at marks the grade state (metrics.reports.agreement).
            # Bounds of a mean: the means of the keywords' lower and upper bounds.
            queries.metric_means_store([
                queries.StoredMean(
                    pk, mean, count,
                    mean_from_total(sums[pk].lower_total, sums[pk].lower_count),
                    mean_from_total(sums[pk].upper_total, sums[pk].upper_count),
                    sums[pk].inexact_count == 0)
                for pk, mean, count in means
            ], now=now)
        changed = any((value, keyword_count) != (mean, count)
                      for _, value, keyword_count, mean, count in rows)
        if means and (changed or force_history):
            # An unchanged mean leaves the history alone: its latest point shows it.
            _history_append(means, now=now, force=force_history)
        # The recompute keeps the grade patterns' counts (aggregates): read there, not by
        # counting every slot.
        slot_counts = aggregates.evaluation_slot_counts(evaluation_id=evaluation_id)
        progress = queries.evaluation_progress_store(evaluation_id=evaluation_id,
                                                     slot_counts=slot_counts)
    return progress


def _sums_rebuild(evaluation_id: int, metric_ids: list[int]) -> dict[int, queries.Sums]:
    """The configs' sums from every stored value, stored for the next refreshes."""
    rebuilt = {}
    for config in queries.metric_config_values(evaluation_id=evaluation_id,
                                               metric_ids=metric_ids):
        rebuilt[config.pk] = _sums_from_values(config)
    queries.metric_sums_store(rebuilt)
    return rebuilt


def evaluation_sums_forget(*, evaluation_id: int) -> None:
    """Its keyword values are about to be deleted other than by a write (keywords deleted):
    drop the evaluation's running sums and dashboard counts, under its lock, so the next
    refresh and recompute rebuild them from what remains (metrics.receivers)."""
    if queries.evaluation_lock(evaluation_id=evaluation_id):
        queries.metric_sums_forget(evaluation_id=evaluation_id)
        aggregates.dashboard_aggregates_forget(evaluation_id=evaluation_id)


def _history_append(means: list[tuple[int, float | None, int]], *, now, force: bool) -> None:
    interval = timedelta(seconds=settings.METRIC_HISTORY_INTERVAL_SECONDS)
    followed: set[int] = set()
    if interval and not force:
        # Within one burst each metric's latest point follows the mean instead of adding
        # rows; a metric with no point in the interval gets a new one below.
        followed = queries.history_latest_points_follow(means, since=now - interval)
    MetricHistoryPoint.objects.bulk_create([
        MetricHistoryPoint(metric_id=pk, value=mean, keyword_count=count, recorded_at=now)
        for pk, mean, count in means if pk not in followed
    ])
