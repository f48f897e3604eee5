"""What a worker's recompute run costs the database, pinned (the grading loop's other half;
tests/judgments/test_grade_statements.py pins the request's)."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from metrics.models import RecomputeDue
from metrics.recompute import scheduling
from metrics.recompute.aggregates import dashboard_aggregates_rebuild
from tests.metrics.builders import build_evaluation, set_grades, slot
from tests.searchtweak.factories import UserFactory

# transaction=True: inside a test's transaction every atomic block would be a savepoint
# that a worker does not run.
pytestmark = pytest.mark.django_db(transaction=True)

# A worker's run of two dirty keywords that leaves nothing dirty, by backend: mark the run
# (one upsert, no transaction of its own); read the dirty keywords, the configuration,
# transformers and grades; write the values in a transaction of their own (BEGIN, the
# evaluation's lock, the configs' running sums: none yet, the upsert, COMMIT), then the
# decisive queue's widths from them (KeywordQueueWidth); the dashboard's counts
# (metrics.recompute.aggregates), built beforehand here as after an evaluation's first
# run, in a transaction of their own (BEGIN, the evaluation locked with whether its counts
# are built, the keywords' grade patterns and value bins in one statement, their stored
# shares, the shares upserted, the counts moved, COMMIT: 7); the means refresh's
# transaction (BEGIN, lock, each config's mean and running sums in one read; none yet, so
# its values in one read and the sums stored; the segment sums, none known either, rebuilt:
# the rows cleared, the values read with their keywords' weights and tags, stored (3);
# store the means, follow or add history
# points, the counts' grade patterns read and the progress stored from them (no count over
# every slot), COMMIT); the compare-and-set of the versions; the release (a look for dirty
# keywords, the mark lifted, a last look). Before this was pinned the run had grown to 21
# on PostgreSQL: the upsert in BEGIN/COMMIT, the values in a statement of their own.
WORKER_RUN = {"postgresql": 36, "sqlite": 37}
# The next run, once the sums exist: the write reads the old values and stores the moved
# sums (two more), and reads the segment sums and the keywords' weights and tags and
# stores the moved segment sums (three more); the refresh neither reads values nor stores
# sums, plain or per segment (five fewer); its grade fills the last empty slot, so the
# counts' 100 % is confirmed by one probe of the slots (one more) and the finish rule
# asked (its auto_finish is off: one read).
WORKER_RUN_AGAIN = {"postgresql": 37, "sqlite": 37}


def test_a_worker_run_costs_its_pinned_statements():
    graders = [UserFactory(username=f"g{i}") for i in range(2)]
    evaluation = build_evaluation(
        keywords={"a": ["d1", "d2"], "b": ["d3", "d4"]},
        metrics=[("precision", 2, {}), ("ndcg", 2, {}), ("err", 2, {})])
    # A run answers for the evaluation, so these grades queue none (it would run eagerly).
    RecomputeDue.objects.create(evaluation=evaluation,
                                due_at=timezone.now() + timedelta(hours=1))
    set_grades(graders, [(slot(evaluation, "a", 1), 3), (slot(evaluation, "a", 2), 1),
                         (slot(evaluation, "b", 1), 0)])
    dashboard_aggregates_rebuild(evaluation_id=evaluation.pk)
    first = slot(evaluation, "a", 1).keyword_id
    sent = []
    with CaptureQueriesContext(connection) as captured:
        outcome = scheduling.keyword_recompute_scheduled(
            keyword_id=first, evaluation_id=evaluation.pk, deferred=False, eager=False,
            send=lambda *run: sent.append(run))
    statements = [query["sql"] for query in captured.captured_queries]
    assert outcome == "ok" and sent == []
    assert list(RecomputeDue.objects.values_list("evaluation_id", "due_at")) == [
        (evaluation.pk, None)]
    assert len(statements) == WORKER_RUN[connection.vendor], "\n".join(statements)
    # Three transactions, the values' write, the dashboard counts' and the means refresh:
    # the run mark's upsert is a statement alone.
    assert sum(sql.split()[0] == "BEGIN" for sql in statements) == 3
    RecomputeDue.objects.filter(evaluation=evaluation).update(
        due_at=timezone.now() + timedelta(hours=1))
    set_grades(graders, [(slot(evaluation, "b", 2), 2)])
    with CaptureQueriesContext(connection) as captured:
        outcome = scheduling.keyword_recompute_scheduled(
            keyword_id=first, evaluation_id=evaluation.pk, deferred=False, eager=False,
            send=lambda *run: sent.append(run))
    statements = [query["sql"] for query in captured.captured_queries]
    assert outcome == "ok"
    assert len(statements) == WORKER_RUN_AGAIN[connection.vendor], "\n".join(statements)
