"""What evaluations tell the notification service (notifications.services): an
evaluation finished. Connected in EvaluationsConfig.ready."""

from django.urls import reverse

from evaluations.events import EvaluationTransitioned, Transition
from evaluations.models import Evaluation
from notifications.models import Event
from notifications.services import notify


def on_evaluation_transitioned(sender: type, *, event: EvaluationTransitioned,
                               **kwargs: object) -> None:
    if event.transition != Transition.FINISHED:
        return
    name = Evaluation.objects.filter(pk=event.evaluation_id).values_list(
        "name", flat=True).first()
    if name is None:
        return
    how = "automatically, every result graded" if event.by == "auto" else "by hand"
    notify(team_id=event.team_id, event=Event.EVALUATION_FINISHED,
           text=f"Evaluation “{name}” finished ({how}).",
           url=reverse("evaluations:evaluation_detail", args=[event.evaluation_id]),
           payload={"evaluation": event.evaluation_id, "by": str(event.by),
                    "finished_at": event.at.isoformat()})
