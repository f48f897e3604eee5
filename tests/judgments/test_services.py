from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from evaluations.models import Evaluation, Keyword
from evaluations.signals import snapshots_created
from judgments.grader_tags import grader_tags_set
from judgments.grading import (
    feedback_submit,
    keywords_mark_dirty,
    slot_grade_by_lead,
    slot_reset,
    snapshot_grade,
)
from judgments.models import FeedbackSlot, GraderTags, SlotSkip, Transformer
from judgments.queue import SlotConflict, slot_claim_next, slot_skip
from judgments.queue_selectors import (
    grading_progress,
    previous_graded_slot,
    queue_evaluation_ids,
)
from judgments.scale_writes import scale_create, scale_delete, scale_update, transformer_save
from judgments.selectors import snapshot_target_for_user
from judgments.signals import grades_written
from metrics import receivers as metrics_receivers
from metrics.models import KeywordRecomputeMark
from searchtweak.models import Role
from tests.evaluations.factories import KeywordFactory, SnapshotFactory
from tests.judgments.builders import evaluation_with_slots
from tests.recompute_state import mark_of
from tests.searchtweak.factories import member

pytestmark = pytest.mark.django_db


def _grade_next(user, team, grade=2, evaluation=None):
    slot = slot_claim_next(user=user, team=team, evaluation=evaluation)
    assert slot is not None
    return feedback_submit(user=user, slot_id=slot.pk, grade=grade)


# --- dirty marking ---


def test_it_announces_in_the_transaction_and_metrics_marks_there_and_queues_after_commit(
    personas, django_capture_on_commit_callbacks, monkeypatch
):
    evaluation = evaluation_with_slots(personas.team, keywords=1)
    keyword = evaluation.keywords.get()
    announced, queued = [], []

    def listener(sender, keyword_ids, **kwargs):
        announced.append(keyword_ids)

    monkeypatch.setattr(metrics_receivers, "on_grades_changed",
                        lambda sender, **kwargs: queued.append(kwargs))
    grades_written.connect(listener, dispatch_uid="test-listener")
    try:
        with django_capture_on_commit_callbacks() as callbacks:
            keywords_mark_dirty(keyword_ids=[keyword.pk, keyword.pk])
            first = Keyword.objects.get(pk=keyword.pk)
            assert mark_of(first).version == 1 and mark_of(first).dirty_since is not None
            keywords_mark_dirty(keyword_ids=[keyword.pk])
            second = Keyword.objects.get(pk=keyword.pk)
            # The version counts every change; dirty_since keeps the oldest unrecomputed one.
            assert mark_of(second).version == 2
            assert mark_of(second).dirty_since == mark_of(first).dirty_since
            assert announced == [[keyword.pk], [keyword.pk]]  # inside the transaction
            assert queued == []  # nothing is queued before the commit
        for callback in callbacks:
            callback()
        # The first turned the keyword dirty; the second found it dirty already.
        assert queued == [{"keyword_ids": [keyword.pk], "newly_dirty_ids": [keyword.pk]},
                          {"keyword_ids": [keyword.pk], "newly_dirty_ids": []}]
    finally:
        grades_written.disconnect(dispatch_uid="test-listener")


def test_a_grade_bumps_its_keyword_version_but_a_same_regrade_does_not(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=1)
    slot = _grade_next(personas.grader, personas.team, grade=2)
    assert mark_of(slot.keyword_id).version == 1
    feedback_submit(user=personas.grader, slot_id=slot.pk, grade=2)
    assert mark_of(slot.keyword_id).version == 1
    feedback_submit(user=personas.grader, slot_id=slot.pk, grade=3)
    assert mark_of(slot.keyword_id).version == 2
    assert mark_of(evaluation.keywords.get()).dirty_since is not None


# --- slots ---


@pytest.mark.parametrize("strategy", [1, 3])
def test_it_creates_strategy_empty_slots_per_snapshot(personas, strategy):
    evaluation = evaluation_with_slots(personas.team, keywords=2, positions=4, strategy=strategy)
    slots = FeedbackSlot.objects.filter(evaluation=evaluation)
    assert slots.count() == 2 * 4 * strategy
    assert set(slots.values_list("index", flat=True)) == set(range(strategy))
    assert not slots.exclude(user=None).exists() and not slots.exclude(grade=None).exists()
    for slot in slots.select_related("snapshot"):
        assert slot.keyword_id == slot.snapshot.keyword_id


