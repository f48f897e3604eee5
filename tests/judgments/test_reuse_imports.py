"""Judgments imported into the team's pool feed grade reuse, not only pool metrics."""

import csv
import io

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone

from evaluations.models import Evaluation, EvaluationMetric, Keyword
from judgments import exports, imports
from judgments.grading import feedback_submit, slot_grade_by_lead, slot_reset
from judgments.models import FeedbackSlot, PoolJudgment
from judgments.pool import pool_judgments_import
from judgments.queue import slot_claim_next
from judgments.scales import builtin_scale
from judgments.slots import slots_create_for_snapshots
from metrics.models import KeywordMetricValue
from metrics.reports.keyword_snapshots import snapshot_details
from metrics.reports.leaderboards import grader_leaderboard
from metrics.reports.team_overview import team_dashboard
from searchtweak.access import grade_visibility
from tests.evaluations.factories import KeywordFactory, SnapshotFactory
from tests.judgments.builders import evaluation_with_slots
from tests.recompute_state import mark_of

pytestmark = pytest.mark.django_db

GRADED = builtin_scale("graded")


def _import(team, user, content: bytes, *, scale: str = "graded") -> dict:
    """Parse a CSV as the import page does and store it in the team's pool."""
    result = imports.parse_csv(content, scale=builtin_scale(scale))
    assert result.ok, result.messages()
    return pool_judgments_import(team=team, scale=scale, judgments=result.judgments,
                                 source="csv: pool.csv", user=user)


def _reusing(team, *, doc_ids, strategy=1, reuse=Evaluation.Reuse.DOCUMENT, text="red shoes",
             scale="graded"):
    return evaluation_with_slots(team, texts=[text], positions=len(doc_ids), strategy=strategy,
                                 doc_ids=doc_ids, reuse=reuse, scale=scale)


def _graded(evaluation):
    return sorted(
        (s.snapshot.doc_id, s.index, s.grade, s.user.username if s.user else None,
         s.reused_from_pool_id is not None)
        for s in FeedbackSlot.objects.filter(evaluation=evaluation, grade__isnull=False)
        .select_related("snapshot", "user")
    )


def test_document_reuse_copies_imported_grades_into_empty_slots(personas):
    team = personas.team
    _import(team, personas.lead, b"keyword,doc_id,grade\nRed Shoes,a,3\nred shoes,b,0\n"
                                 b"blue shoes,c,2\n")
    evaluation = _reusing(team, doc_ids=["a", "b", "c", "x"])
    assert _graded(evaluation) == [("a", 0, 3, None, True), ("b", 0, 0, None, True)]
    slot = FeedbackSlot.objects.get(evaluation=evaluation, snapshot__doc_id="a")
    pool_row = PoolJudgment.objects.get(doc_id="a")
    assert (slot.reused_from_pool_id, slot.user_id, slot.reused_from_id) == (
        pool_row.pk, None, None)
    assert slot.graded_at is not None and slot.assigned_at is None
    keyword = evaluation.keywords.get()
    assert mark_of(keyword).version == 1 and mark_of(keyword).dirty_since is not None
    # A graded slot is not free: the queue only hands out the two results nobody graded.
    handed = []
    while (claimed := slot_claim_next(user=personas.grader, team=team,
                                      evaluation=evaluation)):
        handed.append(claimed.snapshot.doc_id)
        feedback_submit(user=personas.grader, slot_id=claimed.pk, grade=1)
    assert handed == ["c", "x"]


def test_imported_grades_of_another_scale_or_team_are_not_reused(personas):
    _import(personas.team, personas.lead, b"red shoes,a,1\n", scale="binary")
    _import(personas.other_team, personas.outsider, b"red shoes,a,3\n")
    evaluation = _reusing(personas.team, doc_ids=["a"])
    assert _graded(evaluation) == []
    assert mark_of(evaluation.keywords.get()).version == 0


def test_one_imported_grade_fills_exactly_one_of_three_slots(personas):
    _import(personas.team, personas.lead, b"red shoes,a,2\n")
    evaluation = _reusing(personas.team, doc_ids=["a"], strategy=3)
    assert _graded(evaluation) == [("a", 0, 2, None, True)]
    assert FeedbackSlot.objects.filter(evaluation=evaluation, grade__isnull=True).count() == 2


