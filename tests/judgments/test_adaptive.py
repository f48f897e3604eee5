"""Adaptive slots, strategy "1 → 3" (judgments.adaptive): one slot per
result, a second and third opened only on the named conditions. Grades go through the real
grade writers (the page's feedback_submit, a judge's judge_grades_write), which call the
service in the grade's transaction. SQLite by default; PostgreSQL with DATABASE_URL."""

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from evaluations.models import Evaluation, Snapshot
from evaluations.services import config_checks, configuration
from evaluations.strategies import ADAPTIVE_STRATEGY
from judgments import adaptive, grading
from judgments.grading import feedback_submit, slot_grade_by_lead, slot_reset
from judgments.models import FeedbackSlot, GoldItem, GoldProbe, OpenedBecause
from judgments.queue import LEASE, slot_claim_next
from metrics.models import KeywordMetricValue
from searchtweak.models import Role
from tests.evaluations.factories import EvaluationMetricFactory
from tests.judgments.builders import evaluation_with_slots
from tests.searchtweak.factories import member

pytestmark = pytest.mark.django_db


def adaptive_evaluation(team, **fields) -> Evaluation:
    """One keyword, three results, graded scale, no metric (so no bounds) unless added."""
    return evaluation_with_slots(team, keywords=1, positions=3, strategy=ADAPTIVE_STRATEGY,
                                 **fields)


def result(evaluation: Evaluation, position: int) -> Snapshot:
    return Snapshot.objects.get(keyword__evaluation=evaluation, position=position)


def slots_of(snapshot: Snapshot) -> list[tuple[int, int | None, str]]:
    return list(FeedbackSlot.objects.filter(snapshot=snapshot).order_by("index")
                .values_list("index", "grade", "opened_because"))


def grade(user, snapshot: Snapshot, value: int, *, unsure: bool = False) -> None:
    """The grader takes the result's free slot and grades it through the grading page."""
    slot = FeedbackSlot.objects.filter(snapshot=snapshot, user__isnull=True).order_by(
        "index").first()
    FeedbackSlot.objects.filter(pk=slot.pk).update(
        user=user, assigned_at=timezone.now(),
        lease_expires_at=timezone.now() + LEASE)
    feedback_submit(user=user, slot_id=slot.pk, grade=value, unsure=unsure)


def second_slot(snapshot: Snapshot) -> None:
    """A second slot as an earlier condition would have opened it (the bounds), so a test
    of the third slot's conditions starts from two graded slots and nothing else."""
    first = FeedbackSlot.objects.get(snapshot=snapshot, index=0)
    FeedbackSlot.objects.create(
        snapshot=snapshot, keyword_id=first.keyword_id, evaluation_id=first.evaluation_id,
        index=1, keyword_position=first.keyword_position, position=first.position,
        opened_because=OpenedBecause.BOUNDS)


def judge_account(team):
    judge = member(team, Role.GRADER, "judge-bot")
    judge.is_judge = True
    judge.save(update_fields=["is_judge"])
    return judge


def judge_grade(judge, evaluation: Evaluation, snapshot: Snapshot, value: int) -> None:
    """A counting judge's grade, written as a judge run writes it."""
    now = timezone.now()
    grading.judge_slots_claim(judge_user=judge, snapshot_ids=[snapshot.pk], now=now,
                              lease_until=now + LEASE)
    grading.judge_grades_write(judge_user=judge, evaluation=evaluation,
                               grades=[(snapshot.pk, value, "looks relevant")], now=now)


def test_each_result_starts_with_one_slot(personas):
    evaluation = adaptive_evaluation(personas.team)
    assert FeedbackSlot.objects.filter(evaluation=evaluation).count() == 3
    assert set(FeedbackSlot.objects.filter(evaluation=evaluation)
               .values_list("index", flat=True)) == {0}


def test_no_slot_opens_on_a_sure_grade_without_any_condition(personas):
    evaluation = adaptive_evaluation(personas.team)
    snapshot = result(evaluation, 1)
    grade(personas.grader, snapshot, 2)
    assert slots_of(snapshot) == [(0, 2, "")]
    # Nor on two sure people who agree on a side of the cut-off (1 and 2: both relevant).
    second_slot(snapshot)
    grade(personas.lead, snapshot, 1)
    assert [index for index, *_ in slots_of(snapshot)] == [0, 1]


