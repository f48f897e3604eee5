"""Decisive evaluations (Evaluation.grading_order "decisive"): the queue
hands out first the slots whose grade can narrow the widest bounds most, key
width / ln(position + 1) of the first metric, 0 past its k (metrics.queue_order); the
recomputes (eager here) narrow the bounds as grades come. SQLite by default; PostgreSQL
with DATABASE_URL."""

import json

import pytest
from django.db import connection
from django.utils import timezone
from rest_framework.test import APIClient

from evaluations.models import Evaluation, Snapshot
from judgments import queries
from judgments.grading import feedback_submit
from judgments.models import FeedbackSlot
from judgments.queue import slot_claim_next, slot_skip
from metrics import queries as metrics_queries
from metrics.models import KeywordMetricValue, KeywordQueueWidth, TeamBaseline
from metrics.queue_order import decisive_key_sql
from tests.conftest import skip_or_fail
from tests.evaluations.factories import EvaluationMetricFactory
from tests.judgments.builders import evaluation_with_slots

pytestmark = pytest.mark.django_db


def decisive_evaluation(team, *, positions: int = 4, k: int = 3) -> Evaluation:
    """Keywords A (position 1) and B (2), binary, precision@k; A's bounds set by hand to
    0.4..0.5 (it is never graded, so no recompute rewrites them), B's to 0..1."""
    evaluation = evaluation_with_slots(team, keywords=2, positions=positions, scale="binary",
                                       grading_order=Evaluation.GradingOrder.DECISIVE)
    metric = EvaluationMetricFactory(evaluation=evaluation, code="precision", k=k, position=0)
    EvaluationMetricFactory(evaluation=evaluation, code="ndcg", k=10, position=1)
    for text, (lower, upper) in (("query 1", (0.4, 0.5)), ("query 2", (0.0, 1.0))):
        KeywordMetricValue.objects.update_or_create(
            keyword=evaluation.keywords.get(text=text), metric=metric,
            defaults={"value": None, "lower": lower, "upper": upper})
    store_widths(evaluation)
    return evaluation


def store_widths(evaluation: Evaluation) -> None:
    """What the recompute does after writing values: the queue's widths from them."""
    metrics_queries.keyword_queue_widths_store(
        keyword_ids=list(evaluation.keywords.values_list("pk", flat=True)))


def handed_order(evaluation: Evaluation, user, commits) -> list[tuple[int, int]]:
    """(keyword position, position) of each result the queue hands the grader, each graded
    relevant through the grading page's service (its recompute run: `commits` is
    django_capture_on_commit_callbacks), until nothing is left."""
    handed = []
    while (slot := slot_claim_next(user=user, team=evaluation.team,
                                   evaluation=evaluation)) is not None:
        with commits(execute=True):
            feedback_submit(user=user, slot_id=slot.pk, grade=1)
        handed.append((slot.keyword.position, slot.snapshot.position))
    return handed


def test_the_widest_keywords_top_position_comes_first_and_the_queue_moves_as_it_narrows(
        personas, django_capture_on_commit_callbacks):
    evaluation = decisive_evaluation(personas.team)
    a, b = (evaluation.keywords.get(position=n) for n in (1, 2))
    # Keys: B1 1/ln 2 = 1.44 > B2 1/ln 3 = 0.91 > B3 0.72 > A1 0.1/ln 2 = 0.14.
    first = slot_claim_next(user=personas.grader, team=personas.team,
                            evaluation=evaluation)
    assert (first.keyword_id, first.snapshot.position) == (b.pk, 1)
    with django_capture_on_commit_callbacks(execute=True):
        feedback_submit(user=personas.grader, slot_id=first.pk, grade=1)
    # The recompute narrowed B: precision@3 with one relevant of three, 1/3..1.
    stored = KeywordMetricValue.objects.get(keyword=b, metric__code="precision")
    assert (stored.lower, stored.upper) == (pytest.approx(1 / 3), 1.0)
    # B2 (2/3)/ln 3 = 0.61, then with 2/3..1 B3 (1/3)/ln 4 = 0.24 > A1 0.14; B exact,
    # A's top three; past k the key is 0 and position order decides (A4, then B4).
    assert handed_order(evaluation, personas.grader, django_capture_on_commit_callbacks) == [
        (2, 2), (2, 3), (1, 1), (1, 2), (1, 3), (1, 4), (2, 4)]
    assert a.pk != b.pk


