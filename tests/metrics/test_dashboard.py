"""The evaluation dashboard: its selectors (values, query counts), its page and access."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from evaluations.models import Evaluation, Keyword
from judgments.models import FeedbackSlot
from metrics import services
from metrics.models import KeywordMetricValue, MetricHistoryPoint, TeamBaseline
from metrics.reports.agreement import evaluation_agreement, kappa_reading
from metrics.reports.cards import Reference, evaluation_reference, metric_cards
from metrics.reports.distribution import metric_distribution
from metrics.reports.keyword_table import KeywordTable, keyword_table
from metrics.selectors import metric_configs
from metrics_engine import statistics
from searchtweak.access import GradeVisibility
from tests.metrics.builders import build_evaluation
from tests.metrics.test_dashboard_builders import bulk_evaluation, graders_of

pytestmark = pytest.mark.django_db


def _grade(evaluation, grades_by_keyword: dict[str, list[list[int | None]]], graders) -> None:
    """Write grades straight into the slots: grades_by_keyword[text][position-1][index]."""
    for text, positions in grades_by_keyword.items():
        for position, grades in enumerate(positions, start=1):
            for index, grade in enumerate(grades):
                FeedbackSlot.objects.filter(
                    evaluation=evaluation, keyword__normalized_text=text,
                    snapshot__position=position, index=index,
                ).update(grade=grade, user=graders[index] if grade is not None else None)


# --- agreement ------------------------------------------------------------------------------


def test_agreement_of_a_small_binary_case_matches_the_hand_computed_values(personas):
    graders = graders_of(personas.team)
    evaluation = build_evaluation(team=personas.team, scale="binary", strategy=3,
                                  keywords={"a": ["d1", "d2"], "b": ["d3", "d4"]},
                                  metrics=[("precision", 2, {})])
    _grade(evaluation, {"a": [[1, 1, 1], [1, 0, None]], "b": [[0, 0, 1], [1, None, None]]},
           graders)
    agreement = evaluation_agreement(evaluation=evaluation)
    # 9 of 12 slots graded; one tie ([1, 0, -]) among 4 graded snapshots; κ over the two
    # complete snapshots: P̄ = (1 + 1/3)/2, P̄e = (1/3)² + (2/3)², κ = (2/3 - 5/9)/(4/9).
    assert (agreement.slot_count, agreement.graded_count) == (12, 9)
    assert agreement.coverage == pytest.approx(0.75)
    assert agreement.tie_rate == pytest.approx(0.25)
    assert agreement.kappa == pytest.approx(0.25)
    assert "fair" in agreement.kappa_reading
    assert any("75%" in advice for advice in agreement.advice)  # low coverage
    assert any("25% of the graded results are ties" in advice for advice in agreement.advice)


def test_grade_patterns_counted_in_sql_equal_the_raw_slots(personas):
    graders = graders_of(personas.team)
    evaluation = bulk_evaluation(team=personas.team, graders=graders, keyword_count=30,
                                 scale="graded", graded_share=0.7, recompute=False)
    raw: dict[int, list] = {}
    for snapshot_id, grade in FeedbackSlot.objects.filter(evaluation=evaluation).order_by(
            "snapshot_id", "index").values_list("snapshot_id", "grade"):
        raw.setdefault(snapshot_id, []).append(grade)
    snapshots = list(raw.values())
    agreement = evaluation_agreement(evaluation=evaluation)
    assert agreement.coverage == pytest.approx(statistics.coverage(snapshots))
    assert agreement.kappa == pytest.approx(statistics.fleiss_kappa(snapshots))
    assert agreement.tie_rate is None  # not a binary evaluation


@pytest.mark.parametrize(("kappa", "band"), [
    (-0.1, "poor"), (0.0, "slight"), (0.2, "slight"), (0.35, "fair"), (0.5, "moderate"),
    (0.7, "substantial"), (0.95, "almost perfect"),
])
def test_kappa_reading_uses_the_landis_and_koch_bands(kappa, band):
    assert band in kappa_reading(kappa)


# --- cards and reference --------------------------------------------------------------------


def test_cards_compare_with_the_previous_finished_evaluation_of_the_model_or_the_baseline(
        personas):
    graders = graders_of(personas.team)
    first = bulk_evaluation(team=personas.team, graders=graders, keyword_count=5, seed=1,
                            name="first")
    second = bulk_evaluation(team=personas.team, graders=graders, keyword_count=5, seed=2,
                             model=first.model, name="second")
    current = bulk_evaluation(team=personas.team, graders=graders, keyword_count=5, seed=3,
                              model=first.model, status=Evaluation.Status.ACTIVE)
    reference = evaluation_reference(evaluation=current)
    assert (reference.kind, reference.evaluation) == ("previous", second)
    cards = metric_cards(evaluation=current, reference=reference)
    second_values = {c.code: c.value for c in second.metric_configs.with_stored_mean()}
    for card in cards:
        assert card.reference_value == second_values[card.config.code]
        assert card.delta == pytest.approx(card.value - second_values[card.config.code])
        assert card.history == list(MetricHistoryPoint.objects.filter(
            metric=card.config).order_by("recorded_at").values_list("value", flat=True))

    services.team_baseline_set(team=personas.team, evaluation=first, user=personas.lead)
    reference = evaluation_reference(evaluation=current)
    assert (reference.kind, reference.evaluation) == ("baseline", first)
    # The baseline itself compares with what came before it, and "previous" overrides.
    assert evaluation_reference(evaluation=first).kind == ""
    assert evaluation_reference(evaluation=current, against="previous"
                                ).evaluation == second


def test_only_a_finished_evaluation_of_the_team_can_be_the_baseline(personas):
    graders = graders_of(personas.team)
    active = bulk_evaluation(team=personas.team, graders=graders, keyword_count=2,
                             status=Evaluation.Status.ACTIVE)
    with pytest.raises(Exception, match="finished"):
        services.team_baseline_set(team=personas.team, evaluation=active, user=personas.lead)
    assert not TeamBaseline.objects.exists()


# --- the keyword table ----------------------------------------------------------------------


def _table(evaluation: Evaluation, configs: list, **params) -> KeywordTable:
    """The table as a lead of the evaluation's team sees it (every slot)."""
    return keyword_table(
        evaluation=evaluation, configs=configs,
        visibility=GradeVisibility(None, frozenset({evaluation.team_id})), **params)