def test_an_unsure_first_grade_opens_the_second_and_then_the_third(personas):
    evaluation = adaptive_evaluation(personas.team)
    snapshot = result(evaluation, 1)
    grade(personas.grader, snapshot, 2, unsure=True)
    assert slots_of(snapshot) == [(0, 2, ""), (1, None, "unsure")]
    # The second grade is sure and agrees, but the first stays unsure: a third opinion.
    grade(personas.lead, snapshot, 2)
    assert slots_of(snapshot) == [(0, 2, ""), (1, 2, "unsure"), (2, None, "unsure")]
    grade(personas.owner, snapshot, 2, unsure=True)
    assert len(slots_of(snapshot)) == 3  # never a fourth


def test_a_counting_judge_and_a_person_who_disagree_open_the_third(personas):
    evaluation = adaptive_evaluation(personas.team)
    apart, near = result(evaluation, 1), result(evaluation, 2)
    for snapshot in (apart, near):
        second_slot(snapshot)
    judge = judge_account(personas.team)
    judge_grade(judge, evaluation, apart, 3)
    grade(personas.grader, apart, 1)  # two apart on the graded scale, both relevant
    assert slots_of(apart)[2] == (2, None, "disagree")
    # One apart and on the same side of the cut-off (3 and 2): they agree.
    judge_grade(judge, evaluation, near, 3)
    grade(personas.grader, near, 2)
    assert len(slots_of(near)) == 2


def test_a_judge_and_a_person_across_the_cut_off_disagree_even_one_apart(personas):
    evaluation = adaptive_evaluation(personas.team)
    snapshot = result(evaluation, 1)
    second_slot(snapshot)
    judge_grade(judge_account(personas.team), evaluation, snapshot, 1)
    # 1 and 0 are one apart but on both sides of graded -> binary's cut-off: a tie as well,
    # and the disagreement is named first.
    grade(personas.grader, snapshot, 0)
    assert slots_of(snapshot)[2] == (2, None, "disagree")


def test_two_people_at_the_binary_cut_off_open_the_third(personas):
    evaluation = adaptive_evaluation(personas.team)
    snapshot = result(evaluation, 1)
    second_slot(snapshot)
    grade(personas.grader, snapshot, 0)
    grade(personas.lead, snapshot, 1)  # default graded -> binary: 0 -> 0, 1 -> 1: a tie
    assert slots_of(snapshot)[2] == (2, None, "cutoff")


def test_the_cut_off_follows_the_evaluations_transformer(personas):
    evaluation = adaptive_evaluation(
        personas.team, transformers={"graded->binary": {"0": 0, "1": 0, "2": 1, "3": 1}})
    tie, same_side = result(evaluation, 1), result(evaluation, 2)
    for snapshot in (tie, same_side):
        second_slot(snapshot)
    grade(personas.grader, tie, 1)
    grade(personas.lead, tie, 2)
    assert slots_of(tie)[2] == (2, None, "cutoff")
    grade(personas.grader, same_side, 0)
    grade(personas.lead, same_side, 1)  # both below this transformer's cut-off
    assert len(slots_of(same_side)) == 2


def test_a_top_result_of_a_keyword_still_wide_opens_the_second(personas):
    evaluation = adaptive_evaluation(personas.team)
    metric = EvaluationMetricFactory(evaluation=evaluation, code="ndcg", k=2, position=0)
    keyword = evaluation.keywords.get()
    KeywordMetricValue.objects.update_or_create(
        keyword=keyword, metric=metric, defaults={"value": None, "lower": 0.2, "upper": 0.9})
    grade(personas.grader, result(evaluation, 1), 2)
    assert slots_of(result(evaluation, 1)) == [(0, 2, ""), (1, None, "bounds")]
    # Position 3 lies past k = 2: its grade cannot move the metric.
    grade(personas.grader, result(evaluation, 3), 2)
    assert len(slots_of(result(evaluation, 3))) == 1
    # Bounds narrower than WIDE_BOUNDS (0.3 <= 0.5): settled enough.
    KeywordMetricValue.objects.filter(keyword=keyword).update(lower=0.5, upper=0.8)
    grade(personas.grader, result(evaluation, 2), 2)
    assert len(slots_of(result(evaluation, 2))) == 1
    # With two grades the bounds never open the third: only a split does.
    grade(personas.lead, result(evaluation, 1), 2)
    assert len(slots_of(result(evaluation, 1))) == 2


