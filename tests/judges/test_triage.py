"""The triage selector (judges.triage) and the adjudication service
(judgments.adjudication): hand-computed impacts, their order, and adjudicated values that
equal what `recompute_metrics` computes."""

from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.utils import timezone

from evaluations.models import EvaluationMetric
from judges import triage
from judgments.adjudication import snapshot_adjudicate
from judgments.models import AdjudicatedAnswer, FeedbackSlot
from metrics.models import KeywordMetricValue
from searchtweak import access
from tests.judges.calibration_data import make_judge, run_with_answers, slot_of
from tests.judges.triage_data import binary_example, graded_example

pytestmark = pytest.mark.django_db


def _triage(example, user):
    return triage.evaluation_triage(evaluation=example.evaluation,
                                    visibility=access.grade_visibility(user=user))


def _stored(evaluation) -> dict[tuple[str, int], float | None]:
    return dict(((text, metric_id), value) for text, metric_id, value in
                KeywordMetricValue.objects.filter(keyword__evaluation=evaluation)
                .values_list("keyword__text", "metric_id", "value"))


def test_the_impact_is_the_move_of_the_keywords_value_between_the_two_answers(personas):
    example = binary_example(personas.team, personas.grader)
    found = _triage(example, personas.lead)
    assert found.metric_label == "P@3"
    assert [(row.keyword, row.position, row.doc_id, row.judge_grades, row.people_grades)
            for row in found.rows] == [("shoes", 2, "b", [1], [0])]
    assert found.rows[0].impact == pytest.approx(1 / 3, abs=1e-12)


def test_rows_come_largest_impact_first_and_agreement_is_not_listed(personas):
    example = graded_example(personas.team, personas.lead, personas.grader)
    found = _triage(example, personas.lead)
    assert found.metric_label == "CG@3"
    assert [(row.keyword, row.position, row.judge_grades, row.people_grades, row.impact)
            for row in found.rows] == [
        ("shoes", 2, [3], [0], pytest.approx(3.0)),
        ("hats", 1, [1], [2, 3], pytest.approx(1.5)),
        ("shoes", 4, [0], [1], pytest.approx(0.0)),
    ]


def test_a_grader_reads_no_disagreement_through_the_selector(personas):
    # The grader's visibility holds their own slots only: no judge's grade beside them.
    example = binary_example(personas.team, personas.grader)
    assert _triage(example, personas.grader).rows == []


def test_without_a_metric_the_rows_are_listed_without_impact(personas):
    example = binary_example(personas.team, personas.grader)
    EvaluationMetric.objects.filter(evaluation=example.evaluation).delete()
    found = _triage(example, personas.lead)
    assert found.metric_label == ""
    assert [(row.position, row.impact) for row in found.rows] == [(2, None)]


def test_adjudicating_sets_every_graded_slot_and_the_values_equal_a_full_recompute(
        personas, django_capture_on_commit_callbacks):
    example = graded_example(personas.team, personas.lead, personas.grader)
    evaluation = example.evaluation
    call_command("recompute_metrics", "--evaluation", str(evaluation.pk), "--quiet")
    target = slot_of(evaluation, "hats", 1, 0).snapshot
    with django_capture_on_commit_callbacks(execute=True):
        answer = snapshot_adjudicate(lead=personas.lead, evaluation=evaluation,
                                     snapshot=target, grade=3, gold=True)
    assert (answer.grade, answer.gold, answer.decided_by) == (3, True, personas.lead)
    slots = FeedbackSlot.objects.filter(snapshot=target).order_by("index")
    # The judge's and both people's slots now say 3, each kept by its holder.
    assert [(s.grade, s.user_id, s.graded_by_id) for s in slots] == [
        (3, example.judge.user_id, personas.lead.pk), (3, personas.lead.pk, None),
        (3, personas.grader.pk, personas.lead.pk)]
    after = _stored(evaluation)
    cg = EvaluationMetric.objects.get(evaluation=evaluation, code="cg").pk
    # hats CG@3: 3 + 2 (the agreeing result) = 5.
    assert after[("hats", cg)] == pytest.approx(5.0)
    KeywordMetricValue.objects.filter(keyword__evaluation=evaluation).delete()
    call_command("recompute_metrics", "--evaluation", str(evaluation.pk), "--quiet")
    assert _stored(evaluation) == pytest.approx(after)
    # Settled: the result is no longer a disagreement.
    assert [(row.keyword, row.position) for row in _triage(example, personas.lead).rows] == [
        ("shoes", 2), ("shoes", 4)]


@pytest.mark.parametrize(("grade", "gold", "field"), [
    (4, False, "grade"), ("high", False, "grade"), (None, False, "grade"),
    (2, "yes", "gold"),
])
def test_bad_input_names_the_field_and_changes_nothing(personas, grade, gold, field):
    example = graded_example(personas.team, personas.lead, personas.grader)
    target = slot_of(example.evaluation, "hats", 1, 0).snapshot
    before = list(FeedbackSlot.objects.order_by("pk").values_list("pk", "grade", "graded_by"))
    with pytest.raises(ValidationError) as raised:
        snapshot_adjudicate(lead=personas.lead, evaluation=example.evaluation,
                            snapshot=target, grade=grade, gold=gold)
    assert set(raised.value.message_dict) == {field}
    assert list(FeedbackSlot.objects.order_by("pk").values_list(
        "pk", "grade", "graded_by")) == before
    assert not AdjudicatedAnswer.objects.exists()


