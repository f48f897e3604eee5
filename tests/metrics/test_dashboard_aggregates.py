"""The dashboard's stored counts (metrics.recompute.aggregates) against a from-scratch
computation over every slot and value: after a full recompute, after incremental runs,
and after recompute_metrics rebuilds counts that drifted."""

import re
from collections import Counter

import numpy as np
import pytest
from django.core.management import call_command
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from evaluations.models import Evaluation, Keyword, Snapshot
from judgments.models import FeedbackSlot
from metrics import queries, selectors
from metrics.models import DashboardCount, KeywordDashboardShare, KeywordMetricValue
from metrics.recompute import aggregates
from metrics.recompute.marks import keywords_version_bump
from metrics.recompute.means import evaluation_means_refresh
from metrics.reports import charts
from metrics.reports.agreement import _evaluation_agreement
from metrics.reports.distribution import metric_distribution, metric_histogram
from metrics.reports.keyword_table import (
    MetricOrder,
    keyword_order,
    keyword_queryset,
    keyword_table,
)
from metrics.selectors import metric_configs
from metrics.services import keyword_metrics_recompute
from metrics.tasks import mark_fetched_dirty
from metrics_engine import statistics
from searchtweak.access import GradeVisibility
from tests.metrics.builders import build_evaluation, set_grades, slot
from tests.metrics.test_dashboard_builders import bulk_evaluation, graders_of
from tests.searchtweak.factories import UserFactory

pytestmark = pytest.mark.django_db


def _scratch_agreement(evaluation):
    """What the page computed before the counts: every snapshot's grades from the slots,
    through the per-snapshot statistics."""
    snapshots: dict[int, list] = {}
    for snapshot_id, grade in FeedbackSlot.objects.filter(evaluation=evaluation).order_by(
            "snapshot_id", "index").values_list("snapshot_id", "grade"):
        snapshots.setdefault(snapshot_id, []).append(grade)
    rows = list(snapshots.values())
    tie = statistics.binary_tie_rate(rows) if evaluation.scale == "binary" else None
    return statistics.coverage(rows), tie, statistics.fleiss_kappa(rows), sum(map(len, rows))


def _assert_page_numbers_are_the_scratch_ones(evaluation):
    assert DashboardCount.objects.filter(evaluation=evaluation, key=aggregates.BUILT).exists()
    agreement = _evaluation_agreement(evaluation)
    coverage, tie, kappa, slot_count = _scratch_agreement(evaluation)
    assert agreement.slot_count == slot_count
    assert agreement.coverage == pytest.approx(coverage, abs=1e-12)
    if tie is None:
        assert agreement.tie_rate is None
    else:
        assert agreement.tie_rate == pytest.approx(tie, abs=1e-12)
    assert agreement.kappa == pytest.approx(kappa, abs=1e-12)
    # The grade patterns equal the GROUP BY over every slot.
    stored = sorted(tuple(row) for row in (
        (*aggregates.parse_pattern(key), count) for key, count in DashboardCount.objects
        .filter(evaluation=evaluation, key__startswith="p:", count__gt=0)
        .values_list("key", "count")))
    assert stored == sorted(queries.snapshot_grade_patterns(evaluation_id=evaluation.pk))
    for config in metric_configs(evaluation.pk):
        values = metric_distribution(config=config)
        counts, _ = charts.histogram_bins(values, bins=10, lo=0.0, hi=1.0)
        assert metric_histogram(config=config) == counts


def _regrade(evaluation, keyword_ids, rng, graders):
    with transaction.atomic():
        for slot in FeedbackSlot.objects.filter(keyword_id__in=keyword_ids):
            grade = None if rng.random() < 0.3 else int(rng.integers(0, 2))
            FeedbackSlot.objects.filter(pk=slot.pk).update(
                grade=grade, user=graders[slot.index] if grade is not None else None)
        keywords_version_bump(keyword_ids=keyword_ids)