def test_a_narrow_b_hands_out_a_first(personas):
    evaluation = decisive_evaluation(personas.team)
    # B almost settled (0.9..0.95): A's top position (0.1/ln 2) beats B's (0.05/ln 2).
    KeywordMetricValue.objects.filter(keyword__evaluation=evaluation, keyword__position=2,
                                      metric__code="precision").update(lower=0.9, upper=0.95)
    store_widths(evaluation)
    slot = slot_claim_next(user=personas.grader, team=personas.team,
                           evaluation=evaluation)
    assert (slot.keyword.position, slot.snapshot.position) == (1, 1)


def test_keywords_without_bounds_count_as_widest_and_interleave_by_position(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=2, positions=3, scale="binary",
                                       grading_order=Evaluation.GradingOrder.DECISIVE)
    metric = EvaluationMetricFactory(evaluation=evaluation, code="precision", k=3)
    KeywordMetricValue.objects.filter(metric=metric).delete()
    store_widths(evaluation)
    # Nothing stored, slots to grade: every keyword widest, so the first positions of each
    # come first.
    assert set(KeywordQueueWidth.objects.filter(evaluation=evaluation)
               .values_list("width", flat=True)) == {1e6}
    first = [slot_claim_next(user=user, team=personas.team, evaluation=evaluation)
             for user in (personas.grader, personas.lead, personas.owner)]
    assert [(s.keyword.position, s.snapshot.position) for s in first] == [
        (1, 1), (2, 1), (1, 2)]


def test_keywords_the_recompute_has_not_reached_go_in_position_order(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=2, positions=3, scale="binary",
                                       grading_order=Evaluation.GradingOrder.DECISIVE)
    EvaluationMetricFactory(evaluation=evaluation, code="precision", k=3)
    KeywordQueueWidth.objects.filter(evaluation=evaluation).delete()
    first = [slot_claim_next(user=user, team=personas.team, evaluation=evaluation)
             for user in (personas.grader, personas.lead, personas.owner)]
    assert [(s.keyword.position, s.snapshot.position) for s in first] == [
        (1, 1), (1, 2), (1, 3)]


def test_a_keyword_with_nothing_left_to_grade_and_no_bounds_is_no_candidate(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=2, positions=3, scale="binary",
                                       grading_order=Evaluation.GradingOrder.DECISIVE)
    metric = EvaluationMetricFactory(evaluation=evaluation, code="precision", k=3)
    KeywordMetricValue.objects.filter(metric=metric).delete()
    FeedbackSlot.objects.filter(keyword__position=1, evaluation=evaluation).update(
        grade=0, user=personas.grader, graded_by=personas.grader, graded_at=timezone.now())
    store_widths(evaluation)
    widths = dict(KeywordQueueWidth.objects.filter(evaluation=evaluation)
                  .values_list("keyword_position", "width"))
    assert widths == {1: 0.0, 2: 1e6}


def test_position_order_when_off(personas, django_capture_on_commit_callbacks):
    evaluation = decisive_evaluation(personas.team)
    Evaluation.objects.filter(pk=evaluation.pk).update(
        grading_order=Evaluation.GradingOrder.POSITION)
    evaluation.refresh_from_db()
    assert handed_order(evaluation, personas.grader, django_capture_on_commit_callbacks) == [
        (1, 1), (1, 2), (1, 3), (1, 4), (2, 1), (2, 2), (2, 3), (2, 4)]


