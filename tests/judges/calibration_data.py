"""Judges, their runs and grades built straight from the models, for the calibration tests.

`graded_example` is the hand-computed case of tests/judges/test_calibration.py: read the
figures there.
"""

from dataclasses import dataclass
from datetime import timedelta

from django.utils import timezone

from evaluations.models import Evaluation, Keyword
from judges.models import Judge, JudgeRun, JudgeRunItem, JudgeTrustPolicy
from judgments.models import FeedbackSlot
from searchtweak.models import Team, User
from tests.judges.builders import judge_with_account
from tests.metrics.builders import build_evaluation


def make_judge(team: Team, name: str = "Sage") -> Judge:
    """A judge of `team` that no run of these tests calls."""
    return judge_with_account(team, name=name)


def bar(team: Team, *, min_pairs: int, min_kappa: float) -> JudgeTrustPolicy:
    """The team's bar for letting a judge's grades count."""
    policy, _ = JudgeTrustPolicy.objects.update_or_create(
        team=team, defaults={"min_pairs": min_pairs, "min_kappa": min_kappa})
    return policy


def slot_of(evaluation: Evaluation, text: str, position: int, index: int) -> FeedbackSlot:
    return FeedbackSlot.objects.select_related("snapshot").get(
        evaluation=evaluation, keyword__normalized_text=Keyword.normalize(text),
        snapshot__position=position, index=index)


def give(evaluation: Evaluation, text: str, position: int, index: int, user: User,
         grade: int, reason: str = "") -> FeedbackSlot:
    """`user` grades slot `index` of the result at `position` of keyword `text`."""
    found = slot_of(evaluation, text, position, index)
    FeedbackSlot.objects.filter(pk=found.pk).update(
        user=user, grade=grade, reason=reason, graded_at=timezone.now())
    return found


def run_with_answers(judge: Judge, evaluation: Evaluation, answers: dict[tuple[str, int], int],
                     *, mode: str = JudgeRun.Mode.SHADOW, status: str = JudgeRun.Status.DONE,
                     answered_at=None) -> JudgeRun:
    """A run of the judge whose items answered `answers` {(keyword text, position): grade}."""
    run = JudgeRun.objects.create(judge=judge, evaluation=evaluation, mode=mode, status=status,
                                  pair_count=len(answers), done_count=len(answers))
    for (text, position), grade in answers.items():
        snapshot = slot_of(evaluation, text, position, 0).snapshot
        JudgeRunItem.objects.create(
            run=run, snapshot=snapshot, keyword_id=snapshot.keyword_id,
            status=JudgeRunItem.Status.DONE, grade=grade, reason=f"grade {grade}",
            answered_at=answered_at or timezone.now())
    return run


@dataclass
class Example:
    judge: Judge
    evaluation: Evaluation
    first: User
    second: User


def graded_example(team: Team, first: User, second: User) -> Example:
    """Graded scale (0..3), three slots per result, two keywords of three results each;
    metrics CG@3 and P@3. Grades (people | judge):

        alpha 1: 3 (first), 2 (second) | 3      beta 1: 2 (first) | 2
        alpha 2: 1 (first)             | 1      beta 2: 0 (first) | 0   (+ another judge: 3)
        alpha 3: 0 (first)             | 1      beta 3: -         | 2   (its slot only)

    alpha 3: the judge's account holds slot 1 with 3, an old shadow run said 2, the newest
    run says 1: the newest answer wins. beta 3: no run answered it; the judge's slot (2)
    stands. beta 2's 3 is another judge's grade: it is nobody's human grade.
    """
    evaluation = build_evaluation(
        team=team, scale="graded", strategy=3,
        keywords={"alpha": ["a1", "a2", "a3"], "beta": ["b1", "b2", "b3"]},
        metrics=[("cg", 3, {}), ("precision", 3, {})])
    judge = make_judge(team)
    other_judge = make_judge(team, "Other")
    for text, position, index, user, grade in [
        ("alpha", 1, 0, first, 3), ("alpha", 1, 1, second, 2), ("alpha", 2, 0, first, 1),
        ("alpha", 3, 0, first, 0), ("beta", 1, 0, first, 2), ("beta", 2, 0, first, 0),
        ("beta", 2, 1, other_judge.user, 3),
    ]:
        give(evaluation, text, position, index, user, grade)
    give(evaluation, "alpha", 3, 1, judge.user, 3, reason="looks perfect")
    give(evaluation, "beta", 3, 0, judge.user, 2, reason="fairly good")
    long_ago = timezone.now() - timedelta(days=2)
    run_with_answers(judge, evaluation, {("alpha", 3): 2}, answered_at=long_ago)
    run_with_answers(judge, evaluation, {("alpha", 1): 3, ("alpha", 2): 1, ("alpha", 3): 1,
                                         ("beta", 1): 2, ("beta", 2): 0})
    return Example(judge=judge, evaluation=evaluation, first=first, second=second)


def half_kappa_example(team: Team, grader: User) -> tuple[Judge, Evaluation]:
    """A judge whose κ against `grader` is exactly 1/2 over 4 binary pairs (person, judge):
    (1,1) (1,0) (0,0) (0,0). p_o = 3/4; rows [2, 2], columns [3, 1]: p_e = (2·3 + 2·1) / 16
    = 1/2, κ = (3/4 - 1/2) / (1/2) = 1/2, exact in binary floating point."""
    evaluation = build_evaluation(team=team, scale="binary",
                                  keywords={"q": ["a", "b", "c", "d"]}, metrics=[])
    judge = make_judge(team)
    for position, grade in enumerate([1, 1, 0, 0], start=1):
        give(evaluation, "q", position, 0, grader, grade)
    run_with_answers(judge, evaluation, {("q", 1): 1, ("q", 2): 0, ("q", 3): 0, ("q", 4): 0})
    return judge, evaluation
