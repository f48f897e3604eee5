"""Grading a demo run as the demo's simulated graders would: by the demo engine's own
notion of relevance (evaluations.demo.relevance), so values are the engine's truth."""

from datetime import datetime

from evaluations import demo
from evaluations.models import DemoProduct, Evaluation
from judgments.models import FeedbackSlot
from searchtweak.models import User


def grade_ungraded_by_demo_relevance(evaluation: Evaluation, *, at: datetime,
                                     grader: str = "grader1") -> int:
    """Grade every slot of the evaluation that has no grade (reuse fills the others); how
    many. Written directly: the caller recomputes."""
    slots = list(FeedbackSlot.objects.filter(evaluation=evaluation, grade__isnull=True)
                 .values_list("pk", "keyword__text", "snapshot__doc_id"))
    products = DemoProduct.objects.in_bulk([doc for *_, doc in slots], field_name="sku")
    user = User.objects.get(username=grader)
    for pk, text, doc in slots:
        FeedbackSlot.objects.filter(pk=pk).update(
            grade=demo.relevance(text, products[doc]), user=user, graded_at=at)
    return len(slots)
