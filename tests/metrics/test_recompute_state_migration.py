"""The migrations that moved the recompute state from evaluations' columns into metrics'
tables (metrics 0004, evaluations 0005) lose nothing either way, and `recompute_metrics` on
the migrated database gives the same values bit for bit."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from evaluations.models import Keyword
from metrics.models import EvaluationRecomputeState, KeywordRecomputeMark, MetricMean
from metrics.services import evaluation_metrics_recompute
from tests.metrics.builders import build_evaluation, set_grades, slot
from tests.metrics.oracles import assert_stored_values_equal_a_full_recompute, stored_values
from tests.searchtweak.factories import UserFactory

BEFORE = [("metrics", "0003_recompute_due"), ("evaluations", "0004_search_model_secret_headers")]


def recompute_state(evaluation_id: int) -> tuple:
    marks = sorted(KeywordRecomputeMark.objects.filter(evaluation_id=evaluation_id)
                   .values_list("keyword_id", "version", "computed_version", "dirty_since"))
    means = sorted(MetricMean.objects.filter(metric__evaluation_id=evaluation_id)
                   .values_list("metric_id", "value", "keyword_count", "updated_at"))
    states = list(EvaluationRecomputeState.objects.filter(evaluation_id=evaluation_id)
                  .values_list("progress", "recompute_error"))
    return marks, means, states


def migrate(targets) -> None:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow_reason("migrates the database back over two migrations and forward again")
def test_the_move_keeps_every_mark_mean_and_progress_and_recomputes_bit_for_bit():
    graders = [UserFactory()]
    evaluation = build_evaluation(
        keywords={"shoes": ["a", "b", "c"], "hats": ["d", "e"], "socks": ["f"]},
        metrics=[("ndcg", 3, {}), ("precision", 3, {}), ("ap", 3, {})])
    set_grades(graders, [(slot(evaluation, "shoes", 1), 3), (slot(evaluation, "shoes", 2), 0),
                         (slot(evaluation, "hats", 2), 2)])
    # One keyword left dirty (a grade the recompute has not read), with an error recorded.
    socks = Keyword.objects.get(evaluation=evaluation, text="socks")
    KeywordRecomputeMark.objects.create(keyword=socks, evaluation=evaluation, version=4,
                                        computed_version=2, dirty_since=timezone.now())
    EvaluationRecomputeState.objects.filter(evaluation=evaluation).update(
        recompute_error="transformers: boom")
    before = recompute_state(evaluation.pk)
    values_before = stored_values(evaluation.pk)
    assert len(before[0]) == 3 and len(before[1]) == 3 and before[2][0][0] == 50.0

    migrate(BEFORE)  # the columns are back in evaluations, filled from metrics' rows
    with connection.cursor() as cursor:
        cursor.execute("SELECT version, computed_version FROM evaluations_keyword WHERE id = %s",
                       [socks.pk])
        assert cursor.fetchone() == (4, 2)
        cursor.execute("SELECT progress, recompute_error FROM evaluations_evaluation"
                       " WHERE id = %s", [evaluation.pk])
        assert cursor.fetchone() == (50.0, "transformers: boom")
    migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())

    assert recompute_state(evaluation.pk) == before
    assert stored_values(evaluation.pk) == values_before
    # The dirty keyword is computed now; then every stored value is what a full run writes.
    evaluation_metrics_recompute(evaluation_id=evaluation.pk)
    assert_stored_values_equal_a_full_recompute(evaluation.pk)
    assert stored_values(evaluation.pk)[1] == values_before[1]
