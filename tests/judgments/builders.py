"""Evaluations with keywords, snapshots and their slots, built through the real services."""

from django.utils import timezone

from evaluations.models import Evaluation
from judgments.slots import slots_create_for_snapshots
from tests.evaluations.factories import (
    EndpointFactory,
    EvaluationFactory,
    KeywordFactory,
    SearchModelFactory,
    SnapshotFactory,
)


def evaluation_with_slots(
    team,
    *,
    keywords: int = 2,
    positions: int = 3,
    strategy: int = 1,
    scale: str = "graded",
    status: str = Evaluation.Status.ACTIVE,
    tags: list[str] | None = None,
    reuse: str = Evaluation.Reuse.NONE,
    texts: list[str] | None = None,
    doc_ids: list[str] | None = None,
    **fields,
) -> Evaluation:
    """An evaluation of `team` whose keywords each returned `positions` documents.

    Documents are named "<keyword text>-d<position>" unless doc_ids gives them.
    """
    model = SearchModelFactory(endpoint=EndpointFactory(team=team), team=team)
    evaluation = EvaluationFactory(
        team=team, model=model, scale=scale, strategy=strategy, status=status,
        tags=tags or [], reuse_grades=reuse,
        started_at=timezone.now() if status != Evaluation.Status.PENDING else None, **fields,
    )
    texts = texts or [f"query {n + 1}" for n in range(keywords)]
    for kw_position, text in enumerate(texts, start=1):
        keyword = KeywordFactory(evaluation=evaluation, position=kw_position, text=text)
        snapshots = [
            SnapshotFactory(
                keyword=keyword, position=position,
                doc_id=(doc_ids[position - 1] if doc_ids else f"{text}-d{position}"),
                name=f"Result {position} for {text}",
            )
            for position in range(1, positions + 1)
        ]
        slots_create_for_snapshots(evaluation=evaluation, keyword=keyword, snapshots=snapshots)
    return evaluation