@pytest.mark.parametrize("scale", ["binary", "graded"])
def test_counts_equal_a_from_scratch_computation_after_full_and_incremental_runs(
        personas, scale):
    graders = graders_of(personas.team)
    evaluation = bulk_evaluation(team=personas.team, graders=graders, keyword_count=40,
                                 scale=scale, graded_share=0.8)
    _assert_page_numbers_are_the_scratch_ones(evaluation)
    rng = np.random.default_rng(3)
    keyword_ids = list(evaluation.keywords.order_by("pk").values_list("pk", flat=True))
    for batch in (keyword_ids[:3], keyword_ids[10:25], keyword_ids[2:4]):
        _regrade(evaluation, batch, rng, graders)
        assert keyword_metrics_recompute(keyword_id=batch[0]).outcome == "ok"
        _assert_page_numbers_are_the_scratch_ones(evaluation)
    assert KeywordDashboardShare.objects.filter(evaluation=evaluation).count() == 40


def test_recompute_metrics_rebuilds_counts_that_drifted(personas):
    graders = graders_of(personas.team)
    evaluation = bulk_evaluation(team=personas.team, graders=graders, keyword_count=12,
                                 graded_share=0.7)
    DashboardCount.objects.filter(evaluation=evaluation).exclude(
        key=aggregates.BUILT).update(count=999)
    KeywordDashboardShare.objects.filter(evaluation=evaluation).delete()
    call_command("recompute_metrics", evaluation=evaluation.pk, quiet=True)
    _assert_page_numbers_are_the_scratch_ones(evaluation)


def test_an_evaluation_without_built_counts_is_built_by_its_first_run(personas):
    graders = graders_of(personas.team)
    evaluation = bulk_evaluation(team=personas.team, graders=graders, keyword_count=8,
                                 graded_share=0.7)
    DashboardCount.objects.filter(evaluation=evaluation).delete()
    KeywordDashboardShare.objects.filter(evaluation=evaluation).delete()
    # Not built: the page counts from scratch, and shows the same numbers.
    assert metric_histogram(config=metric_configs(evaluation.pk)[0]) is None
    coverage, _, kappa, _ = _scratch_agreement(evaluation)
    agreement = _evaluation_agreement(evaluation)
    assert (agreement.coverage, agreement.kappa) == (pytest.approx(coverage), pytest.approx(kappa))
    first = evaluation.keywords.order_by("pk").first()
    _regrade(evaluation, [first.pk], np.random.default_rng(5), graders)
    keyword_metrics_recompute(keyword_id=first.pk)
    _assert_page_numbers_are_the_scratch_ones(evaluation)


def _stored_bins(personas, values: list[float]) -> list[int]:
    """The bins the database gives `values` stored as one metric's keyword values."""
    graders = graders_of(personas.team)
    evaluation = bulk_evaluation(team=personas.team, graders=graders,
                                 keyword_count=len(values))
    config = metric_configs(evaluation.pk)[0]
    keyword_ids = list(evaluation.keywords.order_by("position").values_list("pk", flat=True))
    for keyword_id, value in zip(keyword_ids, values, strict=True):
        KeywordMetricValue.objects.filter(keyword_id=keyword_id, metric=config).update(
            value=value)
    shares = aggregates.keyword_shares(keyword_ids)
    prefix = f"b:{config.pk}:"
    return [int(next(key for key in shares[pk] if key.startswith(prefix))[len(prefix):])
            for pk in keyword_ids]


# 0.3, 0.6 and 0.7 sit a rounding below numpy's edges (0.30000000000000004, ...):
# multiplying by 10 and flooring would put them one bin up.
EDGE_VALUES = [0.0, 0.1, 0.2, 0.3, 0.7, 0.9999, 1.0, 1 / 3, 0.6, 0.30000000000000004,
               np.nextafter(0.1, 0.0), 0.5]


def test_value_bins_follow_numpy_histogram(personas):
    expected = [int(np.argmax(np.histogram([value], bins=10, range=(0.0, 1.0))[0]))
                for value in EDGE_VALUES]
    assert expected[3] == 2 and expected[9] == 3  # the edge case is there to be met
    assert _stored_bins(personas, EDGE_VALUES) == expected


def test_values_outside_the_unit_range_fall_in_bin_minus_one(personas):
    assert _stored_bins(personas, [1.5, -0.1, 1.0]) == [-1, -1, 9]