def test_the_snapshots_created_signal_creates_the_slots(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=0, positions=0, strategy=3)
    keyword = KeywordFactory(evaluation=evaluation, position=1, text="shoes")
    snapshots = [SnapshotFactory(keyword=keyword, position=p) for p in (1, 2)]
    snapshots_created.send(sender=Evaluation, evaluation=evaluation,
                           snapshots_by_keyword={keyword: snapshots})
    assert FeedbackSlot.objects.filter(keyword=keyword).count() == 6


# --- reuse ---


def _graded_earlier(team, users_grades, *, text="red shoes", scale="graded", doc_ids=None,
                    status=Evaluation.Status.ACTIVE):
    """An earlier evaluation where each (user, grade) graded every result of one keyword."""
    earlier = evaluation_with_slots(team, texts=[text], positions=2, strategy=3, scale=scale,
                                    doc_ids=doc_ids or ["a", "b"], status=Evaluation.Status.ACTIVE)
    for user, grade in users_grades:
        for _ in range(2):
            _grade_next(user, team, grade=grade, evaluation=earlier)
    Evaluation.objects.filter(pk=earlier.pk).update(status=status)
    return earlier


def test_reuse_by_document_fills_empty_slots_with_earlier_grades(personas):
    team = personas.team
    earlier = _graded_earlier(team, [(personas.grader, 3), (personas.lead, 1)],
                              status=Evaluation.Status.FINISHED)
    evaluation = evaluation_with_slots(team, texts=["  Red SHOES "], positions=2, strategy=3,
                                       doc_ids=["b", "x"], reuse=Evaluation.Reuse.DOCUMENT)
    reused = FeedbackSlot.objects.filter(evaluation=evaluation, grade__isnull=False)
    # Document "b" was graded earlier (at position 2) by two people; "x" never.
    assert sorted((s.snapshot.doc_id, s.user.username, s.grade) for s in reused) == [
        ("b", "grader", 3), ("b", "lead", 1)]
    for slot in reused:
        assert slot.reused_from.evaluation_id == earlier.pk
        assert slot.reused_from.snapshot.doc_id == "b"
    assert mark_of(evaluation.keywords.get()).version == 1
    # The third slot of "b" stays free, and its graders never get "b" again.
    assert slot_claim_next(user=personas.grader, team=team,
                           evaluation=evaluation).snapshot.doc_id == "x"


def test_reuse_by_position_needs_the_same_position(personas):
    team = personas.team
    _graded_earlier(team, [(personas.grader, 3)])
    evaluation = evaluation_with_slots(team, texts=["red shoes"], positions=2, strategy=1,
                                       doc_ids=["b", "a"], reuse=Evaluation.Reuse.POSITION)
    assert not FeedbackSlot.objects.filter(evaluation=evaluation, grade__isnull=False).exists()
    same = evaluation_with_slots(team, texts=["red shoes"], positions=2, strategy=1,
                                 doc_ids=["a", "z"], reuse=Evaluation.Reuse.POSITION)
    assert list(FeedbackSlot.objects.filter(evaluation=same, grade__isnull=False)
                .values_list("snapshot__doc_id", "grade")) == [("a", 3)]


def test_reuse_takes_only_the_same_scale_the_same_team_and_sure_grades(personas):
    team = personas.team
    _graded_earlier(team, [(personas.grader, 1)], scale="binary")
    _graded_earlier(personas.other_team, [(personas.outsider, 3)])
    earlier = evaluation_with_slots(team, texts=["red shoes"], positions=1, doc_ids=["a"])
    slot = slot_claim_next(user=personas.lead, team=team, evaluation=earlier)
    feedback_submit(user=personas.lead, slot_id=slot.pk, grade=2, unsure=True,
                    note="not sure")
    evaluation = evaluation_with_slots(team, texts=["red shoes"], positions=2, strategy=3,
                                       doc_ids=["a", "b"], reuse=Evaluation.Reuse.DOCUMENT)
    assert not FeedbackSlot.objects.filter(evaluation=evaluation, grade__isnull=False).exists()


