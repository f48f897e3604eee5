"""Fast builders for the dashboard tests: whole evaluations with bulk_create, graded the
way the database holds grades, their stored values written by the real recompute."""

import numpy as np
from django.utils import timezone

from evaluations.models import Evaluation, EvaluationMetric, Keyword, Snapshot
from judgments.models import FeedbackSlot
from metrics.models import KeywordMetricValue
from metrics.services import evaluation_metrics_recompute
from searchtweak.models import Role
from tests.evaluations.factories import SearchModelFactory
from tests.recompute_state import state_of
from tests.searchtweak.factories import member

DEFAULT_METRICS = [("precision", 5, {}), ("ap", 5, {}), ("ndcg", 5, {})]


def graders_of(team, count: int = 3, prefix: str = "g") -> list:
    return [member(team, Role.GRADER, f"{prefix}{team.pk}-{i}") for i in range(count)]


def bulk_evaluation(
    *, team, graders, keyword_count: int, model=None, scale: str = "binary",
    strategy: int = 3, positions: int = 5, metrics=DEFAULT_METRICS,
    status: str = Evaluation.Status.FINISHED, graded_share: float = 1.0, seed: int = 1,
    text_prefix: str = "query", finished_at=None, name: str | None = None,
    recompute: bool = True,
) -> Evaluation:
    """An evaluation of `keyword_count` keywords x `positions` results x `strategy` slots,
    `graded_share` of the slots graded with seeded random grades."""
    model = model or SearchModelFactory(team=team, endpoint__team=team)
    now = timezone.now()
    evaluation = Evaluation.objects.create(
        team=team, model=model, name=name or f"Eval {text_prefix} {keyword_count}",
        scale=scale, strategy=strategy, status=status, started_at=now, auto_finish=False,
        finished_at=(finished_at or now) if status == Evaluation.Status.FINISHED else None,
    )
    EvaluationMetric.objects.bulk_create(
        EvaluationMetric(evaluation=evaluation, code=code, k=k, params=params, position=i)
        for i, (code, k, params) in enumerate(metrics)
    )
    keywords = Keyword.objects.bulk_create(
        Keyword(evaluation=evaluation, position=i + 1, text=f"{text_prefix} {i}",
                normalized_text=f"{text_prefix} {i}", fetch_status=Keyword.FetchStatus.FETCHED)
        for i in range(keyword_count)
    )
    snapshots = Snapshot.objects.bulk_create(
        (Snapshot(keyword=keyword, position=p, doc_id=f"doc-{(keyword.position * 7 + p) % 40}",
                  name=f"Document {p}")
         for keyword in keywords for p in range(1, positions + 1)), batch_size=2000,
    )
    rng = np.random.default_rng(seed)
    top = {"binary": 1, "graded": 3, "detail": 10}[scale]
    low = 1 if scale == "detail" else 0
    slots = []
    for snapshot in snapshots:
        for index in range(strategy):
            graded = rng.random() < graded_share
            slots.append(FeedbackSlot(
                snapshot=snapshot, keyword_id=snapshot.keyword_id, evaluation=evaluation,
                index=index, keyword_position=0, position=snapshot.position,
                grade=int(rng.integers(low, top + 1)) if graded else None,
                user=graders[index] if graded else None, graded_at=now if graded else None,
            ))
    FeedbackSlot.objects.bulk_create(slots, batch_size=2000)
    if recompute:
        evaluation_metrics_recompute(evaluation_id=evaluation.pk)
        evaluation.refresh_from_db()
    return evaluation


def test_bulk_evaluation_stores_a_value_per_keyword_and_metric(personas):
    graders = graders_of(personas.team)
    evaluation = bulk_evaluation(team=personas.team, graders=graders, keyword_count=4)
    assert KeywordMetricValue.objects.filter(keyword__evaluation=evaluation).count() == 12
    assert FeedbackSlot.objects.filter(evaluation=evaluation, grade__isnull=True).count() == 0
    assert state_of(evaluation).progress == 100.0
