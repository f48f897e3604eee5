"""What the recompute keeps incrementally, step by step through a grading session: grades,
regrades, ungrades, a complete evaluation regraded, a fetch and keyword deletions, each
through the service that makes it in the app. After every step the stored progress is
bit for bit the share counting the slots gives, the dashboard's grade patterns are the
GROUP BY over the slots, the running sums hold the stored values; at the end the stored
values, means, progress and counts are those `recompute_metrics` writes from scratch.
(SQLite by default; PostgreSQL with DATABASE_URL.)"""

import numpy as np
import pytest
from django.db import transaction

from evaluations.models import Evaluation, Keyword, Snapshot
from evaluations.signals import snapshots_created
from judgments.grading import slot_grade_by_lead, slot_reset
from judgments.models import FeedbackSlot
from metrics import queries
from metrics.models import DashboardCount
from metrics.recompute import aggregates
from tests.metrics.builders import set_grades
from tests.metrics.oracles import (
    assert_running_sums_equal_stored_values,
    assert_stored_values_equal_a_full_recompute,
)
from tests.metrics.test_dashboard_builders import DEFAULT_METRICS, bulk_evaluation, graders_of

pytestmark = pytest.mark.django_db


def slot_progress(evaluation_id: int) -> float:
    """Graded slots over all of them, counted (what progress means)."""
    slots = FeedbackSlot.objects.filter(evaluation_id=evaluation_id)
    total = slots.count()
    return slots.exclude(grade=None).count() * 100.0 / total if total else 0.0


def stored_progress(evaluation_id: int) -> float:
    return Evaluation.objects.with_recompute_state().values_list(
        "progress", flat=True).get(pk=evaluation_id)


def stored_patterns(evaluation_id: int) -> list[tuple]:
    return sorted((*aggregates.parse_pattern(key), count) for key, count in
                  DashboardCount.objects.filter(evaluation_id=evaluation_id,
                                                key__startswith="p:", count__gt=0)
                  .values_list("key", "count"))


def assert_kept_figures_follow_the_slots(evaluation_id: int) -> None:
    assert stored_progress(evaluation_id) == slot_progress(evaluation_id)  # ==, not approx
    assert aggregates.evaluation_slot_counts(evaluation_id=evaluation_id) is not None
    assert stored_patterns(evaluation_id) == sorted(
        queries.snapshot_grade_patterns(evaluation_id=evaluation_id))
    assert_running_sums_equal_stored_values(evaluation_id)


def slots_of(evaluation, keyword_ids, *, graded: bool) -> list[FeedbackSlot]:
    return list(FeedbackSlot.objects.filter(
        evaluation=evaluation, keyword_id__in=keyword_ids, grade__isnull=not graded)
        .order_by("keyword_id", "position", "index"))


@pytest.mark.parametrize("metrics", [DEFAULT_METRICS, []], ids=["metrics", "no-metrics"])
def test_kept_progress_counts_and_means_follow_every_step_of_grading(
        personas, metrics, django_capture_on_commit_callbacks):
    graders = graders_of(personas.team)
    lead = personas.lead
    evaluation = bulk_evaluation(team=personas.team, graders=graders, keyword_count=12,
                                 scale="graded", graded_share=0.5, metrics=metrics,
                                 status=Evaluation.Status.ACTIVE)
    keyword_ids = list(evaluation.keywords.order_by("position").values_list("pk", flat=True))
    rng = np.random.default_rng(5)
    assert_kept_figures_follow_the_slots(evaluation.pk)

    def committed(write) -> None:
        """Write as a request does; the runs its commit queues happen (eagerly)."""
        with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
            write()
        assert_kept_figures_follow_the_slots(evaluation.pk)

    def grade(slots) -> None:
        set_grades(graders, [(slot, int(rng.integers(0, 4))) for slot in slots])

    def regrade(slots) -> None:
        for slot in slots:
            slot_grade_by_lead(lead=lead, slot_id=slot.pk, grade=(slot.grade + 1) % 4)

    def ungrade(slots) -> None:
        for slot in slots:
            slot_reset(slot_id=slot.pk)

    # New grades, a grader's grades corrected by the lead, grades taken back.
    committed(lambda: grade(slots_of(evaluation, keyword_ids[:4], graded=False)[:9]))
    committed(lambda: regrade(slots_of(evaluation, keyword_ids[2:6], graded=True)[:7]))
    committed(lambda: ungrade(slots_of(evaluation, keyword_ids[4:8], graded=True)[:5]))
    # Every slot graded: the probe confirms the counts' 100 %; corrections keep it there.
    committed(lambda: grade(slots_of(evaluation, keyword_ids, graded=False)))
    assert stored_progress(evaluation.pk) == 100.0
    committed(lambda: regrade(slots_of(evaluation, keyword_ids[6:9], graded=True)[:4]))
    assert stored_progress(evaluation.pk) == 100.0
    committed(lambda: ungrade(slots_of(evaluation, keyword_ids[9:], graded=True)[:1]))
    assert stored_progress(evaluation.pk) < 100.0

    # A fetch stores a keyword's results: the slots the fetch opens reach the counts.
    def fetch() -> None:
        keyword = Keyword.objects.create(
            evaluation=evaluation, position=13, text="late", normalized_text="late",
            fetch_status=Keyword.FetchStatus.FETCHED)
        snapshots = Snapshot.objects.bulk_create(
            Snapshot(keyword=keyword, position=p, doc_id=f"late-{p}", name=f"late {p}")
            for p in range(1, 4))
        snapshots_created.send(sender=Evaluation, evaluation=evaluation,
                               snapshots_by_keyword={keyword: snapshots})

    committed(fetch)
    assert FeedbackSlot.objects.filter(evaluation=evaluation, keyword__text="late").count() == 9
    # Keywords deleted, graded ones among them: the task the deletion queues rebuilds
    # what they were part of.
    committed(lambda: Keyword.objects.filter(pk__in=keyword_ids[:3]).delete())
    committed(lambda: grade(slots_of(evaluation, keyword_ids[3:], graded=False)[:6]))
    committed(lambda: ungrade(slots_of(evaluation, keyword_ids[5:7], graded=True)[:3]))

    progress, patterns = stored_progress(evaluation.pk), stored_patterns(evaluation.pk)
    assert_stored_values_equal_a_full_recompute(evaluation.pk)
    assert (stored_progress(evaluation.pk), stored_patterns(evaluation.pk)) == (
        progress, patterns)
