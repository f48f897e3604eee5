"""The lifecycle's automatic finish: the one rule that says an evaluation is complete, and
the one write that finishes it by itself (evaluation_finish_if_complete).

Every path by which the last slot can come to hold a grade asks it directly: the
recompute after each run (metrics.recompute.run: grades from the pages, the API, judges,
imports and the pool all reach the values through it), the end of a fetch whose new slots
were filled from earlier grades or the pool (fetching.services.evaluation_fetch_complete),
a start with nothing left to fetch and auto finish turned on (services.lifecycle). Apart
from lifecycle so that the fetch, which lifecycle's modules import, can call it too.

Both finishes, this one and lifecycle's by hand, tell the notification service with
evaluation_finished_notify.
"""

from datetime import datetime

from django.db.models import Exists, OuterRef
from django.urls import reverse
from django.utils import timezone

from evaluations.events import By, Transition, transition_announce
from evaluations.models import Evaluation, Keyword, Snapshot
from notifications.models import Event
from notifications.services import notify

# Stored progress at which every slot holds a grade (metrics.queries.evaluation_progress_store
# divides graded slots by all of them, so equal counts give exactly 100.0).
COMPLETE_PROGRESS = 100.0


def evaluation_complete(*, evaluation_id: int) -> bool:
    """Every slot of the evaluation holds a grade and its metric values show them: it has
    slots and none is empty; no keyword waits for a recompute (dirty), and, with metrics
    configured, every keyword with results has values stored. Read fresh, never from the
    stored progress, which lags a fetch: the last group's new slots are not in it yet.

    The values matter because the listeners of `finished` read them (the verdict): a
    keyword fetched but not yet marked has none, a dirty one has old ones; the recompute
    that follows asks again once it has written them (and cleared the marks)."""
    evaluation = Evaluation(pk=evaluation_id)
    if not evaluation.slots.exists() or evaluation.slots.filter(grade__isnull=True).exists():
        return False
    keywords = Keyword.objects.filter(evaluation_id=evaluation_id)
    if keywords.filter(recompute_mark__dirty_since__isnull=False).exists():
        return False
    # Results as EXISTS, not a join: a keyword's ten or a hundred snapshots are one row.
    with_results = Exists(Snapshot.objects.filter(keyword_id=OuterRef("pk")))
    return not (evaluation.metric_configs.exists() and keywords.filter(
        with_results, metric_values__isnull=True).exists())


def evaluation_finish_if_complete(*, evaluation_id: int, progress: float | None = None) -> bool:
    """Finish an active evaluation whose auto_finish is on once it is complete
    (evaluation_complete); whether it did.

    One conditional UPDATE: of two callers racing (two recomputes, a fetch's end and a
    recompute, or a lead's finish), one changes the row and announces `finished` by="auto";
    the others match no row and announce nothing. Each caller asks after its own writes
    committed, so of a fetch's end and the recompute of its last keywords, whichever asks
    second sees both. `progress` is the share the caller has just stored, if it knows it:
    below 100 % nothing is read (the recompute asks after every run).
    """
    if progress is not None and progress < COMPLETE_PROGRESS:
        return False
    waiting = Evaluation.objects.filter(pk=evaluation_id, status=Evaluation.Status.ACTIVE,
                                        auto_finish=True).exists()
    if not waiting or not evaluation_complete(evaluation_id=evaluation_id):
        return False
    now = timezone.now()
    # The conditions on the row's own columns only: PostgreSQL rechecks them on the row a
    # racing finish just wrote (a join to the slots, a subquery, would not be).
    finished = Evaluation.objects.filter(
        pk=evaluation_id, status=Evaluation.Status.ACTIVE, auto_finish=True,
    ).update(status=Evaluation.Status.FINISHED, finished_at=now) == 1
    if finished:
        team_id, name = Evaluation.objects.values_list("team_id", "name").get(pk=evaluation_id)
        evaluation_finished_notify(evaluation_id=evaluation_id, team_id=team_id, name=name,
                                   by=By.AUTO, at=now)
        transition_announce(
            evaluation_id=evaluation_id, team_id=team_id, transition=Transition.FINISHED,
            previous_status=Evaluation.Status.ACTIVE, status=Evaluation.Status.FINISHED,
            by=By.AUTO, at=now)
    return finished


def evaluation_finished_notify(*, evaluation_id: int, team_id: int, name: str, by: By,
                               at: datetime) -> None:
    """Announce "evaluation finished" to the team (notifications.services.notify: after
    the current transaction commits). Called by each finish right before it announces the
    `finished` transition, so this notification goes out ahead of those its listeners
    send (the verdict's)."""
    how = "automatically, every result graded" if by == "auto" else "by hand"
    notify(team_id=team_id, event=Event.EVALUATION_FINISHED,
           text=f"Evaluation “{name}” finished ({how}).",
           url=reverse("evaluations:evaluation_detail", args=[evaluation_id]),
           payload={"evaluation": evaluation_id, "by": str(by),
                    "finished_at": at.isoformat()})
