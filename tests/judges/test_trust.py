"""A judge's grades count only after a finished shadow run (the figures' bar is tested in
test_counts_evidence.py; here the bar is lowered to nothing)."""

import pytest
from django.core.exceptions import ValidationError

from judges.models import Judge, JudgeRun
from judges.trust import judge_mark_counts
from tests.judges.calibration_data import bar, make_judge, run_with_answers
from tests.metrics.builders import build_evaluation

pytestmark = pytest.mark.django_db


@pytest.fixture
def judge(personas):
    bar(personas.team, min_pairs=1, min_kappa=-1)
    return make_judge(personas.team)


@pytest.fixture
def evaluation(personas):
    return build_evaluation(team=personas.team, keywords={"q": ["a"]}, metrics=[])


def test_it_refuses_counts_without_any_run(judge, personas):
    with pytest.raises(ValidationError) as refused:
        judge_mark_counts(judge=judge, counts=True, by=personas.admin)
    assert "counts" in refused.value.message_dict
    assert Judge.objects.get(pk=judge.pk).counts is False


@pytest.mark.parametrize(("mode", "status"), [
    (JudgeRun.Mode.SHADOW, JudgeRun.Status.RUNNING),
    (JudgeRun.Mode.SHADOW, JudgeRun.Status.CANCELLED),
    (JudgeRun.Mode.SHADOW, JudgeRun.Status.PAUSED),
    (JudgeRun.Mode.UNGRADED, JudgeRun.Status.DONE),
    (JudgeRun.Mode.FILL, JudgeRun.Status.DONE),
])
def test_it_refuses_counts_after_a_run_that_is_not_a_finished_shadow(
        judge, evaluation, personas, mode, status):
    run_with_answers(judge, evaluation, {("q", 1): 1}, mode=mode, status=status)
    with pytest.raises(ValidationError, match="shadow"):
        judge_mark_counts(judge=judge, counts=True, by=personas.admin)
    assert Judge.objects.get(pk=judge.pk).counts is False


def test_it_allows_counts_after_a_finished_shadow_run(judge, evaluation, personas):
    run_with_answers(judge, evaluation, {("q", 1): 1})
    # No person graded "q": no pair, so only an override lets it count.
    assert judge_mark_counts(judge=judge, counts=True, by=personas.admin,
                             override_reason="a trial").counts is True
    assert Judge.objects.get(pk=judge.pk).counts is True


def test_taking_trust_back_is_always_allowed(judge, personas):
    Judge.objects.filter(pk=judge.pk).update(counts=True)
    assert judge_mark_counts(judge=judge, counts=False, by=personas.admin).counts is False
    assert Judge.objects.get(pk=judge.pk).counts is False


def test_a_judge_of_another_team_shadowing_does_not_lend_its_run(judge, personas):
    stranger = make_judge(personas.other_team)
    elsewhere = build_evaluation(team=personas.other_team, keywords={"q": ["a"]}, metrics=[])
    run_with_answers(stranger, elsewhere, {("q", 1): 1})
    with pytest.raises(ValidationError):
        judge_mark_counts(judge=judge, counts=True, by=personas.admin)
