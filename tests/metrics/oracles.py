"""The recompute pipeline's oracle: stored values equal what `recompute_metrics` writes."""

import io

from django.core.management import call_command

from evaluations.models import EvaluationMetric
from metrics.models import (
    DashboardCount,
    EvaluationRecomputeState,
    KeywordMetricValue,
    KeywordQueueWidth,
    MetricSums,
)
from metrics_engine.exact_sum import exact_total, total_decode


def stored_values(evaluation_id: int) -> tuple[dict, dict]:
    """({(keyword id, metric id): value}, {metric id: (mean, keyword count)})."""
    values = {(keyword, metric): value for keyword, metric, value in
              KeywordMetricValue.objects.filter(keyword__evaluation_id=evaluation_id)
              .values_list("keyword_id", "metric_id", "value")}
    means = {pk: (value, count) for pk, value, count in
             EvaluationMetric.objects.filter(evaluation_id=evaluation_id).with_stored_mean()
             .values_list("pk", "value", "keyword_count")}
    return values, means


def stored_mean_bounds(evaluation_id: int) -> dict:
    """{metric id: (mean's lower, upper, bounds_exact)}."""
    return {pk: (lower, upper, exact) for pk, lower, upper, exact in
            EvaluationMetric.objects.filter(evaluation_id=evaluation_id)
            .values_list("pk", "stored_mean__lower", "stored_mean__upper",
                         "stored_mean__bounds_exact")}


def exact_sums_of_stored_values(metric_id: int) -> tuple[int, int, int, int, int, int, int]:
    """What a metric's MetricSums must hold: the exact sums and counts of its stored
    values, lower and upper bounds, and how many keywords' bounds are not exact."""
    rows = list(KeywordMetricValue.objects.filter(metric_id=metric_id)
                .values_list("value", "lower", "upper", "bounds_exact"))
    columns = [[row[column] for row in rows if row[column] is not None] for column in range(3)]
    return (exact_total(columns[0]), len(columns[0]), exact_total(columns[1]),
            len(columns[1]), exact_total(columns[2]), len(columns[2]),
            sum(1 for row in rows if not row[3]))


def assert_running_sums_equal_stored_values(evaluation_id: int) -> None:
    """Every running sum the evaluation's metrics have equals the exact sum of what is
    stored (a metric may have none: the next refresh rebuilds it)."""
    for sums in MetricSums.objects.filter(metric__evaluation_id=evaluation_id):
        held = (total_decode(sums.value_total), sums.value_count,
                total_decode(sums.lower_total), sums.lower_count,
                total_decode(sums.upper_total), sums.upper_count, sums.inexact_count)
        assert held == exact_sums_of_stored_values(sums.metric_id), (
            f"metric {sums.metric_id}'s running sums (left) differ from its stored values'")
    assert_segment_sums_equal_stored_values(evaluation_id)


def assert_segment_sums_equal_stored_values(evaluation_id: int) -> None:
    """Every known segment sum (plain and weighted, per tag) equals the one built from the
    stored values and the keywords' weights and tags; known only while the plain sums are."""
    from metrics.selectors import segment_totals_from_values, segment_totals_read

    metric_ids = list(EvaluationMetric.objects.filter(evaluation_id=evaluation_id)
                      .values_list("pk", flat=True))
    held = segment_totals_read(metric_ids=metric_ids)
    with_plain_sums = set(MetricSums.objects.filter(metric_id__in=metric_ids)
                          .values_list("metric_id", flat=True))
    assert set(held) <= with_plain_sums, "segment sums known without the plain sums"
    expected = segment_totals_from_values(metric_ids=list(held))
    for metric_id, by_segment in held.items():
        # A segment with nothing counted may or may not have a row: both read as empty.
        assert _counted(by_segment) == _counted(expected[metric_id]), (
            f"metric {metric_id}'s segment sums (left) differ from its stored values'")


def assert_stored_values_equal_a_full_recompute(evaluation_id: int) -> None:
    assert_running_sums_equal_stored_values(evaluation_id)
    values, means = stored_values(evaluation_id)
    bounds = stored_mean_bounds(evaluation_id)
    widths = stored_widths(evaluation_id)
    progress, counts = stored_progress(evaluation_id), stored_counts(evaluation_id)
    call_command("recompute_metrics", "--evaluation", str(evaluation_id), "--quiet",
                 stdout=io.StringIO())
    expected_values, expected_means = stored_values(evaluation_id)
    # A keyword nobody graded may have no stored row yet: that is its null value.
    differing = {key: (values.get(key), expected_values.get(key))
                 for key in values.keys() | expected_values.keys()
                 if values.get(key) != expected_values.get(key)}
    assert differing == {}, "stored (left) and recomputed (right) keyword values differ"
    # Bit for bit: both paths take the mean in one canonical way (math.fsum / count).
    assert means == expected_means, "stored (left) and recomputed (right) means differ"
    assert bounds == stored_mean_bounds(evaluation_id), (
        "stored (left) and recomputed (right) bounds of the means differ")
    assert_running_sums_equal_stored_values(evaluation_id)
    # The decisive queue's widths follow the values (a keyword not recomputed yet has none).
    expected_widths = stored_widths(evaluation_id)
    assert widths == {pk: expected_widths.get(pk) for pk in widths}, (
        "stored (left) and recomputed (right) queue widths differ")
    # The progress and the dashboard's counts the runs kept, where they kept them.
    if progress is not None:
        assert progress == stored_progress(evaluation_id), (
            "stored (left) and recomputed (right) progress differ")
    if counts is not None:
        assert counts == stored_counts(evaluation_id), (
            "stored (left) and recomputed (right) dashboard counts differ")


def stored_widths(evaluation_id: int) -> dict[int, float]:
    """{keyword id: KeywordQueueWidth.width}."""
    return dict(KeywordQueueWidth.objects.filter(evaluation_id=evaluation_id)
                .values_list("keyword_id", "width"))


def _counted(by_segment: dict) -> dict:
    return {key: totals for key, totals in by_segment.items() if not totals.empty}


def stored_progress(evaluation_id: int) -> float | None:
    """The progress a refresh stored (None: none yet)."""
    return EvaluationRecomputeState.objects.filter(evaluation_id=evaluation_id).values_list(
        "progress", flat=True).first()


def stored_counts(evaluation_id: int) -> dict[str, int] | None:
    """The dashboard's non-zero counts once built (a count that fell to 0 stays as a row
    a rebuild does not write), or None; of the bins, those of the metrics configured now
    (a removed metric's wait for the recompute its removal queues, and nothing reads them)."""
    configured = {f"b:{pk}:" for pk in EvaluationMetric.objects.filter(
        evaluation_id=evaluation_id).values_list("pk", flat=True)}
    rows = dict(DashboardCount.objects.filter(evaluation_id=evaluation_id)
                .values_list("key", "count"))
    return {key: n for key, n in rows.items()
            if n and (not key.startswith("b:") or key[:key.rindex(":") + 1] in configured)
            } if rows else None
