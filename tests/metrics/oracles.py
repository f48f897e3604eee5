"""The recompute pipeline's oracle: stored values equal what `recompute_metrics` writes."""

import io

from django.core.management import call_command

from evaluations.models import EvaluationMetric
from metrics.models import KeywordMetricValue, KeywordQueueWidth


def stored_values(evaluation_id: int) -> tuple[dict, dict]:
    """({(keyword id, metric id): value}, {metric id: (mean, keyword count)})."""
    values = {(keyword, metric): value for keyword, metric, value in
              KeywordMetricValue.objects.filter(keyword__evaluation_id=evaluation_id)
              .values_list("keyword_id", "metric_id", "value")}
    means = {pk: (value, count) for pk, value, count in
             EvaluationMetric.objects.filter(evaluation_id=evaluation_id).with_stored_mean()
             .values_list("pk", "value", "keyword_count")}
    return values, means


def assert_stored_values_equal_a_full_recompute(evaluation_id: int) -> None:
    values, means = stored_values(evaluation_id)
    widths = stored_widths(evaluation_id)
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
    # The decisive queue's widths follow the values (a keyword not recomputed yet has none).
    expected_widths = stored_widths(evaluation_id)
    assert widths == {pk: expected_widths.get(pk) for pk in widths}, (
        "stored (left) and recomputed (right) queue widths differ")


def stored_widths(evaluation_id: int) -> dict[int, float]:
    """{keyword id: KeywordQueueWidth.width}."""
    return dict(KeywordQueueWidth.objects.filter(evaluation_id=evaluation_id)
                .values_list("keyword_id", "width"))
