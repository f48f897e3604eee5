"""How well each grader and judge answers gold items: accuracy, mean
absolute error and drift, read for the grader leaderboard (metrics.reports.leaderboards), and the
lead's notice when a grader falls below the bar.

Whose answers count:
- a person's: their gold probes (judgments.gold), the only answers they give knowing
  nothing of the item (the item's own slots may be where its answer came from);
- an LLM judge's (it takes no probes, it grades through runs): its own grades on results
  showing a gold item's keyword and document on the item's scale, in another evaluation
  than the item's (the item's own slots are where a "make gold" answer came from, or were
  overwritten by an adjudication) and not overwritten by a lead.
"""

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Q
from django.urls import reverse

from judgments.models import FeedbackSlot, GoldItem, GoldProbe
from notifications.models import Event
from notifications.services import notify
from searchtweak.models import Role, User

# The team's bar: below this accuracy over at least GOLD_MIN_ANSWERS answers a lead is told.
GOLD_ACCURACY_THRESHOLD = 0.7
GOLD_MIN_ANSWERS = 10
# Drift: the accuracy of the latest answers against that of the ones before them.
DRIFT_WINDOW = 10


@dataclass(frozen=True)
class GoldAccuracy:
    answers: int
    correct: int
    mae: float | None  # mean |grade - answer|
    recent: float | None  # accuracy of the latest DRIFT_WINDOW answers (or half, if fewer)
    earlier: float | None  # accuracy of the answers before those

    @property
    def accuracy(self) -> float | None:
        return self.correct / self.answers if self.answers else None

    @property
    def drift(self) -> float | None:
        """recent - earlier: below 0, the grader got worse lately."""
        if self.recent is None or self.earlier is None:
            return None
        return self.recent - self.earlier

    @property
    def low(self) -> bool:
        """Below the team's bar on enough answers to say so."""
        return self.answers >= GOLD_MIN_ANSWERS and self.accuracy < GOLD_ACCURACY_THRESHOLD


NO_ANSWERS = GoldAccuracy(answers=0, correct=0, mae=None, recent=None, earlier=None)


def gold_accuracy_of(answers: list[tuple[int, int]]) -> GoldAccuracy:
    """(grade, answer) pairs, oldest first."""
    if not answers:
        return NO_ANSWERS
    right = [grade == answer for grade, answer in answers]
    window = min(DRIFT_WINDOW, len(answers) // 2)
    recent, earlier = (right[-window:], right[:-window]) if window else ([], [])
    return GoldAccuracy(
        answers=len(answers), correct=sum(right),
        mae=sum(abs(grade - answer) for grade, answer in answers) / len(answers),
        recent=sum(recent) / len(recent) if recent else None,
        earlier=sum(earlier) / len(earlier) if earlier else None)


def _probe_answers(*, team_id: int, user_ids: Iterable[int] | None = None
                   ) -> dict[int, list[tuple[datetime, int, int]]]:
    probes = GoldProbe.objects.filter(evaluation__team_id=team_id, grade__isnull=False)
    if user_ids is not None:
        probes = probes.filter(user_id__in=user_ids)
    by_user: dict[int, list[tuple[datetime, int, int]]] = {}
    for user_id_, graded_at, grade, expected in probes.values_list(
            "user_id", "graded_at", "grade", "expected"):
        by_user.setdefault(user_id_, []).append((graded_at, grade, expected))
    return by_user


def _judge_answers(*, team_id: int) -> dict[int, list[tuple[datetime, int, int]]]:
    items = {(scale, text, doc_id): (grade, evaluation_id) for scale, text, doc_id, grade,
             evaluation_id in GoldItem.objects.filter(team_id=team_id).values_list(
                 "scale", "snapshot__keyword__normalized_text", "snapshot__doc_id", "grade",
                 "snapshot__keyword__evaluation_id")}
    if not items:
        return {}
    by_user: dict[int, list[tuple[datetime, int, int]]] = {}
    slots = FeedbackSlot.objects.filter(
        Q(snapshot__doc_id__in={doc for _, _, doc in items}),
        evaluation__team_id=team_id, user__is_judge=True, grade__isnull=False,
        graded_by__isnull=True, keyword__normalized_text__in={text for _, text, _ in items},
    ).values_list("user_id", "graded_at", "grade", "evaluation__scale",
                  "keyword__normalized_text", "snapshot__doc_id", "evaluation_id")
    for user_id, graded_at, grade, scale, text, doc_id, evaluation_id in slots:
        answer, item_evaluation_id = items.get((scale, text, doc_id), (None, None))
        if answer is not None and evaluation_id != item_evaluation_id:
            by_user.setdefault(user_id, []).append((graded_at, grade, answer))
    return by_user


def _accuracy(rows: list[tuple[datetime, int, int]]) -> GoldAccuracy:
    rows.sort(key=lambda row: row[0])
    return gold_accuracy_of([(grade, answer) for _, grade, answer in rows])


def team_gold_accuracy(*, team_id: int) -> dict[int, GoldAccuracy]:
    """{user id: GoldAccuracy} of every person and judge of the team with an answer."""
    answers = _probe_answers(team_id=team_id)
    for user_id, rows in _judge_answers(team_id=team_id).items():
        answers.setdefault(user_id, []).extend(rows)
    return {user_id: _accuracy(rows) for user_id, rows in answers.items()}


def graders_below_bar(*, team_id: int, user_ids: Iterable[int]) -> set[int]:
    """Those of these people whose gold probes in the team put them below the bar
    (GoldAccuracy.low): whose grades an evaluation may give a second grader
    (Evaluation.second_grader_below_gold_bar, judgments.adaptive)."""
    ids = set(user_ids)
    if not ids:
        return set()
    return {user_id for user_id, rows in _probe_answers(team_id=team_id, user_ids=ids).items()
            if _accuracy(rows).low}


def grader_accuracy_check(*, user: User, team_id: int, probe_id: int,
                          previous_grade: int | None) -> None:
    """After a probe's grade: tell the team's leads (notify, after commit) when it took the
    grader below the bar; nothing when they were below it already or stay above it."""
    rows = _probe_answers(team_id=team_id, user_ids=[user.pk]).get(user.pk, [])
    now = _accuracy(list(rows))
    if not now.low:
        return
    # The same answers with the probe as it was before this grade.
    probe = GoldProbe.objects.only("graded_at", "expected").get(pk=probe_id)
    before = [row for row in rows if row[0] != probe.graded_at]
    if previous_grade is not None:
        before.append((probe.graded_at, previous_grade, probe.expected))
    if _accuracy(before).low:
        return
    notify(team_id=team_id, event=Event.GOLD_ACCURACY_LOW, minimum_role=Role.LEAD,
           url=reverse("metrics:leaderboard"),
           text=(f"{user.username} answered {now.correct} of {now.answers} gold items right "
                 f"({now.accuracy:.0%}), below the team's {GOLD_ACCURACY_THRESHOLD:.0%}."))