def test_a_result_of_another_evaluation_or_ungraded_is_refused(personas):
    example = graded_example(personas.team, personas.lead, personas.grader)
    other = binary_example(personas.team, personas.grader)
    foreign = slot_of(other.evaluation, "shoes", 2, 0).snapshot
    with pytest.raises(ValidationError) as raised:
        snapshot_adjudicate(lead=personas.lead, evaluation=example.evaluation,
                            snapshot=foreign, grade=1)
    assert set(raised.value.message_dict) == {"snapshot"}
    ungraded = slot_of(example.evaluation, "hats", 3, 0).snapshot
    with pytest.raises(ValidationError) as raised:
        snapshot_adjudicate(lead=personas.lead, evaluation=example.evaluation,
                            snapshot=ungraded, grade=1)
    assert set(raised.value.message_dict) == {"snapshot"}
    assert not AdjudicatedAnswer.objects.exists()


def test_a_reused_grade_nobody_holds_is_settled_beside_the_leads_own_slot(
        personas, django_capture_on_commit_callbacks):
    # hats 1: the lead (first) grades slot 1; slot 0's grade was reused from an earlier
    # evaluation and has no holder. Adjudicating used to refuse: the lead "already fills
    # another slot of this result".
    example = graded_example(personas.team, personas.lead, personas.grader)
    evaluation = example.evaluation
    reused = slot_of(evaluation, "hats", 1, 0)
    earlier = slot_of(evaluation, "hats", 2, 0)
    FeedbackSlot.objects.filter(pk=reused.pk).update(user=None, reused_from=earlier)
    with django_capture_on_commit_callbacks(execute=True):
        snapshot_adjudicate(lead=personas.lead, evaluation=evaluation,
                            snapshot=reused.snapshot, grade=0)
    slots = FeedbackSlot.objects.filter(snapshot=reused.snapshot).order_by("index")
    assert [(s.grade, s.user_id, s.graded_by_id, s.reused_from_id) for s in slots] == [
        (0, None, personas.lead.pk, earlier.pk), (0, personas.lead.pk, None, None),
        (0, personas.grader.pk, personas.lead.pk, None)]
    # hats CG@3 = mean(0, 0, 0) + 2 (position 2) + nothing at 3 = 2.
    cg = EvaluationMetric.objects.get(evaluation=evaluation, code="cg").pk
    assert _stored(evaluation)[("hats", cg)] == pytest.approx(2.0)


def _with_shadow_judge(example):
    """graded_example plus a shadow judge, "Shade", whose answers count nowhere:

        socks 1: 3 (an hour ago), then 1   people 0, 3; no counting judge
        hats 2:  0                          judge 2, people 2 (they agreed)
        shoes 1: 2                          people 2 (all agree: not listed)
    and the counting judge's own shadow answer 0 for shoes 2, where its slot says 3.

    socks 1: the judges' way [1] -> CG@3 = 1 + 3 (socks 2) = 4; the people's mean(0, 3)
    = 1.5 -> 4.5; impact 0.5. hats 2: the judges' way mean(2, 0) = 1 -> mean(1, 2, 3) + 1
    = 3; the people's [2] -> 2 + 2 = 4; impact 1."""
    evaluation = example.evaluation
    shade = make_judge(evaluation.team, "Shade")
    run_with_answers(shade, evaluation, {("socks", 1): 3},
                     answered_at=timezone.now() - timedelta(hours=1))
    run_with_answers(shade, evaluation, {("socks", 1): 1, ("hats", 2): 0, ("shoes", 1): 2})
    run_with_answers(example.judge, evaluation, {("shoes", 2): 0})
    return shade


def test_shadow_judges_disagreements_are_listed_apart_with_their_impact(personas):
    example = graded_example(personas.team, personas.lead, personas.grader)
    shade = _with_shadow_judge(example)
    found = _triage(example, personas.lead)
    assert [(row.keyword, row.position, row.judge_grades, row.people_grades,
             [(shadow.judge, shadow.judge_id, shadow.grade) for shadow in row.shadow_grades],
             row.impact) for row in found.rows] == [
        ("shoes", 2, [3], [0], [], pytest.approx(3.0)),
        ("hats", 1, [1], [2, 3], [], pytest.approx(1.5)),
        ("hats", 2, [2], [2], [("Shade", shade.pk, 0)], pytest.approx(1.0)),
        ("socks", 1, [], [0, 3], [("Shade", shade.pk, 1)], pytest.approx(0.5)),
        ("shoes", 4, [0], [1], [], pytest.approx(0.0)),
    ]


def test_a_grader_reads_no_shadow_answer(personas):
    # The grader sees their own slots only: no judge's answer, shadow or not, beside them.
    example = graded_example(personas.team, personas.lead, personas.grader)
    _with_shadow_judge(example)
    assert _triage(example, personas.grader).rows == []