def test_values_outside_the_unit_range_keep_the_page_on_the_values(personas):
    graders = graders_of(personas.team)
    evaluation = bulk_evaluation(team=personas.team, graders=graders, keyword_count=6,
                                 scale="graded", metrics=[("dcg", 5, {})])
    config = metric_configs(evaluation.pk)[0]
    assert metric_histogram(config=config) is None  # DCG reaches past 1
    assert evaluation.keywords.count() == 6


def test_the_page_draws_the_stored_histogram_of_hand_counted_values(
        client, personas, django_capture_on_commit_callbacks):
    evaluation = build_evaluation(
        team=personas.team, scale="binary", metrics=[("precision", 2, {})],
        keywords={text: ["d1", "d2"] for text in ("k1", "k2", "k3", "k4", "k5")})
    grader = UserFactory(username="histogram-grader")
    # P@2 (relevant of the top 2 judged): k1 [1, 1] = 1, k2 [1, 0] = 0.5, k3 [0, 0] = 0,
    # k4 [1, 1] = 1, k5 [0, null] = 0/1 = 0. Ten bins of 0.1 over 0..1, the last holding 1:
    # 0 to 0.1 holds 2, 0.5 to 0.6 holds 1, 0.9 to 1 holds 2.
    grades = {"k1": [1, 1], "k2": [1, 0], "k3": [0, 0], "k4": [1, 1], "k5": [0]}
    with django_capture_on_commit_callbacks(execute=True):
        for keyword in Keyword.objects.filter(evaluation=evaluation):
            mark_fetched_dirty(keyword.pk, evaluation.pk, True)
        set_grades([grader], [(slot(evaluation, text, position), grade)
                              for text, row in grades.items()
                              for position, grade in enumerate(row, start=1)])
    client.force_login(personas.lead)
    expected = [
        "0 to 0.1: 2", "0.1 to 0.2: 0", "0.2 to 0.3: 0", "0.3 to 0.4: 0", "0.4 to 0.5: 0",
        "0.5 to 0.6: 1", "0.6 to 0.7: 0", "0.7 to 0.8: 0", "0.8 to 0.9: 0", "0.9 to 1: 2"]
    # Counted as the grades came in, then rebuilt by the full recompute: the same bars.
    for rebuilt in (False, True):
        if rebuilt:
            call_command("recompute_metrics", evaluation=evaluation.pk, quiet=True)
        html = client.get(reverse("metrics:evaluation_dashboard", args=[evaluation.pk])
                          ).content.decode()
        chart = re.search(r'<svg [^>]*class="chart histogram"[^>]*'
                          r'aria-label="P@2 over every keyword".*?</svg>', html, re.S).group(0)
        assert re.findall(r"<title>([^<]*: \d+)</title>", chart) == expected


def _pages(evaluation, configs, **params) -> list[int]:
    ids, page = [], 1
    while True:
        table = keyword_table(evaluation=evaluation, configs=configs, per_page=7,
                              page_number=page, visibility=GradeVisibility(
                                  None, frozenset({evaluation.team_id})), **params)
        ids += [row.row.keyword.pk for row in table.rows]
        if not table.page.has_next():
            return ids
        page += 1


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("show", ["", "worst"])
def test_the_metric_sorted_table_pages_through_the_queryset_order(personas, descending, show):
    graders = graders_of(personas.team)
    evaluation = bulk_evaluation(team=personas.team, graders=graders, keyword_count=30,
                                 graded_share=0.5, seed=4)
    configs = metric_configs(evaluation.pk)
    ap = configs[1]
    # Keywords with no value: a null one, and one never computed (no row at all).
    keywords = list(evaluation.keywords.order_by("position"))
    KeywordMetricValue.objects.filter(metric=ap, keyword=keywords[4]).update(value=None)
    KeywordMetricValue.objects.filter(metric=ap, keyword=keywords[9]).delete()
    # Values changed behind the running sums' back: rebuilt from what is stored.
    evaluation_means_refresh(evaluation_id=evaluation.pk, rebuild=True)
    configs = metric_configs(evaluation.pk)  # the stored count, as the page reads
    assert configs[1].keyword_count == KeywordMetricValue.objects.filter(
        metric=ap, value__isnull=False).count()
    params = {"sort": f"m{ap.pk}", "descending": descending, "show": show}
    assert isinstance(keyword_order(evaluation=evaluation, configs=configs,
                                    **params), MetricOrder)
    # The queryset's order (ties by position, which is keyword order here), page by page.
    expected = list(keyword_queryset(evaluation=evaluation, configs=configs,
                                     **params).values_list("pk", flat=True))
    assert _pages(evaluation, configs, **params) == expected
    assert len(expected) == (28 if show == "worst" else 30)


