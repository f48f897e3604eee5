"""Whether an evaluation takes grades is one rule (Evaluation.status_takes_grades): the
grading module and judge runs both follow it, each saying why in its own words."""

import pytest
from django.core.exceptions import ValidationError

from evaluations.models import Evaluation
from judges.models import JudgeRun
from judges.runs import _check_can_run
from judgments.grading import _check_takes_grades
from tests.evaluations.factories import EvaluationFactory
from tests.judges.builders import judge_with_account

pytestmark = pytest.mark.django_db

Status = Evaluation.Status


@pytest.mark.parametrize("status, takes", [
    (Status.PENDING, False), (Status.FETCHING, False), (Status.ACTIVE, True),
    (Status.FINISHED, False),
])
def test_only_an_active_evaluation_takes_grades(status, takes):
    assert Evaluation.status_takes_grades(status) is takes
    assert Evaluation(status=status).takes_grades() is takes


def test_grading_refuses_what_the_rule_refuses_and_says_why():
    _check_takes_grades(Status.ACTIVE)
    with pytest.raises(ValidationError, match="finished: its grades can no longer change"):
        _check_takes_grades(Status.FINISHED)
    for status in (Status.PENDING, Status.FETCHING):
        with pytest.raises(ValidationError, match="grading is paused"):
            _check_takes_grades(status)


def test_a_judge_run_follows_the_rule_and_a_shadow_run_may_judge_a_finished_one():
    evaluation = EvaluationFactory(status=Status.ACTIVE)
    judge = judge_with_account(evaluation.team, counts=True)
    _check_can_run(judge=judge, evaluation=evaluation, mode=JudgeRun.Mode.FILL)
    evaluation.status = Status.FINISHED
    _check_can_run(judge=judge, evaluation=evaluation, mode=JudgeRun.Mode.SHADOW)
    with pytest.raises(ValidationError, match="this one is finished"):
        _check_can_run(judge=judge, evaluation=evaluation, mode=JudgeRun.Mode.FILL)
    evaluation.status = Status.PENDING
    with pytest.raises(ValidationError, match="Judges grade only running evaluations"):
        _check_can_run(judge=judge, evaluation=evaluation, mode=JudgeRun.Mode.SHADOW)