def test_the_grading_api_hands_out_the_decisive_order(personas,
                                                      django_capture_on_commit_callbacks):
    evaluation = decisive_evaluation(personas.team)
    client = APIClient()
    client.force_authenticate(personas.grader)
    url = f"/api/v1/evaluations/{evaluation.pk}/next/"
    slot = client.post(url, format="json").json()
    handed = []
    while slot is not None:
        snapshot = Snapshot.objects.get(pk=slot["snapshot"])
        handed.append((snapshot.keyword.position, snapshot.position))
        with django_capture_on_commit_callbacks(execute=True):
            response = client.post(url, {"snapshot": snapshot.pk, "grade": 1},
                                   format="json")
        slot = response.json() if response.status_code == 200 else None
    assert handed == [(2, 1), (2, 2), (2, 3), (1, 1), (1, 2), (1, 3), (1, 4), (2, 4)]


def test_without_the_registered_key_decisive_falls_back_to_position_order(
        personas, django_capture_on_commit_callbacks):
    evaluation = decisive_evaluation(personas.team)
    queries.register_decisive_key(None)
    try:
        assert handed_order(evaluation, personas.grader, django_capture_on_commit_callbacks) == [
            (1, 1), (1, 2), (1, 3), (1, 4), (2, 1), (2, 2), (2, 3), (2, 4)]
    finally:
        queries.register_decisive_key(decisive_key_sql)


def test_when_the_widest_keywords_have_nothing_free_the_claim_takes_position_order(
        personas, monkeypatch):
    evaluation = decisive_evaluation(personas.team)
    monkeypatch.setattr("metrics.queue_order.CANDIDATE_KEYWORDS", 1)
    # The one candidate, B, is all held by the lead (leased as a claim leases).
    held = slot_claim_next(user=personas.lead, team=personas.team,
                           evaluation=evaluation)
    assert (held.keyword.position, held.snapshot.position) == (2, 1)
    FeedbackSlot.objects.filter(evaluation=evaluation, keyword__position=2).update(
        user=personas.lead, lease_expires_at=held.lease_expires_at,
        assigned_at=held.assigned_at)
    slot = slot_claim_next(user=personas.grader, team=personas.team,
                           evaluation=evaluation)
    assert (slot.keyword.position, slot.snapshot.position) == (1, 1)


# --- with a comparison set (the team's baseline): Minimal Test Collections' weights ---

def compared_evaluation(team, *, baseline_scale: str = "binary") -> Evaluation:
    """A decisive evaluation of one keyword, d1..d4 at positions 1..4, precision@4 first;
    the team's baseline (finished) ranks for the same text d1, d3, x, d2."""
    evaluation = evaluation_with_slots(team, texts=["query 1"], positions=4, scale="binary",
                                       doc_ids=["d1", "d2", "d3", "d4"],
                                       grading_order=Evaluation.GradingOrder.DECISIVE)
    EvaluationMetricFactory(evaluation=evaluation, code="precision", k=4, position=0)
    baseline = evaluation_with_slots(team, texts=[" Query 1"], positions=4,
                                     scale=baseline_scale, doc_ids=["d1", "d3", "x", "d2"],
                                     status=Evaluation.Status.FINISHED)
    TeamBaseline.objects.create(team=team, evaluation=baseline)
    store_widths(evaluation)
    return evaluation


def test_with_a_baseline_what_only_one_side_returned_comes_first_by_rank_discount(
        personas, django_capture_on_commit_callbacks):
    evaluation = compared_evaluation(personas.team)
    # |1/ln(r + 1) - 1/ln(r' + 1)|, r' the baseline's rank (none: 0): d4 (only here)
    # 1/ln 5 = 0.621; d2 (4th there) 1/ln 3 - 1/ln 5 = 0.289; d3 (2nd there)
    # |1/ln 4 - 1/ln 3| = 0.189; d1 (1st on both) 0: its grade moves both sides alike.
    assert handed_order(evaluation, personas.grader, django_capture_on_commit_callbacks) == [
        (1, 4), (1, 2), (1, 3), (1, 1)]


def test_a_baseline_on_another_scale_is_no_comparison_set(
        personas, django_capture_on_commit_callbacks):
    evaluation = compared_evaluation(personas.team, baseline_scale="graded")
    assert handed_order(evaluation, personas.grader, django_capture_on_commit_callbacks) == [
        (1, 1), (1, 2), (1, 3), (1, 4)]


