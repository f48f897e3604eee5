"""An evaluation graded independently by three, for the "who sees whose grades" tests.

"noise cancelling headphones", graded scale, three slots per result (every person's grade
is marked unsure, so that its note is kept):

    result 1: slot 0 the second grader 3 (note SECOND_NOTE) | slot 1 held, open, by the
              viewer (a result they may still be asked to grade) | slot 2 the judge 1
              (reason JUDGE_REASON)
    result 2: slot 0 the viewer 2 (note VIEWER_NOTE) | slot 1 the second grader 0 (note
              SECOND_NOTE) | slot 2 free

The second grader's username, their note and the judge's reason are markers: none of
them may reach the viewer, a grader, on any page or answer.
"""

from dataclasses import dataclass
from datetime import timedelta

from django.utils import timezone

from evaluations.models import Evaluation
from judgments import grading
from judgments.models import FeedbackSlot
from searchtweak.models import Role, Team, User
from tests.judges.calibration_data import make_judge
from tests.judgments.builders import evaluation_with_slots
from tests.searchtweak.factories import member

KEYWORD = "noise cancelling headphones"
SECOND_GRADER = "second-grader-q7z"
SECOND_NOTE = "second-grader-note-q7z"
VIEWER_NOTE = "viewer-note-q7z"
JUDGE_REASON = "judge-reason-q7z"


@dataclass(frozen=True)
class IndependentGrading:
    evaluation: Evaluation
    second: User
    open_slot: FeedbackSlot  # the viewer's, ungraded, on result 1
    own_slot: FeedbackSlot  # the viewer's grade 2 on result 2
    judge_username: str  # the judge's service account


def _hold(slot: FeedbackSlot, user: User) -> None:
    now = timezone.now()
    FeedbackSlot.objects.filter(pk=slot.pk).update(
        user=user, assigned_at=now, lease_expires_at=now + timedelta(hours=1))


def _grade(slot: FeedbackSlot, user: User, grade: int, note: str) -> None:
    _hold(slot, user)
    # A note is kept with an unsure grade only.
    grading.feedback_submit(user=user, slot_id=slot.pk, grade=grade, unsure=True, note=note)


def independent_grading(team: Team, viewer: User, *, second: User | None = None,
                        judge_name: str = "Echo") -> IndependentGrading:
    second = second or member(team, Role.GRADER, SECOND_GRADER)
    judge = make_judge(team, judge_name)
    evaluation = evaluation_with_slots(team, keywords=1, positions=2, strategy=3,
                                       texts=[KEYWORD])
    slots = {(s.snapshot.position, s.index): s for s in FeedbackSlot.objects.filter(
        evaluation=evaluation).select_related("snapshot")}
    _grade(slots[1, 0], second, 3, SECOND_NOTE)
    _hold(slots[1, 1], viewer)
    FeedbackSlot.objects.filter(pk=slots[1, 2].pk).update(
        user=judge.user, grade=1, reason=JUDGE_REASON, graded_at=timezone.now())
    _grade(slots[2, 0], viewer, 2, VIEWER_NOTE)
    _grade(slots[2, 1], second, 0, SECOND_NOTE)
    return IndependentGrading(
        evaluation=evaluation, second=second,
        open_slot=FeedbackSlot.objects.get(pk=slots[1, 1].pk),
        own_slot=FeedbackSlot.objects.get(pk=slots[2, 0].pk),
        judge_username=judge.user.username)