def _slot_progress(evaluation) -> float:
    """Graded slots over all of them, counted from the slots (what progress always meant)."""
    total = FeedbackSlot.objects.filter(evaluation=evaluation).count()
    graded = FeedbackSlot.objects.filter(evaluation=evaluation, grade__isnull=False).count()
    return graded * 100.0 / total if total else 0.0


def _refresh_statements(evaluation) -> list[str]:
    with CaptureQueriesContext(connection) as captured:
        evaluation_means_refresh(evaluation_id=evaluation.pk)
    return [query["sql"] for query in captured.captured_queries]


def _stored_progress(evaluation) -> float:
    return Evaluation.objects.with_recompute_state().values_list(
        "progress", flat=True).get(pk=evaluation.pk)


def test_progress_is_read_from_the_counts_without_counting_the_slots(personas):
    graders = graders_of(personas.team)
    evaluation = bulk_evaluation(team=personas.team, graders=graders, keyword_count=20,
                                 graded_share=0.6)
    rng = np.random.default_rng(11)
    keyword_ids = list(evaluation.keywords.order_by("pk").values_list("pk", flat=True))
    for batch in (keyword_ids[:4], keyword_ids[5:9]):
        _regrade(evaluation, batch, rng, graders)
        assert keyword_metrics_recompute(keyword_id=batch[0]).outcome == "ok"
        # Bit for bit what counting the slots gives.
        assert _stored_progress(evaluation) == _slot_progress(evaluation)
    slots_table = FeedbackSlot._meta.db_table
    statements = _refresh_statements(evaluation)
    assert not [s for s in statements if slots_table in s], statements
    assert _stored_progress(evaluation) == _slot_progress(evaluation) < 100.0


def test_a_share_that_would_finish_is_counted_from_the_slots(personas):
    """The counts lag what a recompute has not seen yet (slots of a fetch whose keywords are
    not recomputed): counts that say every slot is graded are checked against the slots
    before the evaluation can finish."""
    graders = graders_of(personas.team)
    evaluation = bulk_evaluation(team=personas.team, graders=graders, keyword_count=6,
                                 graded_share=1.0, status=Evaluation.Status.ACTIVE)
    Evaluation.objects.filter(pk=evaluation.pk).update(auto_finish=True)
    assert aggregates.evaluation_slot_counts(evaluation_id=evaluation.pk) == (90, 90)
    snapshot = Snapshot.objects.filter(keyword__evaluation=evaluation).first()
    # A slot no recompute has seen: the counts still say 90 of 90.
    FeedbackSlot.objects.create(snapshot=snapshot, keyword_id=snapshot.keyword_id,
                                evaluation=evaluation, index=3, keyword_position=0,
                                position=snapshot.position)
    statements = _refresh_statements(evaluation)
    assert [s for s in statements if FeedbackSlot._meta.db_table in s]
    assert _stored_progress(evaluation) == 90 * 100.0 / 91
    evaluation.refresh_from_db()
    assert evaluation.status == Evaluation.Status.ACTIVE


