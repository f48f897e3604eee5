"""Lifecycle events: one `evaluation_transitioned` signal per change of an evaluation's
status or archive flag, sent after the transaction that made the change commits.

The services that make the transitions (evaluations.services.lifecycle, and the end of a
fetch in evaluations.fetching.services) call `transition_announce` right after their write;
nothing else sends this signal. Listeners receive `event=EvaluationTransitioned`.

Delivery: in-process, after commit, at most once per transition. A rolled-back transition
sends nothing; a no-op (finishing a finished evaluation, a conditional UPDATE another
process won) sends nothing; a process that dies between the commit and the send loses the
event. A listener that must not miss one reads the evaluation's state instead of counting
events. docs/ARCHITECTURE.md lists the events, who sends them and who listens.
"""

import logging
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from django.db import transaction
from django.dispatch import Signal
from django.utils import timezone

from audit.models import Action
from audit.services import audit_record
from evaluations.models import Evaluation

logger = logging.getLogger(__name__)


class Transition(StrEnum):
    STARTED = "started"  # pending → fetching, or → active when nothing is left to fetch
    RETRIED = "retried"  # active → fetching: failed keywords fetched again
    FETCHED = "fetched"  # fetching → active, at least one keyword fetched
    FAILED = "failed"  # fetching → active with no keyword fetched: nothing to grade
    PAUSED = "paused"  # fetching or active → pending
    FINISHED = "finished"  # → finished, by hand or automatically once every slot is graded
    ARCHIVED = "archived"  # archived_at set; the status stays
    RESTORED = "restored"  # archived_at cleared; the status stays


class By(StrEnum):
    """How a transition happened."""

    USER = "user"  # a person, on a page
    API = "api"  # a person or a script, through the REST API
    AUTO = "auto"  # a rule: the last slot graded finishes the evaluation
    SYSTEM = "system"  # a worker or a command: a fetch ending, seed_demo, `evaluate`


@dataclass(frozen=True)
class EvaluationTransitioned:
    evaluation_id: int
    team_id: int
    transition: Transition
    previous_status: str
    status: str
    by: By
    user_id: int | None
    at: datetime


evaluation_transitioned = Signal()


def transition_announce(
    *, evaluation_id: int, team_id: int, transition: Transition, previous_status: str,
    status: str, by: By, user_id: int | None = None, at: datetime | None = None,
) -> EvaluationTransitioned:
    """Send `evaluation_transitioned` once the current transaction commits (at once outside
    one). Call it only after a write that changed the row; the event it will send."""
    event = EvaluationTransitioned(
        evaluation_id=evaluation_id, team_id=team_id, transition=Transition(transition),
        previous_status=str(previous_status), status=str(status), by=By(by), user_id=user_id,
        at=at or timezone.now())
    if event.transition in _AUDITED:
        audit_record(action=_AUDITED[event.transition], actor_id=user_id, team_id=team_id,
                     object_type="evaluation", object_id=evaluation_id,
                     before={"status": event.previous_status},
                     after={"status": event.status, "by": str(event.by)})
    transaction.on_commit(lambda: _send(event))
    return event


# The transitions a team's owner may have to account for, in the audit trail (in the
# transition's transaction: every path that starts or finishes an evaluation comes here).
_AUDITED = {Transition.STARTED: Action.EVALUATION_STARTED,
            Transition.RETRIED: Action.EVALUATION_STARTED,
            Transition.PAUSED: Action.EVALUATION_PAUSED,
            Transition.FINISHED: Action.EVALUATION_FINISHED,
            Transition.ARCHIVED: Action.EVALUATION_ARCHIVED,
            Transition.RESTORED: Action.EVALUATION_RESTORED}


def _send(event: EvaluationTransitioned) -> None:
    # The transition has committed: a listener's error must neither undo it nor keep the
    # other listeners from hearing of it, so it is logged, not raised.
    for receiver, result in evaluation_transitioned.send_robust(sender=Evaluation, event=event):
        if isinstance(result, Exception):
            logger.error("listener %r failed on %s", receiver, event, exc_info=result)
