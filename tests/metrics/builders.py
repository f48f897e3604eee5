"""Build graded evaluations for the recompute tests, and grade them the way judgments does."""

from django.db import transaction
from django.utils import timezone

from evaluations.models import Evaluation, EvaluationMetric, Keyword, Snapshot
from judgments.models import FeedbackSlot
from metrics import receivers
from metrics.recompute.marks import keywords_version_bump
from tests.evaluations.factories import EvaluationFactory


def build_evaluation(
    *, team=None, scale: str = "graded", strategy: int = 1, keywords: dict[str, list[str]],
    metrics: list[tuple[str, int, dict]], status: str = Evaluation.Status.ACTIVE,
    auto_finish: bool = False,
) -> Evaluation:
    """An evaluation whose keywords (text -> doc ids in rank order) have empty slots."""
    extra = {"team": team, "model__endpoint__team": team} if team else {}
    started_at = None if status == Evaluation.Status.PENDING else timezone.now()
    evaluation = EvaluationFactory(
        scale=scale, strategy=strategy, status=status, auto_finish=auto_finish,
        started_at=started_at, **extra
    )
    for position, (code, k, params) in enumerate(metrics):
        EvaluationMetric.objects.create(
            evaluation=evaluation, code=code, k=k, params=params, position=position
        )
    for position, (text, doc_ids) in enumerate(keywords.items(), start=1):
        keyword = Keyword.objects.create(
            evaluation=evaluation, position=position, text=text,
            normalized_text=Keyword.normalize(text), fetch_status=Keyword.FetchStatus.FETCHED,
        )
        snapshots = Snapshot.objects.bulk_create(
            Snapshot(keyword=keyword, position=rank, doc_id=doc_id, name=doc_id)
            for rank, doc_id in enumerate(doc_ids, start=1)
        )
        FeedbackSlot.objects.bulk_create(
            FeedbackSlot(snapshot=snapshot, keyword=keyword, evaluation=evaluation, index=index,
                         keyword_position=keyword.position, position=snapshot.position)
            for snapshot in snapshots for index in range(strategy)
        )
    return evaluation


def slot(evaluation: Evaluation, text: str, position: int, index: int = 0) -> FeedbackSlot:
    return FeedbackSlot.objects.get(
        evaluation=evaluation, keyword__normalized_text=Keyword.normalize(text),
        snapshot__position=position, index=index,
    )


@transaction.atomic
def set_grades(graders, changes: list[tuple[FeedbackSlot, int | None]]) -> None:
    """Write grades as the judgments services do: the slot and its keyword's dirty mark in
    the same transaction, then the runs queued after commit, here for every keyword (not
    only those the grades turned dirty, as metrics.receivers.on_grades_written says), so
    that each grade's run takes place. Slot i is graded by graders[i]."""
    now = timezone.now()
    keyword_ids = set()
    for feedback_slot, grade in changes:
        FeedbackSlot.objects.filter(pk=feedback_slot.pk).update(
            grade=grade, user=graders[feedback_slot.index] if grade is not None else None,
            graded_at=now if grade is not None else None,
        )
        keyword_ids.add(feedback_slot.keyword_id)
    keywords_version_bump(keyword_ids=keyword_ids)
    transaction.on_commit(lambda: receivers.on_grades_changed(
        sender=FeedbackSlot, keyword_ids=sorted(keyword_ids)))