def test_keyword_table_sorts_by_a_metric_and_filters(personas):
    graders = graders_of(personas.team)
    evaluation = bulk_evaluation(team=personas.team, graders=graders, keyword_count=20,
                                 graded_share=0.8)
    configs = metric_configs(evaluation.pk)
    ap = configs[1]
    Keyword.objects.filter(evaluation=evaluation, position=3).update(
        fetch_status=Keyword.FetchStatus.FAILED)
    table = _table(evaluation, configs, sort=f"m{ap.pk}", descending=True, per_page=100)
    values = [row.row.values[1] for row in table.rows]
    present = [v for v in values if v is not None]
    assert present == sorted(present, reverse=True)
    assert values[:len(present)] == present  # nulls last

    worst = _table(evaluation, configs, show="worst",
                                     sort=f"m{ap.pk}", descending=True, per_page=5)
    stored = sorted(KeywordMetricValue.objects.filter(metric=ap, value__isnull=False)
                    .values_list("value", flat=True))
    assert [row.row.values[1] for row in worst.rows] == stored[:5]

    failed = _table(evaluation, configs, show="failed")
    assert [row.row.keyword.position for row in failed.rows] == [3]

    ungraded = _table(evaluation, configs, show="ungraded", per_page=100)
    expected = set(FeedbackSlot.objects.filter(evaluation=evaluation, grade__isnull=True)
                   .values_list("keyword_id", flat=True))
    assert {row.row.keyword.pk for row in ungraded.rows} == expected

    found = _table(evaluation, configs, search=" QUERY 1")
    assert {row.row.keyword.text for row in found.rows} == {
        "query 1", *(f"query {i}" for i in range(10, 20))}
    first = found.rows[0]
    assert [d.snapshot.position for d in first.snapshots] == [1, 2, 3, 4, 5]
    assert all(len(d.slots) == 3 for d in first.snapshots)