def test_reuse_never_gives_one_person_two_slots_of_a_snapshot(personas):
    team = personas.team
    # The grader graded "a" in two earlier evaluations; only their newest grade is reused.
    _graded_earlier(team, [(personas.grader, 1)])
    _graded_earlier(team, [(personas.grader, 2)])
    evaluation = evaluation_with_slots(team, texts=["red shoes"], positions=1, strategy=3,
                                       doc_ids=["a"], reuse=Evaluation.Reuse.DOCUMENT)
    reused = list(FeedbackSlot.objects.filter(evaluation=evaluation, grade__isnull=False))
    assert [(s.user_id, s.grade) for s in reused] == [(personas.grader.pk, 2)]


# --- the queue ---


def test_the_queue_hands_out_keywords_then_positions_with_a_five_minute_lease(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=2, positions=3)
    order = []
    before = timezone.now()
    while (slot := slot_claim_next(user=personas.grader, team=personas.team)):
        assert slot.user_id == personas.grader.pk
        lease = slot.lease_expires_at - slot.assigned_at
        assert lease == timedelta(minutes=5) and slot.assigned_at >= before
        order.append((slot.keyword.position, slot.snapshot.position))
        feedback_submit(user=personas.grader, slot_id=slot.pk, grade=1)
    assert order == [(1, 1), (1, 2), (1, 3), (2, 1), (2, 2), (2, 3)]
    assert FeedbackSlot.objects.filter(evaluation=evaluation, grade=1).count() == 6


def test_asking_twice_returns_the_slot_already_held(personas):
    evaluation_with_slots(personas.team)
    first = slot_claim_next(user=personas.grader, team=personas.team)
    again = slot_claim_next(user=personas.grader, team=personas.team)
    assert again.pk == first.pk
    assert FeedbackSlot.objects.filter(user=personas.grader).count() == 1


def test_two_graders_never_get_the_same_slot(personas):
    evaluation_with_slots(personas.team, keywords=1, positions=2)
    a = slot_claim_next(user=personas.grader, team=personas.team)
    b = slot_claim_next(user=personas.lead, team=personas.team)
    assert a.pk != b.pk
    assert slot_claim_next(user=personas.admin, team=personas.team) is None


def test_a_person_never_gets_two_slots_of_one_snapshot(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=2, strategy=3)
    snapshots = []
    while (slot := slot_claim_next(user=personas.grader, team=personas.team)):
        snapshots.append(slot.snapshot_id)
        feedback_submit(user=personas.grader, slot_id=slot.pk, grade=0)
    assert len(snapshots) == 2 and len(set(snapshots)) == 2
    # Other people still find the remaining slots.
    assert slot_claim_next(user=personas.lead, team=personas.team,
                           evaluation=evaluation) is not None


def test_an_expired_lease_returns_the_slot_to_the_pool(personas):
    evaluation_with_slots(personas.team, keywords=1, positions=1)
    held = slot_claim_next(user=personas.grader, team=personas.team)
    assert slot_claim_next(user=personas.lead, team=personas.team) is None
    FeedbackSlot.objects.filter(pk=held.pk).update(
        lease_expires_at=timezone.now() - timedelta(seconds=1))
    taken = slot_claim_next(user=personas.lead, team=personas.team)
    assert taken.pk == held.pk and taken.user_id == personas.lead.pk
    with pytest.raises(ValidationError) as error:
        feedback_submit(user=personas.grader, slot_id=held.pk, grade=2)
    assert "another grader" in str(error.value)
    assert FeedbackSlot.objects.get(pk=held.pk).grade is None


@pytest.mark.parametrize("status", [Evaluation.Status.PENDING, Evaluation.Status.FETCHING,
                                    Evaluation.Status.FINISHED])
def test_only_active_evaluations_hand_out_work(personas, status):
    evaluation_with_slots(personas.team, status=status)
    assert slot_claim_next(user=personas.grader, team=personas.team) is None