def test_an_evaluation_that_is_the_baseline_has_no_comparison_set(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=2, positions=3, scale="binary",
                                       grading_order=Evaluation.GradingOrder.DECISIVE)
    metric = EvaluationMetricFactory(evaluation=evaluation, code="precision", k=3)
    KeywordMetricValue.objects.filter(metric=metric).delete()
    store_widths(evaluation)
    TeamBaseline.objects.create(team=personas.team, evaluation=evaluation)
    # Against itself every weight would be 0 (position order); without a comparison set
    # the keywords' first positions interleave, as with no baseline.
    first = [slot_claim_next(user=user, team=personas.team, evaluation=evaluation)
             for user in (personas.grader, personas.lead, personas.owner)]
    assert [(s.keyword.position, s.snapshot.position) for s in first] == [
        (1, 1), (2, 1), (1, 2)]


# --- the claim's cost (PostgreSQL's plan of the decisive pick) ---

def test_a_skipped_result_comes_after_the_decisive_ones(personas):
    evaluation = decisive_evaluation(personas.team)
    first = slot_claim_next(user=personas.grader, team=personas.team,
                            evaluation=evaluation)
    assert (first.keyword.position, first.snapshot.position) == (2, 1)
    slot_skip(user=personas.grader, slot_id=first.pk)
    again = slot_claim_next(user=personas.grader, team=personas.team,
                            evaluation=evaluation)
    assert (again.keyword.position, again.snapshot.position) == (2, 2)


def _plan_nodes(node: dict) -> list[dict]:
    return [node, *(n for child in node.get("Plans", []) for n in _plan_nodes(child))]


def _claim_plan_nodes(personas, *, decisive: bool) -> list[dict]:
    """Every node of PostgreSQL's plan of a claim in a decisive evaluation, in decisive or
    position order."""
    if connection.vendor != "postgresql":
        skip_or_fail("a PostgreSQL plan: set DATABASE_URL")
    evaluation = decisive_evaluation(personas.team)
    now = timezone.now()
    statement, params = queries.evaluation_claim_sql(
        user_id=personas.grader.pk, now=now, lease_until=now, evaluation_id=evaluation.pk,
        include_skipped=False, decisive=decisive)
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (FORMAT JSON) {statement}", params)
        plan = cursor.fetchone()[0]
    plan = json.loads(plan) if isinstance(plan, str) else plan
    return _plan_nodes(plan[0]["Plan"])


def test_the_decisive_pick_reads_the_config_once_and_probes_held_slots_by_index(personas):
    nodes = _claim_plan_nodes(personas, decisive=True)
    # k and the comparison set once for the whole claim, not once per use in the key.
    assert [n.get("Relation Name") for n in nodes].count("evaluations_evaluationmetric") == 1
    # The decisive pick (the sort by the key) checks "the grader holds no other slot of
    # this result" and "did not skip it" per candidate by index (a subplan): as an anti
    # join, PostgreSQL scanned all the grader's slots for each candidate.
    sort = next(n for n in nodes if n["Node Type"] == "Sort"
                and any("ln(" in key for key in n["Sort Key"]))
    assert not [n for n in _plan_nodes(sort) if n.get("Join Type") == "Anti"]
    probes = {n["Relation Name"]
              for subplan in _plan_nodes(sort) if subplan.get("Parent Relationship") == "SubPlan"
              for n in _plan_nodes(subplan) if n["Node Type"].startswith("Index")}
    assert {"judgments_feedbackslot", "judgments_slotskip"} <= probes, probes


def test_a_position_order_claim_probes_held_and_skipped_slots_by_index(personas):
    # The same checks in every claim (judgments.queries.PROBE): as an anti join they
    # scanned all the grader's slots, each claim slower than the one before.
    nodes = _claim_plan_nodes(personas, decisive=False)
    assert not [n for n in nodes if n.get("Join Type") == "Anti"]
    probes = {n["Relation Name"] for subplan in nodes
              if subplan.get("Parent Relationship") == "SubPlan"
              for n in _plan_nodes(subplan) if n["Node Type"].startswith("Index")}
    assert {"judgments_feedbackslot", "judgments_slotskip"} <= probes, probes