def _queries(function) -> int:
    with CaptureQueriesContext(connection) as context:
        function()
    return len(context.captured_queries)


@pytest.mark.parametrize("keyword_count", [10, 1000])
@pytest.mark.slow_reason("builds and recomputes 1,000 keywords x 5 results x 3 graders in bulk")
def test_dashboard_selectors_run_the_same_queries_at_any_size(
        personas, keyword_count, django_assert_num_queries):
    graders = graders_of(personas.team)
    evaluation = bulk_evaluation(team=personas.team, graders=graders,
                                 keyword_count=keyword_count, graded_share=0.9)
    configs = metric_configs(evaluation.pk)
    reference = Reference(None, "")
    with django_assert_num_queries(1):
        metric_cards(evaluation=evaluation, reference=reference, configs=configs)
    with django_assert_num_queries(1):
        evaluation_agreement(evaluation=evaluation)
    with django_assert_num_queries(1):
        metric_distribution(config=configs[0])
    # count, page, values, snapshot counts, configs, snapshots, slots
    with django_assert_num_queries(7):
        _table(evaluation, configs, sort=f"m{configs[0].pk}", show="ungraded")
    with django_assert_num_queries(2):
        evaluation_reference(evaluation=evaluation)


@pytest.mark.parametrize("keyword_count", [10, 1000])
@pytest.mark.slow_reason("builds and recomputes 1,000 keywords x 5 results x 3 graders in bulk")
def test_the_dashboard_page_runs_the_same_queries_at_any_size(
        client, personas, keyword_count, django_assert_num_queries):
    graders = graders_of(personas.team)
    evaluation = bulk_evaluation(team=personas.team, graders=graders,
                                 keyword_count=keyword_count)
    client.force_login(personas.lead)
    url = reverse("metrics:evaluation_dashboard", args=[evaluation.pk])
    # One of them reads whose grades the viewer may see (searchtweak.access.grade_visibility),
    # two the standing regression verdict and the ad-hoc ones (metrics.reports.verdicts),
    # one the segment means (the segment table and the selector's tags), one the team's
    # behaviour sources (none here; with one, its figures take one more, two for a
    # window: behaviour.summary).
    with django_assert_num_queries(19):
        response = client.get(url, {"sort": "text", "show": "ungraded"})
    assert response.status_code == 200


def test_the_cached_agreement_follows_a_new_grade(personas, django_capture_on_commit_callbacks):
    from tests.metrics.builders import set_grades, slot

    graders = graders_of(personas.team)
    evaluation = build_evaluation(team=personas.team, scale="binary", strategy=3,
                                  keywords={"a": ["d1"]}, metrics=[("precision", 1, {})])
    with django_capture_on_commit_callbacks(execute=True):
        set_grades(graders, [(slot(evaluation, "a", 1, 0), 1), (slot(evaluation, "a", 1, 1), 0)])
    evaluation.refresh_from_db()
    configs = metric_configs(evaluation.pk)
    assert evaluation_agreement(evaluation=evaluation, configs=configs
                                ).tie_rate == 1.0
    with django_capture_on_commit_callbacks(execute=True):
        set_grades(graders, [(slot(evaluation, "a", 1, 2), 1)])
    evaluation.refresh_from_db()
    configs = metric_configs(evaluation.pk)
    agreement = evaluation_agreement(evaluation=evaluation, configs=configs)
    assert (agreement.tie_rate, agreement.coverage) == (0.0, 1.0)