def test_tags_route_work_to_graders_carrying_all_of_them(personas):
    tagged = evaluation_with_slots(personas.team, keywords=1, positions=1, tags=["de", "Fashion"])
    assert queue_evaluation_ids(user=personas.grader, team=personas.team) == []
    grader_tags_set(team=personas.team, user=personas.grader, tags=["de"])
    assert slot_claim_next(user=personas.grader, team=personas.team) is None
    grader_tags_set(team=personas.team, user=personas.grader,
                    tags=[" fashion", "de", "fr"])
    assert GraderTags.objects.get(user=personas.grader).tags == ["de", "fashion", "fr"]
    slot = slot_claim_next(user=personas.grader, team=personas.team)
    assert slot.evaluation_id == tagged.pk


def test_the_team_queue_spans_active_evaluations_and_one_evaluation_queue_stays_in_it(personas):
    first = evaluation_with_slots(personas.team, keywords=1, positions=1)
    second = evaluation_with_slots(personas.team, keywords=1, positions=1)
    evaluation_with_slots(personas.other_team, keywords=1, positions=1)
    only_second = slot_claim_next(user=personas.lead, team=personas.team,
                                  evaluation=second)
    assert only_second.evaluation_id == second.pk
    team_wide = slot_claim_next(user=personas.grader, team=personas.team)
    assert team_wide.evaluation_id == first.pk
    # An outsider gets nothing from a team they are not in.
    assert slot_claim_next(user=personas.outsider, team=personas.team) is None


def test_skipped_results_come_back_only_when_nothing_else_is_left(personas):
    evaluation_with_slots(personas.team, keywords=1, positions=3)
    first = slot_claim_next(user=personas.grader, team=personas.team)
    slot_skip(user=personas.grader, slot_id=first.pk)
    released = FeedbackSlot.objects.get(pk=first.pk)
    assert released.user_id is None and released.lease_expires_at is None
    assert SlotSkip.objects.filter(user=personas.grader, snapshot=first.snapshot).exists()
    # Someone else may take the skipped result at once.
    assert slot_claim_next(user=personas.lead, team=personas.team).pk == first.pk
    slot_reset(slot_id=first.pk)
    positions = []
    while (slot := slot_claim_next(user=personas.grader, team=personas.team)):
        positions.append(slot.snapshot.position)
        feedback_submit(user=personas.grader, slot_id=slot.pk, grade=1)
    assert positions == [2, 3, 1]


# --- grades ---


def test_it_writes_the_grade_with_unsure_and_note(personas):
    evaluation_with_slots(personas.team, keywords=1, positions=1)
    slot = slot_claim_next(user=personas.grader, team=personas.team)
    feedback_submit(user=personas.grader, slot_id=slot.pk, grade=3, unsure=True,
                    note="  title only ")
    stored = FeedbackSlot.objects.get(pk=slot.pk)
    assert (stored.grade, stored.unsure, stored.note) == (3, True, "title only")
    assert stored.graded_at is not None and stored.graded_by is None


@pytest.mark.parametrize("scale,bad", [
    ("graded", 4), ("graded", -1), ("binary", 2), ("detail", 0), ("detail", 11),
    ("graded", "3"), ("graded", 1.5), ("graded", True), ("graded", None),
])
def test_it_rejects_a_grade_outside_the_scale_or_not_an_integer(personas, scale, bad):
    evaluation_with_slots(personas.team, keywords=1, positions=1, scale=scale)
    slot = slot_claim_next(user=personas.grader, team=personas.team)
    with pytest.raises(ValidationError) as error:
        feedback_submit(user=personas.grader, slot_id=slot.pk, grade=bad)
    assert list(error.value.message_dict) == ["grade"]
    stored = FeedbackSlot.objects.get(pk=slot.pk)
    assert stored.grade is None and stored.graded_at is None
    assert mark_of(stored.keyword).version == 0