def test_a_claim_of_one_snapshots_slot_reads_that_snapshot_alone_under_stale_statistics(
        personas):
    # Statistics from before a large fetch (here: an empty table) had PostgreSQL AND the
    # partial queue index of every ungraded slot into a judge's pick of one snapshot's
    # slot: each pick read the whole queue (126,060 rows, 3.9 ms, at 100,000 pairs).
    if connection.vendor != "postgresql":
        skip_or_fail("a PostgreSQL plan: set DATABASE_URL")
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {FeedbackSlot._meta.db_table}")
    evaluation = evaluation_with_slots(personas.team, keywords=2, positions=2)
    crowded, claimed = Snapshot.objects.filter(keyword__evaluation=evaluation).order_by("pk")[:2]
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {FeedbackSlot._meta.db_table} (index, unsure, note, reason,"
            " opened_because, evaluation_id, keyword_id, snapshot_id, keyword_position,"
            " position) SELECT i, false, '', '', '', %s, %s, %s, 1, 1"
            " FROM generate_series(10, 30009) i",
            [evaluation.pk, crowded.keyword_id, crowded.pk])
    now = timezone.now()
    statements = [
        queries.snapshots_claim_sql(user_id=personas.grader.pk, now=now, lease_until=now,
                                    snapshot_ids=[claimed.pk, crowded.pk]),
        queries.snapshot_claim_sql(user_id=personas.grader.pk, now=now, lease_until=now,
                                   snapshot_id=claimed.pk)]
    for statement, params in statements:
        with connection.cursor() as cursor:
            cursor.execute(f"EXPLAIN (FORMAT JSON) {statement}", params)
            plan = cursor.fetchone()[0]
        plan = json.loads(plan) if isinstance(plan, str) else plan
        indexes = {n.get("Index Name") for n in _plan_nodes(plan[0]["Plan"])}
        assert "slot_queue_idx" not in indexes, indexes
        assert "slot_index_unique" in indexes, indexes


def _claim_plans_run() -> dict[str, tuple[int, int]]:
    """(generic plans, custom plans) PostgreSQL has run of each claim statement this
    connection prepared, by the statement's text."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements"
                       " WHERE statement LIKE '%%held AS%%'")
        return {text: (generic, custom) for text, generic, custom in cursor.fetchall()}


def test_decisive_claims_run_on_a_generic_plan_and_leave_the_session_as_it_was(personas):
    if connection.vendor != "postgresql":
        skip_or_fail("PostgreSQL's plans: set DATABASE_URL")
    decisive = evaluation_with_slots(personas.team, keywords=3, positions=4,
                                     grading_order=Evaluation.GradingOrder.DECISIVE)
    EvaluationMetricFactory(evaluation=decisive, code="ndcg", k=10, position=0)
    store_widths(decisive)
    positional = evaluation_with_slots(personas.team, keywords=3, positions=4)
    for evaluation in (decisive, positional):
        for _ in range(8):
            slot = slot_claim_next(user=personas.grader, team=personas.team,
                                   evaluation=evaluation)
            FeedbackSlot.objects.filter(pk=slot.pk).update(
                grade=1, graded_at=timezone.now(), graded_by=personas.grader)
    plans = _claim_plans_run()
    # Prepared after two runs (settings: prepare_threshold), then planned once: no custom
    # plan. Position order's statement keeps PostgreSQL's choice (5 custom plans first).
    assert [runs for text, runs in plans.items() if "LN(" in text] == [(6, 0)], plans
    assert [runs for text, runs in plans.items() if "LN(" not in text] == [(1, 5)], plans
    with connection.cursor() as cursor:
        cursor.execute("SHOW plan_cache_mode")
        assert cursor.fetchone()[0] == "auto"