def wide_keyword(personas, *, lower: float, upper: float) -> Evaluation:
    """An adaptive evaluation whose first metric (nDCG@2) has these stored bounds."""
    evaluation = adaptive_evaluation(personas.team)
    metric = EvaluationMetricFactory(evaluation=evaluation, code="ndcg", k=2, position=0)
    KeywordMetricValue.objects.update_or_create(
        keyword=evaluation.keywords.get(), metric=metric,
        defaults={"value": None, "lower": lower, "upper": upper})
    return evaluation


def test_bounds_exactly_as_wide_as_the_bar_open_no_second_slot(personas):
    # Width 0.75 - 0.25 = 0.5 = WIDE_BOUNDS: "wider than" the bar is needed to open.
    evaluation = wide_keyword(personas, lower=0.25, upper=0.75)
    grade(personas.grader, result(evaluation, 1), 2)
    assert slots_of(result(evaluation, 1)) == [(0, 2, "")]


def test_bounds_just_wider_than_the_bar_open_the_second_slot(personas):
    # Width 0.76 - 0.25 = 0.51 > 0.5.
    evaluation = wide_keyword(personas, lower=0.25, upper=0.76)
    grade(personas.grader, result(evaluation, 1), 2)
    assert slots_of(result(evaluation, 1)) == [(0, 2, ""), (1, None, "bounds")]


def test_a_result_exactly_at_position_k_of_a_wide_keyword_opens_the_second(personas):
    # nDCG@2 reads positions 1 and 2: the result at 2 weighs on it, the one at 3 does not.
    evaluation = wide_keyword(personas, lower=0.2, upper=0.9)
    grade(personas.grader, result(evaluation, 2), 1)
    grade(personas.grader, result(evaluation, 3), 1)
    assert slots_of(result(evaluation, 2)) == [(0, 1, ""), (1, None, "bounds")]
    assert slots_of(result(evaluation, 3)) == [(0, 1, "")]


def test_bounds_not_stored_yet_count_as_wide(personas):
    evaluation = adaptive_evaluation(personas.team)
    EvaluationMetricFactory(evaluation=evaluation, code="ndcg", k=2, position=0)
    grade(personas.grader, result(evaluation, 1), 2)
    assert slots_of(result(evaluation, 1))[1] == (1, None, "bounds")


def test_a_reset_never_reopens_and_the_service_is_idempotent(personas):
    evaluation = adaptive_evaluation(personas.team)
    snapshot = result(evaluation, 1)
    second_slot(snapshot)
    grade(personas.grader, snapshot, 0)
    grade(personas.lead, snapshot, 1)
    assert len(slots_of(snapshot)) == 3
    third = FeedbackSlot.objects.get(snapshot=snapshot, index=2)
    grade(personas.owner, snapshot, 1)
    slot_reset(slot_id=third.pk)
    grade(personas.admin, snapshot, 0)
    assert adaptive.slots_open_where_it_matters(
        evaluation_id=evaluation.pk, snapshot_ids=[snapshot.pk]) == {}
    assert [index for index, *_ in slots_of(snapshot)] == [0, 1, 2]


def test_a_result_with_an_open_slot_waits_for_it(personas):
    evaluation = adaptive_evaluation(personas.team)
    snapshot = result(evaluation, 1)
    grade(personas.grader, snapshot, 2, unsure=True)
    assert adaptive.slots_open_where_it_matters(
        evaluation_id=evaluation.pk, snapshot_ids=[snapshot.pk]) == {}
    assert len(slots_of(snapshot)) == 2


def test_other_strategies_never_open_slots(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=1, strategy=1)
    snapshot = result(evaluation, 1)
    grade(personas.grader, snapshot, 2, unsure=True)
    assert slots_of(snapshot) == [(0, 2, "")]


def test_the_queue_hands_an_opened_slot_to_another_grader_only(personas):
    evaluation = adaptive_evaluation(personas.team)
    snapshot = result(evaluation, 1)
    grade(personas.grader, snapshot, 2, unsure=True)
    for position in (2, 3):
        grade(personas.grader, result(evaluation, position), 2)
    assert slot_claim_next(user=personas.grader, team=personas.team,
                           evaluation=evaluation) is None
    slot = slot_claim_next(user=personas.lead, team=personas.team,
                           evaluation=evaluation)
    assert (slot.snapshot_id, slot.index, slot.opened_because) == (snapshot.pk, 1, "unsure")