@pytest.mark.parametrize("scale,good", [("binary", 1), ("graded", 0), ("detail", 10)])
def test_it_accepts_every_scales_own_grades(personas, scale, good):
    evaluation_with_slots(personas.team, keywords=1, positions=1, scale=scale)
    slot = _grade_next(personas.grader, personas.team, grade=good)
    assert FeedbackSlot.objects.get(pk=slot.pk).grade == good


def test_a_grade_after_the_lease_expired_changes_nothing(personas):
    evaluation_with_slots(personas.team, keywords=1, positions=1)
    slot = slot_claim_next(user=personas.grader, team=personas.team)
    FeedbackSlot.objects.filter(pk=slot.pk).update(
        lease_expires_at=timezone.now() - timedelta(seconds=1))
    with pytest.raises(ValidationError) as error:
        feedback_submit(user=personas.grader, slot_id=slot.pk, grade=2)
    assert "ran out" in error.value.message_dict["slot"][0]
    assert FeedbackSlot.objects.get(pk=slot.pk).grade is None


def test_a_grade_for_a_finished_evaluation_changes_nothing(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=1)
    slot = _grade_next(personas.grader, personas.team, grade=1)
    Evaluation.objects.filter(pk=evaluation.pk).update(status=Evaluation.Status.FINISHED)
    with pytest.raises(ValidationError) as error:
        feedback_submit(user=personas.grader, slot_id=slot.pk, grade=3)
    assert "finished" in error.value.message_dict["evaluation"][0]
    assert FeedbackSlot.objects.get(pk=slot.pk).grade == 1


def test_a_grader_may_regrade_their_own_graded_result_but_not_anothers(personas):
    evaluation_with_slots(personas.team, keywords=1, positions=2)
    mine = _grade_next(personas.grader, personas.team, grade=1)
    FeedbackSlot.objects.filter(pk=mine.pk).update(
        lease_expires_at=timezone.now() - timedelta(hours=1))
    feedback_submit(user=personas.grader, slot_id=mine.pk, grade=3)
    assert FeedbackSlot.objects.get(pk=mine.pk).grade == 3
    with pytest.raises(ValidationError):
        feedback_submit(user=personas.lead, slot_id=mine.pk, grade=0)
    assert FeedbackSlot.objects.get(pk=mine.pk).grade == 3


def test_previous_result_follows_the_order_results_were_handed_out(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=3)
    ids = [evaluation.pk]
    graded = [_grade_next(personas.grader, personas.team, grade=g) for g in (1, 2)]
    current = slot_claim_next(user=personas.grader, team=personas.team)
    assert previous_graded_slot(user=personas.grader, evaluation_ids=ids,
                                before=current).pk == graded[1].pk
    # Re-grading the previous one does not change what comes before it.
    feedback_submit(user=personas.grader, slot_id=graded[1].pk, grade=0)
    assert previous_graded_slot(user=personas.grader, evaluation_ids=ids,
                                before=graded[1]).pk == graded[0].pk
    assert previous_graded_slot(user=personas.grader, evaluation_ids=ids,
                                before=graded[0]) is None


def test_progress_counts_the_graders_own_and_everyones_grades(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=2, strategy=3)
    _grade_next(personas.grader, personas.team)
    _grade_next(personas.lead, personas.team)
    _grade_next(personas.lead, personas.team)
    progress = grading_progress(user=personas.lead, evaluation_ids=[evaluation.pk])
    assert (progress.mine, progress.graded, progress.total, progress.percent) == (2, 3, 6, 50)


# --- grading a snapshot directly (the API) ---


def test_grading_a_snapshot_claims_a_free_slot_then_reuses_the_callers(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=1, strategy=3)
    snapshot = evaluation.keywords.get().snapshots.get()
    target = snapshot_target_for_user(user=personas.grader, snapshot_id=snapshot.pk)
    slot = FeedbackSlot.objects.get(pk=snapshot_grade(
        user=personas.grader, target=target, grade=2))
    assert (slot.user_id, slot.grade, slot.index) == (personas.grader.pk, 2, 0)
    again = snapshot_grade(user=personas.grader, target=target, grade=3)
    assert again == slot.pk and FeedbackSlot.objects.get(pk=slot.pk).grade == 3
    assert FeedbackSlot.objects.filter(snapshot=snapshot, user__isnull=False).count() == 1