def test_a_finished_share_the_slots_confirm_is_stored_without_counting_them(personas):
    """Every slot graded and the counts agree: one probe of the slots' index confirms it
    (no count over every slot, which regrading a complete evaluation would pay each run);
    slots deleted behind the counts' back are counted, none left giving 0."""
    graders = graders_of(personas.team)
    evaluation = bulk_evaluation(team=personas.team, graders=graders, keyword_count=6,
                                 graded_share=1.0, status=Evaluation.Status.ACTIVE)
    assert aggregates.evaluation_slot_counts(evaluation_id=evaluation.pk) == (90, 90)
    statements = [s for s in _refresh_statements(evaluation) if FeedbackSlot._meta.db_table in s]
    assert len(statements) == 1 and "COUNT(" not in statements[0].upper(), statements
    assert _stored_progress(evaluation) == _slot_progress(evaluation) == 100.0
    FeedbackSlot.objects.filter(evaluation=evaluation).delete()
    statements = [s for s in _refresh_statements(evaluation) if FeedbackSlot._meta.db_table in s]
    assert any("COUNT(" in s.upper() for s in statements), statements
    assert _stored_progress(evaluation) == _slot_progress(evaluation) == 0.0


def test_deleting_keywords_drops_the_counts_and_the_next_run_builds_them(personas):
    graders = graders_of(personas.team)
    evaluation = bulk_evaluation(team=personas.team, graders=graders, keyword_count=12,
                                 graded_share=0.7)
    _assert_page_numbers_are_the_scratch_ones(evaluation)
    keyword_ids = list(evaluation.keywords.order_by("pk").values_list("pk", flat=True))
    evaluation.keywords.filter(pk__in=keyword_ids[:3]).delete()
    assert not DashboardCount.objects.filter(evaluation=evaluation).exists()
    assert not KeywordDashboardShare.objects.filter(evaluation=evaluation).exists()
    # Not built: the page counts what remains, and so does the progress.
    coverage, _, kappa, slot_count = _scratch_agreement(evaluation)
    agreement = _evaluation_agreement(evaluation)
    assert (agreement.slot_count, agreement.coverage, agreement.kappa) == (
        slot_count, pytest.approx(coverage), pytest.approx(kappa))
    evaluation_means_refresh(evaluation_id=evaluation.pk)
    assert _stored_progress(evaluation) == _slot_progress(evaluation)
    _regrade(evaluation, keyword_ids[5:6], np.random.default_rng(2), graders)
    keyword_metrics_recompute(keyword_id=keyword_ids[5])
    _assert_page_numbers_are_the_scratch_ones(evaluation)
    assert _stored_progress(evaluation) == _slot_progress(evaluation)


def test_an_evaluation_without_metrics_keeps_its_counts_and_reads_its_progress_there(
        personas, django_capture_on_commit_callbacks):
    """Its runs write no value but keep the grade patterns, so a grade's refresh reads the
    progress from the counts, not from every slot; a fetch's new slots reach the counts
    through the run its marks queue."""
    graders = graders_of(personas.team)
    evaluation = bulk_evaluation(team=personas.team, graders=graders, keyword_count=5,
                                 graded_share=0.5)
    evaluation.metric_configs.all().delete()
    call_command("recompute_metrics", evaluation=evaluation.pk, quiet=True)
    assert not DashboardCount.objects.filter(evaluation=evaluation, key__startswith="b:")
    _assert_page_numbers_are_the_scratch_ones(evaluation)
    assert _stored_progress(evaluation) == _slot_progress(evaluation) < 100.0
    keyword_ids = list(evaluation.keywords.order_by("pk").values_list("pk", flat=True))
    _regrade(evaluation, keyword_ids[1:3], np.random.default_rng(4), graders)
    assert keyword_metrics_recompute(keyword_id=keyword_ids[1]).outcome == "ok"
    _assert_page_numbers_are_the_scratch_ones(evaluation)
    assert _stored_progress(evaluation) == _slot_progress(evaluation)
    statements = _refresh_statements(evaluation)
    assert not [s for s in statements if FeedbackSlot._meta.db_table in s], statements
    # A keyword fetched now: its slots are counted once its marking's run has read them.
    fetched = Keyword.objects.create(evaluation=evaluation, position=6, text="late",
                                     normalized_text="late",
                                     fetch_status=Keyword.FetchStatus.FETCHED)
    snapshot = Snapshot.objects.create(keyword=fetched, position=1, doc_id="d", name="d")
    FeedbackSlot.objects.bulk_create(
        FeedbackSlot(snapshot=snapshot, keyword=fetched, evaluation=evaluation, index=index,
                     keyword_position=6, position=1) for index in range(3))
    with django_capture_on_commit_callbacks(execute=True):
        assert mark_fetched_dirty(fetched.pk, evaluation.pk, True) is True
    _assert_page_numbers_are_the_scratch_ones(evaluation)
    assert _stored_progress(evaluation) == _slot_progress(evaluation)