def test_the_strategy_is_accepted_and_others_refused(personas):
    evaluation = adaptive_evaluation(personas.team)
    assert evaluation.max_slots == 3 and evaluation.is_adaptive
    with pytest.raises(ValidationError) as error:
        config_checks.evaluation_fields_validate(team=personas.team, model=evaluation.model,
                                                 name="x", strategy=2)
    assert "strategy" in error.value.message_dict
    with pytest.raises(IntegrityError), transaction.atomic():
        Evaluation.objects.filter(pk=evaluation.pk).update(strategy=2)


def test_the_grading_api_opens_slots_as_the_page_does(personas):
    # The API's grade (on PostgreSQL its one-statement grade, grade and next slot at once)
    # opens the result's next slot in the same request; the grader is handed another result.
    from rest_framework.test import APIClient

    evaluation = adaptive_evaluation(personas.team)
    client = APIClient()
    client.force_authenticate(personas.grader)
    url = f"/api/v1/evaluations/{evaluation.pk}/next/"
    first = client.post(url).json()
    response = client.post(url, {"snapshot": first["snapshot"], "grade": 2, "unsure": True},
                           format="json")
    assert response.status_code == 200 and response.json()["snapshot"] != first["snapshot"]
    snapshot = Snapshot.objects.get(pk=first["snapshot"])
    assert slots_of(snapshot) == [(0, 2, ""), (1, None, "unsure")]
    # A grade alone (snapshot_grade, no next) opens the third after a tie.
    lead = APIClient()
    lead.force_authenticate(personas.lead)
    response = lead.post(url, {"snapshot": snapshot.pk, "grade": 0}, format="json")
    assert response.status_code == 200
    assert slots_of(snapshot) == [(0, 2, ""), (1, 0, "unsure"), (2, None, "unsure")]


def test_the_dashboard_reads_kappa_over_the_results_with_three_grades_and_says_why(personas):
    from metrics.reports.agreement import evaluation_agreement

    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=5,
                                       strategy=ADAPTIVE_STRATEGY)
    first, second = result(evaluation, 1), result(evaluation, 2)
    grade(personas.grader, first, 2, unsure=True)
    grade(personas.lead, first, 2)
    grade(personas.owner, first, 2)
    second_slot(second)
    grade(personas.grader, second, 0)
    grade(personas.lead, second, 1)
    grade(personas.owner, second, 0)
    for position in (3, 4, 5):
        grade(personas.grader, result(evaluation, position), 3)
    agreement = evaluation_agreement(evaluation=evaluation)
    # Rows [2,2,2] and [0,1,0] (the three single grades left out): P = (1 + 1/3) / 2 = 2/3,
    # shares 2/6, 1/6, 3/6 -> Pe = 14/36; kappa = (2/3 - 7/18) / (1 - 7/18) = 5/11.
    assert agreement.kappa == pytest.approx(5 / 11)
    assert agreement.adaptive == (
        "1 grader, up to 3 where it matters: 2 of 5 results got a second grader, 2 a third "
        "(slots opened because a grade of the result was marked unsure: 2; a top result of a "
        "keyword whose bounds are still wide: 1; the grades sit at the binary cut-off "
        "(a tie): 1).")


def test_an_adjudicated_result_opens_nothing(personas):
    from judgments.adjudication import snapshot_adjudicate

    evaluation = adaptive_evaluation(personas.team)
    snapshot = result(evaluation, 1)
    second_slot(snapshot)
    grade(personas.grader, snapshot, 1)
    grade(personas.lead, snapshot, 2)  # both relevant, one apart: no third
    # Deciding 0 sets slot 0 first: [0, 2] for a moment, across the cut-off; no slot opens.
    snapshot_adjudicate(lead=personas.owner, evaluation=evaluation, snapshot=snapshot, grade=0)
    assert slots_of(snapshot) == [(0, 0, ""), (1, 0, "bounds")]


# --- a second grader where a grader is below the gold bar ---