def test_grading_a_snapshot_marks_its_keyword_as_a_grade_change_does(
        personas, django_capture_on_commit_callbacks, monkeypatch):
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=2, strategy=1)
    first, second = evaluation.keywords.get().snapshots.order_by("position")
    targets = [snapshot_target_for_user(user=personas.grader, snapshot_id=s.pk)
               for s in (first, second)]
    received = []

    # Stands in for the queueing after commit: no recompute runs and cleans the keyword.
    monkeypatch.setattr(metrics_receivers, "on_grades_changed", lambda sender, **kwargs: (
        received.append((kwargs["keyword_ids"], kwargs["newly_dirty_ids"]))))
    with django_capture_on_commit_callbacks(execute=True):
        # Claims a slot (the general path), then re-grades it on the caller's own slot
        # (one statement on PostgreSQL): same grade, new grade, then the next result.
        snapshot_grade(user=personas.grader, target=targets[0], grade=1)
        snapshot_grade(user=personas.grader, target=targets[0], grade=1,
                       unsure=True, note="  looks off ")
        snapshot_grade(user=personas.grader, target=targets[0], grade=2)
        KeywordRecomputeMark.objects.update(dirty_since=None)  # as if a recompute had run
        snapshot_grade(user=personas.grader, target=targets[1], grade=0)
        snapshot_grade(user=personas.grader, target=targets[1], grade=3)
    keyword = evaluation.keywords.get()
    assert mark_of(keyword).version == 4 and mark_of(keyword).dirty_since is not None
    # Announced only for real changes; newly dirty only when the keyword was clean.
    assert received == [([keyword.pk], [keyword.pk]), ([keyword.pk], []),
                        ([keyword.pk], [keyword.pk]), ([keyword.pk], [])]
    slot = FeedbackSlot.objects.get(snapshot=first)
    assert (slot.grade, slot.unsure, slot.note, slot.graded_by_id) == (2, False, "", None)


def test_grading_a_snapshot_whose_slots_all_belong_to_others_conflicts(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=1, strategy=1)
    snapshot = evaluation.keywords.get().snapshots.get()
    slot_claim_next(user=personas.lead, team=personas.team)
    target = snapshot_target_for_user(user=personas.grader, snapshot_id=snapshot.pk)
    with pytest.raises(SlotConflict):
        snapshot_grade(user=personas.grader, target=target, grade=2)
    assert FeedbackSlot.objects.get(snapshot=snapshot).grade is None


# --- leads ---


def test_a_lead_grades_a_free_slot_and_corrects_a_graders_grade(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=2)
    graders = _grade_next(personas.grader, personas.team, grade=0)
    corrected = slot_grade_by_lead(lead=personas.lead, slot_id=graders.pk, grade=3)
    assert (corrected.user_id, corrected.grade, corrected.graded_by_id) == (
        personas.grader.pk, 3, personas.lead.pk)
    free = FeedbackSlot.objects.get(evaluation=evaluation, user__isnull=True)
    taken = slot_grade_by_lead(lead=personas.lead, slot_id=free.pk, grade=1)
    assert (taken.user_id, taken.grade) == (personas.lead.pk, 1)
    with pytest.raises(ValidationError):
        slot_grade_by_lead(lead=personas.lead, slot_id=free.pk, grade=9)
    assert mark_of(evaluation.keywords.get()).version == 3


def test_a_reset_empties_the_slot_and_returns_it_to_the_queue(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=1)
    slot = _grade_next(personas.grader, personas.team, grade=2)
    slot_reset(slot_id=slot.pk)
    stored = FeedbackSlot.objects.get(pk=slot.pk)
    assert (stored.user_id, stored.grade, stored.graded_at) == (None, None, None)
    assert mark_of(evaluation.keywords.get()).version == 2
    assert slot_claim_next(user=personas.grader, team=personas.team).pk == slot.pk


# --- scales, transformers, tags ---


LABELS = {str(g): {"label": f"L{g}", "color": "#112233"} for g in range(1, 6)}


