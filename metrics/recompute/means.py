"""After each run: an evaluation's means, keyword counts, history and progress, and its
automatic finish at 100 %."""

from collections import defaultdict
from datetime import timedelta

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from evaluations.models import Evaluation, EvaluationMetric
from judgments.models import FeedbackSlot
from metrics import core
from metrics.models import KeywordMetricValue, MetricHistoryPoint


def evaluation_means_refresh(*, evaluation_id: int, force_history: bool = False) -> None:
    """Means over non-null keywords, keyword counts, a throttled history point, progress,
    and the automatic finish at 100 %.

    It follows every recompute run, so each step is one SQL statement written out (see
    metrics.selectors on the recompute's reads).
    """
    evaluations = connection.ops.quote_name(Evaluation._meta.db_table)
    configs = connection.ops.quote_name(EvaluationMetric._meta.db_table)
    values = connection.ops.quote_name(KeywordMetricValue._meta.db_table)
    lock = " FOR UPDATE" if connection.features.has_select_for_update else ""
    now = timezone.now()
    with transaction.atomic(), connection.cursor() as cursor:
        # Serialise refreshes of one evaluation: each reads after the previous wrote, so
        # the last refresh sees every value committed before it.
        cursor.execute(f"SELECT status, auto_finish FROM {evaluations} WHERE id = %s{lock}",
                       [evaluation_id])
        row = cursor.fetchone()
        if row is None:
            return
        status, auto_finish = row
        # Each config's stored mean and count, and those of its stored keyword values.
        # The values come to Python because SQL's AVG sums in whatever order it reads
        # the rows: core.mean_over_keywords is the one exact rule.
        cursor.execute(f"SELECT id, value, keyword_count FROM {configs} WHERE evaluation_id = %s",
                       [evaluation_id])
        stored = cursor.fetchall()
        cursor.execute(
            f"SELECT v.metric_id, v.value FROM {values} v JOIN {configs} m ON m.id = v.metric_id"
            " WHERE m.evaluation_id = %s AND v.value IS NOT NULL",
            [evaluation_id],
        )
        values_by_metric: dict[int, list[float]] = defaultdict(list)
        for metric_id, value in cursor.fetchall():
            values_by_metric[metric_id].append(value)
        rows = [(pk, value, keyword_count, *core.mean_over_keywords(values_by_metric[pk]))
                for pk, value, keyword_count in stored]
        means = [(pk, mean, count) for pk, _, _, mean, count in rows]
        if means:
            # Written even when equal: updated_at marks the grade state (metrics.dashboards).
            _means_store(cursor, means, now=now)
        changed = any((value, keyword_count) != (mean, count)
                      for _, value, keyword_count, mean, count in rows)
        if means and (changed or force_history):
            # An unchanged mean leaves the history alone: its latest point shows it.
            _history_append(cursor, means, now=now, force=force_history)
        progress = _progress_store(cursor, evaluation_id)
    if progress >= 100.0 and auto_finish and status == Evaluation.Status.ACTIVE:
        from evaluations.services import evaluation_finish

        evaluation_finish(evaluation=Evaluation.objects.get(pk=evaluation_id))


def _cases(column: str, pairs: list[tuple[int, object]], cast: str) -> tuple[str, list]:
    """`CASE column WHEN key THEN CAST(value AS cast) ... END` and its parameters."""
    whens = " ".join([f"WHEN %s THEN CAST(%s AS {cast})"] * len(pairs))
    return f"CASE {column} {whens} END", [item for pair in pairs for item in pair]


def _means_store(cursor, means: list[tuple[int, float | None, int]], *, now) -> None:
    table = connection.ops.quote_name(EvaluationMetric._meta.db_table)
    value_case, value_params = _cases("id", [(pk, mean) for pk, mean, _ in means],
                                      "DOUBLE PRECISION")
    count_case, count_params = _cases("id", [(pk, count) for pk, _, count in means], "INTEGER")
    ids = [pk for pk, _, _ in means]
    cursor.execute(
        f"UPDATE {table} SET value = {value_case}, keyword_count = {count_case},"
        f" updated_at = %s WHERE id IN ({', '.join(['%s'] * len(ids))})",
        [*value_params, *count_params, connection.ops.adapt_datetimefield_value(now), *ids],
    )


def _history_append(cursor, means: list[tuple[int, float | None, int]], *, now,
                    force: bool) -> None:
    interval = timedelta(seconds=settings.METRIC_HISTORY_INTERVAL_SECONDS)
    followed: set[int] = set()
    if interval and not force:
        # Within one burst each metric's latest point follows the mean instead of adding
        # rows; a metric with no point in the interval gets a new one below.
        table = connection.ops.quote_name(MetricHistoryPoint._meta.db_table)
        value_case, value_params = _cases(
            "metric_id", [(pk, mean) for pk, mean, _ in means], "DOUBLE PRECISION")
        count_case, count_params = _cases(
            "metric_id", [(pk, count) for pk, _, count in means], "INTEGER")
        ids = [pk for pk, _, _ in means]
        cursor.execute(
            f"UPDATE {table} SET value = {value_case}, keyword_count = {count_case}"
            f" WHERE metric_id IN ({', '.join(['%s'] * len(ids))}) AND recorded_at >= %s"
            f" AND recorded_at = (SELECT MAX(latest.recorded_at) FROM {table} latest"
            f" WHERE latest.metric_id = {table}.metric_id) RETURNING metric_id",
            [*value_params, *count_params, *ids,
             connection.ops.adapt_datetimefield_value(now - interval)],
        )
        followed = {metric_id for (metric_id,) in cursor.fetchall()}
    MetricHistoryPoint.objects.bulk_create([
        MetricHistoryPoint(metric_id=pk, value=mean, keyword_count=count, recorded_at=now)
        for pk, mean, count in means if pk not in followed
    ])


def _progress_store(cursor, evaluation_id: int) -> float:
    """Store the share of the evaluation's slots that hold a grade (and clear any recompute
    error) in one statement; returns it."""
    evaluations = connection.ops.quote_name(Evaluation._meta.db_table)
    slots = connection.ops.quote_name(FeedbackSlot._meta.db_table)
    cursor.execute(
        f"UPDATE {evaluations} SET recompute_error = '', progress = COALESCE(("
        "SELECT CAST(COUNT(grade) AS DOUBLE PRECISION) * 100.0 / NULLIF(COUNT(*), 0)"
        f" FROM {slots} WHERE evaluation_id = %s), 0) WHERE id = %s RETURNING progress",
        [evaluation_id, evaluation_id],
    )
    return cursor.fetchone()[0]