def test_never_more_imported_grades_than_slots(personas):
    # Four imported grades of one pair: a 3-slot snapshot takes the first three.
    _import(personas.team, personas.lead, b"red shoes,a,3\nred shoes,a,2\nred shoes,a,1\n"
                                          b"red shoes,a,0\n")
    evaluation = _reusing(personas.team, doc_ids=["a"], strategy=3)
    assert _graded(evaluation) == [("a", 0, 3, None, True), ("a", 1, 2, None, True),
                                   ("a", 2, 1, None, True)]


def test_earlier_evaluations_grades_come_before_imported_ones(personas):
    team = personas.team
    earlier = _reusing(team, doc_ids=["a", "b"], reuse=Evaluation.Reuse.NONE)
    for _ in range(2):
        claimed = slot_claim_next(user=personas.grader, team=team, evaluation=earlier)
        feedback_submit(user=personas.grader, slot_id=claimed.pk, grade=1)
    _import(team, personas.lead, b"red shoes,a,3\nred shoes,b,3\nred shoes,b,2\n")

    one_slot = _reusing(team, doc_ids=["a"])
    assert _graded(one_slot) == [("a", 0, 1, "grader", False)]

    three_slots = _reusing(team, doc_ids=["a", "b"], strategy=3)
    # The grader's grade first, then the imported ones in file order, in the slots left.
    assert _graded(three_slots) == [
        ("a", 0, 1, "grader", False), ("a", 1, 3, None, True),
        ("b", 0, 1, "grader", False), ("b", 1, 3, None, True), ("b", 2, 2, None, True),
    ]


def test_position_reuse_ignores_imported_grades(personas):
    # An imported judgment has no position, so it cannot vouch for one.
    _import(personas.team, personas.lead, b"red shoes,a,3\n")
    evaluation = _reusing(personas.team, doc_ids=["a"], reuse=Evaluation.Reuse.POSITION)
    assert _graded(evaluation) == []


def test_no_reuse_ignores_imported_grades(personas):
    _import(personas.team, personas.lead, b"red shoes,a,3\n")
    evaluation = _reusing(personas.team, doc_ids=["a"], reuse=Evaluation.Reuse.NONE)
    assert _graded(evaluation) == []


def test_reused_imported_grades_are_recomputed_after_commit(
        personas, django_capture_on_commit_callbacks):
    team = personas.team
    _import(team, personas.lead, b"red shoes,a,0\nred shoes,b,3\n")
    evaluation = evaluation_with_slots(team, keywords=0, positions=0,
                                       reuse=Evaluation.Reuse.DOCUMENT)
    metric = EvaluationMetric.objects.create(evaluation=evaluation, code="precision", k=2,
                                             params={}, position=0)
    keyword = KeywordFactory(evaluation=evaluation, position=1, text="red shoes",
                             fetch_status=Keyword.FetchStatus.FETCHED)
    snapshots = [SnapshotFactory(keyword=keyword, position=p, doc_id=d)
                 for p, d in ((1, "a"), (2, "b"))]
    with django_capture_on_commit_callbacks(execute=True):
        slots_create_for_snapshots(evaluation=evaluation, keyword=keyword,
                                   snapshots=snapshots)
    keyword.refresh_from_db()
    # Eager Celery recomputed it after the commit: one of the two results is relevant.
    mark = mark_of(keyword)
    assert mark.dirty_since is None and mark.computed_version == mark.version == 1
    assert KeywordMetricValue.objects.get(metric=metric, keyword=keyword).value == 0.5


def test_reimport_keeps_reused_grades_and_points_them_at_the_new_rows(personas):
    team = personas.team
    _import(team, personas.lead, b"red shoes,a,3\nred shoes,b,1\n")
    evaluation = _reusing(team, doc_ids=["a", "b"])
    counts = _import(team, personas.lead, b"red shoes,a,2\nred shoes,b,0\nred shoes,b,1\n")
    assert counts["replaced"] == 2
    # A reused grade is a copy, as with grades reused from earlier evaluations.
    assert _graded(evaluation) == [("a", 0, 3, None, True), ("b", 0, 1, None, True)]
    a, b = FeedbackSlot.objects.filter(evaluation=evaluation).order_by("position")
    assert PoolJudgment.objects.get(pk=a.reused_from_pool_id).doc_id == "a"
    # b's slot points at the new row with its own grade (1), not the first new row (0).
    assert PoolJudgment.objects.get(pk=b.reused_from_pool_id).grade == 1