def test_an_admin_defines_a_scale_that_graders_then_grade_on(personas):
    scale_create(team=personas.team, code="stars", name="Stars", lo=1, hi=5,
                 labels=LABELS)
    evaluation_with_slots(personas.team, keywords=1, positions=1, scale="stars")
    slot = slot_claim_next(user=personas.grader, team=personas.team)
    with pytest.raises(ValidationError):
        feedback_submit(user=personas.grader, slot_id=slot.pk, grade=0)
    feedback_submit(user=personas.grader, slot_id=slot.pk, grade=5)
    assert FeedbackSlot.objects.get(pk=slot.pk).grade == 5


@pytest.mark.parametrize("code,lo,hi,labels,field", [
    ("graded", 1, 5, LABELS, "code"),
    ("stars", 1, 1, {"1": {"label": "x"}}, "hi"),
    ("stars", 0, 11, {}, "hi"),
    ("stars", 0, 10, {}, "hi"),
    ("stars", 1, 5, {k: v for k, v in LABELS.items() if k != "3"}, "labels"),
])
def test_it_rejects_bad_scales(personas, code, lo, hi, labels, field):
    with pytest.raises(ValidationError) as error:
        scale_create(team=personas.team, code=code, name="X", lo=lo, hi=hi,
                     labels=labels)
    assert field in error.value.message_dict


def test_a_scale_in_use_keeps_its_range(personas):
    scale = scale_create(team=personas.team, code="stars", name="Stars", lo=1, hi=5,
                         labels=LABELS)
    evaluation_with_slots(personas.team, keywords=1, positions=1, scale="stars")
    with pytest.raises(ValidationError):
        scale_update(scale=scale, name="Stars", lo=1, hi=4,
                     labels={k: v for k, v in LABELS.items() if k != "5"})
    with pytest.raises(ValidationError):
        scale_delete(scale=scale)
    scale_update(scale=scale, name="Five stars", lo=1, hi=5, labels=LABELS)
    scale.refresh_from_db()
    assert (scale.name, scale.hi) == ("Five stars", 5)


def test_a_transformer_must_map_every_grade_to_a_valid_grade(personas):
    with pytest.raises(ValidationError) as error:
        transformer_save(team=personas.team, source="graded", target="binary",
                         mapping={"0": 0, "1": 0, "2": 1})
    assert "grade 3 is not mapped" in error.value.message_dict["mapping"][0]
    with pytest.raises(ValidationError):
        transformer_save(team=personas.team, source="graded", target="binary",
                         mapping={"0": 0, "1": 0, "2": 1, "3": 2})
    assert not Transformer.objects.exists()
    saved = transformer_save(team=personas.team, source="graded", target="binary",
                             mapping={"0": 0, "1": 0, "2": 1, "3": 1})
    assert saved.mapping == {"0": 0, "1": 0, "2": 1, "3": 1}


def test_the_scale_provider_answers_with_team_scales_and_transformers(personas):
    from evaluations.hooks import scale_provider

    scale_create(team=personas.team, code="stars", name="Stars", lo=1, hi=5,
                 labels=LABELS)
    transformer_save(team=personas.team, source="stars", target="binary",
                     mapping={"1": 0, "2": 0, "3": 1, "4": 1, "5": 1})
    provider = scale_provider()
    codes = [code for code, _ in provider.choices(personas.team)]
    assert codes == ["binary", "graded", "detail", "stars"]
    assert provider.bounds(personas.team, "stars") == (1, 5)
    assert provider.bounds(personas.other_team, "stars") is None
    assert provider.bounds(personas.team, "detail") == (1, 10)
    assert provider.transformers(personas.team) == {
        "stars->binary": {"1": 0, "2": 0, "3": 1, "4": 1, "5": 1}}


def test_tags_can_only_be_given_to_team_members(personas):
    with pytest.raises(ValidationError):
        grader_tags_set(team=personas.team, user=personas.outsider, tags=["x"])
    newcomer = member(personas.team, Role.GRADER, "newcomer")
    assert grader_tags_set(team=personas.team, user=newcomer, tags=["X", "x"]).tags == [
        "x"]