def gold_answers(team, user, *, right: int, wrong: int) -> None:
    """`user` answered right + wrong gold probes of the team (answer 2), oldest first."""
    source = evaluation_with_slots(team, keywords=1, positions=right + wrong,
                                   texts=["gold source"])
    Evaluation.objects.filter(pk=source.pk).update(status=Evaluation.Status.FINISHED)
    probing = evaluation_with_slots(team, keywords=1, positions=1, texts=["probing"])
    now = timezone.now()
    for position in range(1, right + wrong + 1):
        item = GoldItem.objects.create(team=team, scale="graded", grade=2, source="page",
                                       snapshot=result(source, position))
        GoldProbe.objects.create(gold=item, user=user, evaluation=probing, expected=2,
                                 grade=2 if position <= right else 0, assigned_at=now,
                                 graded_at=now + timezone.timedelta(seconds=position),
                                 lease_expires_at=now)


def routed_evaluation(team) -> Evaluation:
    evaluation = adaptive_evaluation(team)
    Evaluation.objects.filter(pk=evaluation.pk).update(second_grader_below_gold_bar=True)
    return evaluation


def test_a_grader_below_the_gold_bar_gets_a_second_grader_and_two_a_third(personas):
    # 6 of 10 right: 60 %, below the bar (70 % over at least 10 answers).
    gold_answers(personas.team, personas.grader, right=6, wrong=4)
    gold_answers(personas.team, personas.lead, right=6, wrong=4)
    evaluation = routed_evaluation(personas.team)
    snapshot = result(evaluation, 1)
    grade(personas.grader, snapshot, 2)
    assert slots_of(snapshot) == [(0, 2, ""), (1, None, "low_gold")]
    # The second grader is below the bar too: still no one above it, so a third.
    grade(personas.lead, snapshot, 2)
    assert slots_of(snapshot)[2] == (2, None, "low_gold")
    # A grader above the bar (no answers: not known to be low) alone opens nothing.
    grade(personas.owner, result(evaluation, 2), 2)
    assert len(slots_of(result(evaluation, 2))) == 1


def test_one_grader_above_the_bar_beside_a_low_one_settles_the_result(personas):
    gold_answers(personas.team, personas.grader, right=6, wrong=4)
    gold_answers(personas.team, personas.lead, right=8, wrong=2)  # 80 %: above
    evaluation = routed_evaluation(personas.team)
    snapshot = result(evaluation, 1)
    grade(personas.grader, snapshot, 2)
    grade(personas.lead, snapshot, 2)
    assert [reason for *_, reason in slots_of(snapshot)] == ["", "low_gold"]


def test_below_the_bar_needs_enough_answers_and_the_option(personas):
    # 5 of 9 right is 56 %, but 9 answers are too few to say so.
    gold_answers(personas.team, personas.grader, right=5, wrong=4)
    routed = routed_evaluation(personas.team)
    grade(personas.grader, result(routed, 1), 2)
    assert len(slots_of(result(routed, 1))) == 1
    # Enough answers, but the evaluation leaves the option off.
    gold_answers(personas.team, personas.lead, right=6, wrong=4)
    plain = adaptive_evaluation(personas.team)
    grade(personas.lead, result(plain, 1), 2)
    assert len(slots_of(result(plain, 1))) == 1


def test_a_leads_grade_over_a_low_graders_is_the_leads(personas):
    gold_answers(personas.team, personas.grader, right=6, wrong=4)
    evaluation = routed_evaluation(personas.team)
    snapshot = result(evaluation, 2)
    slot = FeedbackSlot.objects.get(snapshot=snapshot)
    # The grader's grade, written before the option's reading (as a grade from before
    # they fell below the bar), which the lead then corrects.
    FeedbackSlot.objects.filter(pk=slot.pk).update(user=personas.grader, grade=0,
                                                   graded_at=timezone.now())
    slot_grade_by_lead(lead=personas.lead, slot_id=slot.pk, grade=2)
    assert len(slots_of(snapshot)) == 1


def test_the_option_needs_the_adaptive_strategy(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=1, strategy=1)
    with pytest.raises(ValidationError) as error:
        configuration.evaluation_update(evaluation=evaluation, second_grader_below_gold_bar=True)
    assert "second_grader_below_gold_bar" in error.value.message_dict
    with pytest.raises(IntegrityError), transaction.atomic():
        Evaluation.objects.filter(pk=evaluation.pk).update(second_grader_below_gold_bar=True)
    adaptive_one = adaptive_evaluation(personas.team)
    updated = configuration.evaluation_update(evaluation=adaptive_one,
                                              second_grader_below_gold_bar=True)
    assert updated.second_grader_below_gold_bar is True