def test_a_graded_slot_needs_a_grader_or_a_source(personas):
    evaluation = _reusing(personas.team, doc_ids=["a"])
    slot = FeedbackSlot.objects.get(evaluation=evaluation)
    with pytest.raises(IntegrityError), transaction.atomic():
        FeedbackSlot.objects.filter(pk=slot.pk).update(grade=2, graded_at=timezone.now())


def test_a_lead_can_overwrite_and_reset_an_imported_grade(personas):
    _import(personas.team, personas.lead, b"red shoes,a,3\n")
    evaluation = _reusing(personas.team, doc_ids=["a"])
    slot = FeedbackSlot.objects.get(evaluation=evaluation)
    slot_grade_by_lead(lead=personas.lead, slot_id=slot.pk, grade=1)
    slot.refresh_from_db()
    assert (slot.user_id, slot.grade, slot.reused_from_pool_id) == (personas.lead.pk, 1, None)
    slot_reset(slot_id=slot.pk)
    slot.refresh_from_db()
    assert (slot.user_id, slot.grade, slot.reused_from_pool_id) == (None, None, None)


def test_exports_and_dashboards_name_imported_grades(personas):
    team = personas.team
    _import(team, personas.lead, b"red shoes,a,3\n")
    evaluation = _reusing(team, doc_ids=["a", "b"])
    claimed = slot_claim_next(user=personas.grader, team=team, evaluation=evaluation)
    feedback_submit(user=personas.grader, slot_id=claimed.pk, grade=1)

    rows = [row[:9] for row in
            csv.reader(io.StringIO(exports.judgments_csv_per_grader(evaluation)))]
    assert rows == [["keyword", "doc_id", "grade", "grader", "grader_kind", "reason", "unsure",
                     "note", "position"],
                    ["red shoes", "a", "3", "(import)", "", "", "false", "", "1"],
                    ["red shoes", "b", "1", "grader", "person", "", "false", "", "2"]]
    judgments = exports.judgments_json(evaluation)["judgments"]
    assert [(j["doc_id"], j["grader"], j["grade"], j["reused"]) for j in judgments] == [
        ("a", "(import)", 3, True), ("b", "grader", 1, False)]

    keyword = evaluation.keywords.get()
    details = snapshot_details(
        [keyword.pk], visibility=grade_visibility(user=personas.lead))[keyword.pk]
    assert [(d.slots[0].username, d.slots[0].grade) for d in details] == [
        ("(import)", 3), ("grader", 1)]
    # Grader statistics count people only: the imported grade is nobody's work.
    standings = {s.username: s.grades_given for s in grader_leaderboard(team=team)}
    assert standings["grader"] == 1 and "(import)" not in standings
    dashboard = team_dashboard(team=team, user=personas.grader)
    assert [(g.username, g.graded_week) for g in dashboard.graders] == [("grader", 1)]
    assert dashboard.daily_counts[-1][1] == 1


def test_a_reused_grade_counts_once_in_the_keyword_pool(personas):
    """The pool holds judgments, not copies: a grade copied into this keyword's slot must
    not count again through the row it was copied from, nor a copy made elsewhere."""
    from metrics.selectors import keyword_pool_others

    team = personas.team
    _import(team, personas.lead, b"keyword,doc_id,grade\nred shoes,a,3\nred shoes,z,1\n")
    first = _reusing(team, doc_ids=["a", "b"])  # copies a=3 from the import
    second = _reusing(team, doc_ids=["a", "c"])  # copies a=3 again, from the import
    keyword = second.keywords.get()
    pool = dict(keyword_pool_others(keyword=keyword, evaluation=second))
    # a's imported grade is this keyword's own copy; first's copy of it is not a judgment.
    assert pool == {"z": [1]}
    assert dict(keyword_pool_others(keyword=first.keywords.get(), evaluation=first)) == {
        "z": [1]}