def test_a_run_that_cannot_compute_still_counts_its_keywords_slots(personas):
    """Its values stay as they were, but the grades it read are in the counts (and the
    bins of the values still stored)."""
    graders = graders_of(personas.team)
    evaluation = bulk_evaluation(team=personas.team, graders=graders, keyword_count=6,
                                 scale="graded", graded_share=0.6)
    Evaluation.objects.filter(pk=evaluation.pk).update(
        transformers={"graded->binary": {"0": 0, "1": 1}})
    keyword_id = evaluation.keywords.order_by("pk").values_list("pk", flat=True)[2]
    with transaction.atomic():
        FeedbackSlot.objects.filter(keyword_id=keyword_id, index=0).update(
            grade=3, user=graders[0])
        keywords_version_bump(keyword_ids=[keyword_id])
    assert keyword_metrics_recompute(keyword_id=keyword_id).outcome == "error"
    _assert_page_numbers_are_the_scratch_ones(evaluation)


def _shares_from_the_database(keyword_ids):
    return {pk: dict(share) for pk, share in aggregates.keyword_shares(keyword_ids).items()}


def test_shares_counted_from_the_run_equal_the_databases(personas):
    """recompute_metrics counts the shares from the slots and values it holds
    (aggregates.shares_count); they are the SQL's (queries._share_parts) key for key:
    results past every metric's k, snapshots with some or no grade, a keyword without
    slots, and values on the bins' edges, at 1.0, outside [0, 1] and missing."""
    graders = graders_of(personas.team)
    evaluation = bulk_evaluation(team=personas.team, graders=graders, keyword_count=14,
                                 scale="graded", positions=5, graded_share=0.6,
                                 metrics=[("precision", 3, {}), ("ndcg", 2, {})])
    keyword_ids = list(evaluation.keywords.order_by("position").values_list("pk", flat=True))
    # A result with one slot of three and a keyword whose results are gone.
    FeedbackSlot.objects.filter(keyword_id=keyword_ids[0], position=2, index__gt=0).delete()
    Snapshot.objects.filter(keyword_id=keyword_ids[1]).delete()
    FeedbackSlot.objects.filter(keyword_id=keyword_ids[2]).update(grade=None, user=None)
    configs = metric_configs(evaluation.pk)
    edge_values = [*EDGE_VALUES, 1.5, -0.1]
    for keyword_id, value in zip(keyword_ids, edge_values, strict=True):
        KeywordMetricValue.objects.filter(keyword_id=keyword_id, metric=configs[0]).update(
            value=value)
    KeywordMetricValue.objects.filter(keyword_id=keyword_ids[3], metric=configs[1]).update(
        value=None)
    stored = {(keyword_id, metric_id): value for keyword_id, metric_id, value in
              KeywordMetricValue.objects.filter(keyword_id__in=keyword_ids).values_list(
                  "keyword_id", "metric_id", "value")}
    metric_values = [(config.pk, np.array(
        [np.nan if stored.get((pk, config.pk)) is None else stored[(pk, config.pk)]
         for pk in keyword_ids])) for config in configs]

    counted = aggregates.shares_count(
        slot_table=selectors.evaluation_slot_table(evaluation_id=evaluation.pk),
        keyword_ids=keyword_ids, metric_values=metric_values, versions={})

    expected = _shares_from_the_database(keyword_ids)
    assert counted.shares == expected
    totals = Counter()
    for share in expected.values():
        totals.update(share)
    assert counted.totals == dict(totals)
    assert sum(n for key, n in expected[keyword_ids[0]].items() if key.startswith("p:1:")) == 1
    assert not any(key.startswith("p:") for key in expected[keyword_ids[1]])
    assert expected[keyword_ids[2]]["p:3:0:::"] == 5
    assert f"b:{configs[1].pk}:" not in "".join(expected[keyword_ids[3]])


