"""After each run: an evaluation's means, keyword counts, history and progress; then it asks
the evaluation's lifecycle to finish it if it is complete (the rule is the lifecycle's)."""

from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from evaluations.services import evaluation_finish_if_complete
from metrics import core, queries
from metrics.models import MetricHistoryPoint


def evaluation_means_refresh(*, evaluation_id: int, force_history: bool = False) -> None:
    """Means over non-null keywords, keyword counts, a throttled history point and
    progress; then evaluations' lifecycle finishes the evaluation if that progress makes it
    complete (evaluation_finish_if_complete decides, changes the status and announces it).

    It follows every recompute run, so each step is one SQL statement written out
    (metrics.queries). The means themselves are core.mean_over_keywords, the one rule a
    from-scratch recompute also follows: SQL's AVG sums in whatever order it reads rows.
    """
    now = timezone.now()
    with transaction.atomic():
        # Serialise refreshes of one evaluation: each reads after the previous wrote, so
        # the last refresh sees every value committed before it.
        if not queries.evaluation_lock(evaluation_id=evaluation_id):
            return
        # Each config's stored mean and count, and those of its stored keyword values.
        configs = queries.metric_config_values(evaluation_id=evaluation_id)
        rows = [(config.pk, config.mean, config.keyword_count,
                 *core.mean_over_keywords(config.present)) for config in configs]
        means = [(pk, mean, count) for pk, _, _, mean, count in rows]
        if means:
            # Written even when equal: updated_at marks the grade state (metrics.dashboards).
            # Bounds of a mean: the means of the keywords' lower and upper bounds.
            queries.metric_means_store([
                queries.StoredMean(pk, mean, count,
                                   core.mean_over_keywords(config.lowers)[0],
                                   core.mean_over_keywords(config.uppers)[0],
                                   config.bounds_exact)
                for (pk, mean, count), config in zip(means, configs, strict=True)
            ], now=now)
        changed = any((value, keyword_count) != (mean, count)
                      for _, value, keyword_count, mean, count in rows)
        if means and (changed or force_history):
            # An unchanged mean leaves the history alone: its latest point shows it.
            _history_append(means, now=now, force=force_history)
        progress = queries.evaluation_progress_store(evaluation_id=evaluation_id)
    # After the commit above: the finish reads the progress this refresh stored.
    evaluation_finish_if_complete(evaluation_id=evaluation_id, progress=progress)


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
