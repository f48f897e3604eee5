"""metrics 0008 fills the queue widths of the evaluations already in decisive order from
their stored bounds, so their queues keep that order before their next recompute."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from evaluations.models import Evaluation, EvaluationMetric, Keyword
from judgments.models import FeedbackSlot
from metrics.models import KeywordMetricValue, KeywordQueueWidth
from tests.metrics.builders import build_evaluation
from tests.searchtweak.factories import UserFactory


def migrate(targets) -> None:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow_reason("migrates the database back over a data migration and forward again")
def test_it_fills_the_widths_of_decisive_evaluations_only():
    decisive = build_evaluation(keywords={"a": ["d1", "d2"], "b": ["d3"], "c": ["d4"]},
                                metrics=[("precision", 2, {}), ("ndcg", 2, {})])
    other = build_evaluation(keywords={"x": ["d9"]}, metrics=[("precision", 2, {})])
    Evaluation.objects.filter(pk=decisive.pk).update(grading_order="decisive")
    a, b, c = Keyword.objects.filter(evaluation=decisive).order_by("position")
    first = EvaluationMetric.objects.get(evaluation=decisive, code="precision")
    KeywordMetricValue.objects.update_or_create(keyword=a, metric=first,
                                                defaults={"lower": 0.25, "upper": 0.5})
    KeywordMetricValue.objects.filter(keyword__in=[b, c]).delete()
    FeedbackSlot.objects.filter(keyword=c).update(grade=1, user=UserFactory())
    KeywordQueueWidth.objects.all().delete()
    migrate([("metrics", "0007_keyword_and_mean_bounds")])
    migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
    # a: 0.5 - 0.25; b: no bounds, a slot to grade; c: none, all graded.
    assert sorted(KeywordQueueWidth.objects.values_list(
        "evaluation_id", "keyword_position", "width")) == [
        (decisive.pk, 1, 0.25), (decisive.pk, 2, 1e6), (decisive.pk, 3, 0.0)]
    assert other.pk != decisive.pk