def test_recompute_metrics_counts_a_keyword_graded_meanwhile_from_the_database(personas):
    """What the run counted stands only for keywords whose version has not moved since it
    read them; a keyword graded meanwhile gets the database's share, one deleted meanwhile
    none, and the counts are the sum of what is stored."""
    graders = graders_of(personas.team)
    evaluation = bulk_evaluation(team=personas.team, graders=graders, keyword_count=6,
                                 graded_share=0.7)
    versions = dict(selectors.evaluation_keyword_versions(evaluation_id=evaluation.pk))
    keyword_ids = sorted(versions)
    truth = _shares_from_the_database(keyword_ids)
    # Counted as the run read them: one stale share for a keyword that then moved, and
    # one odd share for a keyword that did not (so it shows whose share is stored).
    counted = dict(truth)
    counted[keyword_ids[0]] = {"p:3:3:1:1:3": 99}
    counted[keyword_ids[1]] = {"p:3:3:0:0:0": 7}
    _regrade(evaluation, keyword_ids[:1], np.random.default_rng(8), graders)
    evaluation.keywords.filter(pk=keyword_ids[-1]).delete()  # deleted meanwhile: no share

    counted_totals = Counter()
    for share in counted.values():
        counted_totals.update(share)
    aggregates.dashboard_aggregates_rebuild(evaluation_id=evaluation.pk, counted=(
        aggregates.CountedShares(versions, counted, dict(counted_totals))))

    stored = dict(KeywordDashboardShare.objects.filter(evaluation=evaluation)
                  .values_list("keyword_id", "counts"))
    assert stored[keyword_ids[0]] == _shares_from_the_database(keyword_ids[:1])[keyword_ids[0]]
    assert stored[keyword_ids[0]] != truth[keyword_ids[0]]  # the regrade changed it
    assert stored[keyword_ids[1]] == {"p:3:3:0:0:0": 7}
    assert {pk: stored[pk] for pk in keyword_ids[2:-1]} == {
        pk: truth[pk] for pk in keyword_ids[2:-1]}
    assert keyword_ids[-1] not in stored
    totals = Counter()
    for share in stored.values():
        totals.update(share)
    assert dict(DashboardCount.objects.filter(evaluation=evaluation).exclude(
        key=aggregates.BUILT).values_list("key", "count")) == dict(totals)


def test_recompute_metrics_counts_results_past_every_metrics_k(personas):
    graders = graders_of(personas.team)
    evaluation = bulk_evaluation(team=personas.team, graders=graders, keyword_count=9,
                                 scale="graded", positions=6, graded_share=0.6,
                                 metrics=[("precision", 2, {}), ("ndcg", 3, {})])
    DashboardCount.objects.filter(evaluation=evaluation).delete()
    KeywordDashboardShare.objects.filter(evaluation=evaluation).delete()
    call_command("recompute_metrics", evaluation=evaluation.pk, quiet=True)
    _assert_page_numbers_are_the_scratch_ones(evaluation)
    assert sum(count * aggregates.parse_pattern(key)[0] for key, count in
               DashboardCount.objects.filter(evaluation=evaluation, key__startswith="p:")
               .values_list("key", "count")) == 9 * 6 * 3


def test_recompute_metrics_of_keywords_with_nothing_to_count_stores_no_share(personas):
    """Keywords not fetched yet: no slot, no value, so no share and no count but "built"."""
    graders = graders_of(personas.team)
    evaluation = bulk_evaluation(team=personas.team, graders=graders, keyword_count=3,
                                 positions=0)
    evaluation.keywords.update(fetch_status=Keyword.FetchStatus.PENDING)
    call_command("recompute_metrics", evaluation=evaluation.pk, quiet=True)
    assert not KeywordDashboardShare.objects.filter(evaluation=evaluation).exists()
    assert list(DashboardCount.objects.filter(evaluation=evaluation).values_list(
        "key", "count")) == [(aggregates.BUILT, 1)]
