"""The recompute pipeline: stored values always equal metrics_engine on the stored grades."""

import math

import pytest
from django.core.management import call_command
from django.test import override_settings
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evaluations.models import Evaluation, EvaluationMetric, Keyword
from judgments.models import FeedbackSlot
from metrics import services
from metrics.models import KeywordMetricValue, KeywordRecomputeMark, MetricHistoryPoint, MetricMean
from metrics.recompute import run as recompute_run
from metrics.recompute import scheduling
from tests.metrics.builders import build_evaluation, set_grades, slot
from tests.property_depth import examples
from tests.recompute_state import dirty_marks, mark_of, marks_set, state_of
from tests.searchtweak.factories import UserFactory

pytestmark = pytest.mark.django_db

METRICS = [("precision", 3, {}), ("ndcg", 3, {}), ("ap", 3, {}), ("cg", 3, {})]


@pytest.fixture
def graders(db):
    return [UserFactory(username=f"g{i}") for i in range(3)]


@pytest.fixture
def grade(graders, django_capture_on_commit_callbacks):
    """Grade as a committed request would: the after-commit recompute runs (eagerly)."""

    def grade(changes):
        with django_capture_on_commit_callbacks(execute=True):
            set_grades(graders, changes)

    return grade


def stored(evaluation) -> dict[tuple[str, str], float | None]:
    rows = KeywordMetricValue.objects.filter(keyword__evaluation=evaluation).select_related(
        "keyword", "metric"
    )
    values = {(row.keyword.text, row.metric.code): row.value for row in rows}
    # Two metrics with one code would overwrite each other in an order the database
    # chooses; such tests key by metric id (stored_by_config) instead.
    assert len(values) == len(rows), "metric codes repeat: use stored_by_config"
    return values


def stored_by_config(evaluation) -> dict[tuple[str, int], float | None]:
    return dict(
        ((text, metric_id), value) for text, metric_id, value in
        KeywordMetricValue.objects.filter(keyword__evaluation=evaluation)
        .values_list("keyword__text", "metric_id", "value")
    )


def means(evaluation) -> dict[str, tuple[float | None, int]]:
    configs = EvaluationMetric.objects.with_stored_mean().filter(evaluation=evaluation)
    values = {config.code: (config.value, config.keyword_count) for config in configs}
    assert len(values) == len(configs), "metric codes repeat: use means_by_config"
    return values


def means_by_config(evaluation) -> dict[int, tuple[float | None, int]]:
    return {
        config.pk: (config.value, config.keyword_count)
        for config in EvaluationMetric.objects.with_stored_mean().filter(evaluation=evaluation)
    }


def test_a_grade_updates_keyword_values_and_the_mean(grade):
    evaluation = build_evaluation(
        keywords={"shoes": ["a", "b", "c"], "hats": ["d", "e"]}, metrics=METRICS
    )
    grade([(slot(evaluation, "shoes", 1), 3), (slot(evaluation, "shoes", 2), 0),
                         (slot(evaluation, "shoes", 3), 2)])
    values = stored(evaluation)
    # graded -> binary default: 0->0, 1..3->1; P@3 = 2/3; AP = (1/1 + 2/3) / 2.
    assert values[("shoes", "precision")] == pytest.approx(2 / 3, abs=1e-12)
    assert values[("shoes", "ap")] == pytest.approx((1 + 2 / 3) / 2, abs=1e-12)
    assert values[("shoes", "cg")] == 5.0
    dcg = 3 + 0 / math.log2(3) + 2 / math.log2(4)
    ideal = 3 + 2 / math.log2(3)
    assert values[("shoes", "ndcg")] == pytest.approx(dcg / ideal, abs=1e-12)
    assert ("hats", "cg") not in values  # not graded yet: never computed
    assert means(evaluation)["cg"] == (5.0, 1)
    keyword = Keyword.objects.get(evaluation=evaluation, text="shoes")
    assert mark_of(keyword).dirty_since is None
    assert mark_of(keyword).computed_version == mark_of(keyword).version == 1
    evaluation.refresh_from_db()
    assert state_of(evaluation).progress == pytest.approx(100 * 3 / 5)


def test_means_skip_null_keywords_and_count_the_rest(grade):
    evaluation = build_evaluation(
        keywords={"one": ["a", "b"], "two": ["c"], "three": ["d"]},
        metrics=[("precision", 2, {}), ("rr", 2, {})],
    )
    grade([(slot(evaluation, "one", 1), 0), (slot(evaluation, "one", 2), 2),
                         (slot(evaluation, "two", 1), 3), (slot(evaluation, "three", 1), 1)])
    # "three" is graded, then cleared: its stored values are null, and a mean that counted
    # them as 0 would be (0.5 + 1.0 + 0) / 3.
    grade([(slot(evaluation, "three", 1), None)])
    assert stored(evaluation)[("three", "precision")] is None
    assert stored(evaluation)[("three", "rr")] is None
    assert means(evaluation)["precision"] == (pytest.approx((0.5 + 1.0) / 2), 2)
    # RR of an all-null keyword is null too (docs/METRICS.md: all null gives null).
    assert means(evaluation)["rr"] == (pytest.approx((0.5 + 1.0) / 2), 2)


def test_clearing_a_grade_recomputes_to_null(grade):
    evaluation = build_evaluation(keywords={"x": ["a"]}, metrics=[("cg", 5, {})])
    grade([(slot(evaluation, "x", 1), 2)])
    assert means(evaluation)["cg"] == (2.0, 1)
    grade([(slot(evaluation, "x", 1), None)])
    assert stored(evaluation)[("x", "cg")] is None
    assert means(evaluation)["cg"] == (None, 0)


def test_three_slots_aggregate_before_the_metric(grade):
    evaluation = build_evaluation(
        scale="binary", strategy=3, keywords={"q": ["a", "b"]}, metrics=[("precision", 2, {})]
    )
    grade([
        (slot(evaluation, "q", 1, 0), 1), (slot(evaluation, "q", 1, 1), 1),
        (slot(evaluation, "q", 1, 2), 0),  # majority 1
        (slot(evaluation, "q", 2, 0), 1), (slot(evaluation, "q", 2, 1), 0),  # tie: null
    ])
    assert stored(evaluation)[("q", "precision")] == 1.0


def test_a_run_that_read_old_grades_cannot_overwrite_newer_values(grade, monkeypatch):
    """The original SearchTweak's race: a grade lands while a recompute of the same keyword
    runs. Here the second grade commits, and its own recompute finishes, between the first
    run's read of the grades and its write; the first run's stale values must not land."""
    evaluation = build_evaluation(keywords={"race": ["a", "b"]}, metrics=[("cg", 2, {})])
    real_read = recompute_run.evaluation_grade_array

    def read_then_let_another_grade_land(**kwargs):
        grades = real_read(**kwargs)
        monkeypatch.setattr(recompute_run, "evaluation_grade_array", real_read)
        grade([(slot(evaluation, "race", 2), 3)])
        assert stored(evaluation)[("race", "cg")] == 4.0  # the second run already wrote
        return grades

    monkeypatch.setattr(recompute_run, "evaluation_grade_array", read_then_let_another_grade_land)
    grade([(slot(evaluation, "race", 1), 1)])
    assert stored(evaluation)[("race", "cg")] == 4.0
    assert means(evaluation)["cg"] == (4.0, 1)
    keyword = Keyword.objects.get(evaluation=evaluation)
    mark = mark_of(keyword)
    assert (mark.version, mark.computed_version, mark.dirty_since) == (2, 2, None)


def test_recompute_is_idempotent_and_coalesces(grade):
    evaluation = build_evaluation(keywords={"k": ["a", "b"]}, metrics=METRICS)
    grade([(slot(evaluation, "k", 1), 2)])
    keyword = Keyword.objects.get(evaluation=evaluation)
    before = stored(evaluation)
    assert services.keyword_metrics_recompute(keyword_id=keyword.pk).outcome == "fresh"
    KeywordRecomputeMark.objects.filter(keyword=keyword).update(dirty_since="2026-01-01T00:00:00Z")
    assert services.keyword_metrics_recompute(keyword_id=keyword.pk).outcome == "ok"
    assert stored(evaluation) == before
    assert services.keyword_metrics_recompute(keyword_id=999_999).outcome == "missing"


def test_recompute_metrics_command_equals_the_incremental_values(grade, capsys):
    evaluation = build_evaluation(
        strategy=3, keywords={f"kw {i}": [f"d{i}{j}" for j in range(4)] for i in range(6)},
        metrics=[*METRICS, ("err", 4, {}), ("ndcg", 4, {"gain": "exponential"})],
    )
    changes = []
    for i in range(6):
        for position in range(1, 5):
            for index in range(3):
                if (i + position + index) % 4:
                    changes.append((slot(evaluation, f"kw {i}", position, index),
                                    (i * position + index) % 4))
    grade(changes)
    # Two nDCG configs (@3 linear, @4 exponential): values are keyed by config, not code.
    incremental = stored_by_config(evaluation)
    incremental_means = means_by_config(evaluation)
    assert len(incremental) == 6 * 6
    KeywordMetricValue.objects.all().delete()
    MetricMean.objects.filter(metric__evaluation=evaluation).update(value=None, keyword_count=0)
    call_command("recompute_metrics", "--evaluation", str(evaluation.pk), "--quiet")
    assert "Recomputed 6 keywords in 1 evaluations." in capsys.readouterr().out
    scratch = stored_by_config(evaluation)
    assert scratch.keys() == incremental.keys()
    for key, value in incremental.items():
        assert scratch[key] == pytest.approx(value, abs=1e-12), key
    scratch_means = means_by_config(evaluation)
    for config_id, (value, count) in incremental_means.items():
        assert scratch_means[config_id][1] == count
        assert scratch_means[config_id][0] == pytest.approx(value, abs=1e-12)


def test_recompute_metrics_rejects_an_unknown_evaluation():
    from django.core.management import CommandError

    with pytest.raises(CommandError, match="evaluation: no evaluation with id 424242"):
        call_command("recompute_metrics", "--evaluation", "424242")


def test_a_transformer_that_no_longer_fits_is_stored_on_the_evaluation(grade):
    evaluation = build_evaluation(keywords={"k": ["a"]}, metrics=[("precision", 1, {})])
    Evaluation.objects.filter(pk=evaluation.pk).update(
        transformers={"graded->binary": {"0": 0, "1": 1}}
    )
    grade([(slot(evaluation, "k", 1), 3)])
    evaluation.refresh_from_db()
    assert state_of(evaluation).recompute_error.startswith("transformers.graded->binary: grade 2")
    Evaluation.objects.filter(pk=evaluation.pk).update(
        transformers={"graded->binary": {"0": 0, "1": 0, "2": 1, "3": 1}}
    )
    call_command("recompute_metrics", "--evaluation", str(evaluation.pk), "--quiet")
    evaluation.refresh_from_db()
    assert state_of(evaluation).recompute_error == ""
    assert stored(evaluation)[("k", "precision")] == 1.0


def test_adding_a_metric_recomputes_the_evaluation(grade, django_capture_on_commit_callbacks):
    evaluation = build_evaluation(keywords={"k": ["a", "b"]}, metrics=[("cg", 2, {})])
    grade([(slot(evaluation, "k", 1), 3), (slot(evaluation, "k", 2), 1)])
    with django_capture_on_commit_callbacks(execute=True):
        EvaluationMetric.objects.create(evaluation=evaluation, code="dcg", k=2, position=1)
    assert stored(evaluation)[("k", "dcg")] == pytest.approx(3 + 1 / math.log2(3))
    assert means(evaluation)["dcg"][1] == 1


def test_pool_metrics_follow_grades_given_in_another_evaluation(grade):
    first = build_evaluation(keywords={"Laptop": ["a", "b"]}, metrics=[("cg", 2, {})])
    second = build_evaluation(team=first.team, keywords={" laptop ": ["b", "c"]},
                              metrics=[("recall", 2, {})])
    grade([(slot(second, " laptop ", 1), 3)])
    assert stored(second)[(" laptop ", "recall")] == 1.0  # 1 relevant known, found
    # A relevant document found only by the first evaluation enlarges the pool.
    # Relevant in the pool: a (2, graded in the first) and b (3); found in the top 2: b.
    grade([(slot(first, "Laptop", 1), 2)])
    assert stored(second)[(" laptop ", "recall")] == 0.5


@override_settings(METRIC_HISTORY_INTERVAL_SECONDS=3600)
def test_history_keeps_one_point_per_burst(grade):
    evaluation = build_evaluation(keywords={"k": ["a", "b", "c"]}, metrics=[("cg", 3, {})])
    for position, value in ((1, 1), (2, 2), (3, 3)):
        grade([(slot(evaluation, "k", position), value)])
    points = list(MetricHistoryPoint.objects.filter(metric__evaluation=evaluation))
    assert [(p.value, p.keyword_count) for p in points] == [(6.0, 1)]


def test_the_evaluation_finishes_itself_at_full_progress(grade):
    evaluation = build_evaluation(keywords={"k": ["a", "b"]}, metrics=[("cg", 2, {})],
                                  auto_finish=True)
    grade([(slot(evaluation, "k", 1), 3)])
    evaluation.refresh_from_db()
    assert evaluation.status == Evaluation.Status.ACTIVE
    grade([(slot(evaluation, "k", 2), 0)])
    evaluation.refresh_from_db()
    assert state_of(evaluation).progress == 100.0
    assert evaluation.status == Evaluation.Status.FINISHED


@override_settings(RECOMPUTE_SWEEP_AFTER_SECONDS=0)
def test_the_sweep_finds_keywords_left_dirty(graders):
    from metrics.tasks import sweep_dirty_keywords

    evaluation = build_evaluation(keywords={"a": ["x"], "b": ["y"]}, metrics=[("cg", 1, {})])
    keyword = Keyword.objects.get(evaluation=evaluation, text="a")
    # A grade whose recompute message was lost: stored and dirty, no value yet.
    FeedbackSlot.objects.filter(keyword=keyword).update(grade=2, user=graders[0])
    marks_set([keyword], version=1, dirty_since="2026-01-01T00:00:00Z")
    assert services.dirty_keywords_due() == [keyword.pk]
    assert sweep_dirty_keywords.delay().get() == 1
    assert stored(evaluation)[("a", "cg")] == 2.0
    assert services.dirty_keywords_due() == []


PROPERTY_METRICS = [("precision", 3, {}), ("ap", 3, {}), ("rr", 2, {}), ("ndcg", 3, {}),
                    ("err", 3, {}), ("cg_d", 3, {}), ("recall", 3, {}),
                    ("ndcg", 3, {"ideal": "pool", "gain": "exponential"})]


@pytest.fixture
def property_evaluation(graders):
    return build_evaluation(
        strategy=3, keywords={"alpha": ["a", "b", "c"], "beta": ["b", "c"], "gamma": []},
        metrics=PROPERTY_METRICS,
    )


@pytest.mark.slow_reason("a property test: up to 12 grade changes per example, each recomputed"
                         " and compared with a recompute from scratch (deeper in CI)")
@given(changes=st.lists(
    st.tuples(st.sampled_from(["alpha", "beta"]), st.integers(1, 3), st.integers(0, 2),
              st.one_of(st.none(), st.integers(0, 3))),
    min_size=1, max_size=12,
))
@settings(max_examples=examples(25), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_stored_values_always_equal_a_from_scratch_recompute(
    property_evaluation, grade, changes
):
    evaluation = property_evaluation
    for text, position, index, value in changes:
        if text == "beta" and position == 3:
            continue  # beta has two results
        grade([(slot(evaluation, text, position, index), value)])
    incremental = stored_by_config(evaluation)
    incremental_means = list(EvaluationMetric.objects.with_stored_mean()
                             .filter(evaluation=evaluation)
                             .values_list("pk", "value", "keyword_count"))
    services.evaluation_metrics_recompute(evaluation_id=evaluation.pk)
    scratch = stored_by_config(evaluation)
    assert scratch.keys() >= incremental.keys()
    for key, value in incremental.items():
        assert scratch[key] == pytest.approx(value, abs=1e-12, nan_ok=True), key
    for key in scratch.keys() - incremental.keys():
        assert scratch[key] is None, key  # never graded: null
    scratch_means = {pk: (value, count) for pk, value, count in
                     EvaluationMetric.objects.with_stored_mean().filter(evaluation=evaluation)
                     .values_list("pk", "value", "keyword_count")}
    for pk, value, count in incremental_means:
        assert scratch_means[pk][1] == count
        assert scratch_means[pk][0] == pytest.approx(value, abs=1e-12)


def test_two_evaluations_whose_pools_include_each_other_settle(grade, monkeypatch):
    """Each keyword's recall depends on the other's grades; a grade must recompute both
    once, not set off an endless exchange of recomputes."""
    first = build_evaluation(keywords={"tent": ["a", "b"]}, metrics=[("recall", 2, {})])
    second = build_evaluation(team=first.team, keywords={"Tent": ["b", "c"]},
                              metrics=[("recall", 2, {})])
    runs = []
    real_recompute = services.keyword_metrics_recompute

    def counting(*, keyword_id):
        runs.append(keyword_id)
        assert len(runs) < 10, "recomputes keep waking each other up"
        return real_recompute(keyword_id=keyword_id)

    monkeypatch.setattr(scheduling, "keyword_metrics_recompute", counting)
    grade([(slot(first, "tent", 1), 3)])
    assert sorted(runs) == sorted(Keyword.objects.values_list("pk", flat=True))
    assert stored(first)[("tent", "recall")] == 1.0
    assert stored(second)[("Tent", "recall")] is None  # nothing of its own graded yet
    assert not dirty_marks().exists()


def test_a_search_that_returned_nothing_scores_0_on_pool_metrics_the_pool_knows(
    grade, django_capture_on_commit_callbacks, capsys
):
    """docs/METRICS.md, Stage 2: recall and best of a fetched keyword with no results are 0
    when the team's pool knows documents for its text; null while it is not fetched, when
    its fetch failed, or when it returned results that nobody graded yet. The incremental
    path and `recompute_metrics` agree."""
    from evaluations.fetching.search_requests import FetchResult
    from evaluations.fetching.services import keyword_fetch_store

    first = build_evaluation(keywords={"Tent": ["a", "b", "c"], "Stove": ["s1"], "Lamp": ["l1"]},
                             metrics=[("cg", 3, {})])
    second = build_evaluation(team=first.team, keywords={"tent": [], "stove": ["x", "y"],
                                                         "lamp": []},
                              metrics=[("recall", 5, {}), ("best", 5, {})])
    Keyword.objects.filter(evaluation=second, text="tent").update(
        fetch_status=Keyword.FetchStatus.PENDING, fetch_claimed_at=timezone.now())
    Keyword.objects.filter(evaluation=second, text="lamp").update(
        fetch_status=Keyword.FetchStatus.FAILED, fetch_error="HTTP 500")
    # graded -> binary: a, s1, l1 (3) and b (2) are relevant, c (0) is not; a is "tent"'s best.
    grade([(slot(first, "Tent", 1), 3), (slot(first, "Tent", 2), 2),
           (slot(first, "Tent", 3), 0), (slot(first, "Stove", 1), 3),
           (slot(first, "Lamp", 1), 3)])
    # The pool changed for every keyword of `second`: recomputed, all still null.
    assert stored(second) == {(text, code): None for text in ("tent", "stove", "lamp")
                              for code in ("recall", "best")}
    tent = Keyword.objects.get(evaluation=second, text="tent")
    with django_capture_on_commit_callbacks(execute=True):
        keyword_fetch_store(keyword_id=tent.pk, claimed_at=tent.fetch_claimed_at,
                            result=FetchResult(status_code=200, documents=[]))
    expected = {
        ("tent", "recall"): 0.0, ("tent", "best"): 0.0,  # missed 2 relevant, and the best
        ("stove", "recall"): None, ("stove", "best"): None,  # m = 2, nothing graded yet
        ("lamp", "recall"): None, ("lamp", "best"): None,  # the fetch failed
    }
    assert stored(second) == expected
    assert means(second) == {"recall": (0.0, 1), "best": (0.0, 1)}
    tent.refresh_from_db()
    mark = mark_of(tent)
    assert mark.dirty_since is None and mark.computed_version == mark.version

    KeywordMetricValue.objects.filter(keyword__evaluation=second).delete()
    MetricMean.objects.filter(metric__evaluation=second).update(value=None, keyword_count=0)
    call_command("recompute_metrics", "--evaluation", str(second.pk), "--quiet")
    assert stored(second) == expected
    assert means(second) == {"recall": (0.0, 1), "best": (0.0, 1)}
    # Once "stove" is graded its values follow its grades as before: y is relevant, 1 of 2.
    grade([(slot(second, "stove", 2), 1)])
    assert stored(second)[("stove", "recall")] == 0.5
    assert stored(second)[("stove", "best")] == 0.0


def bounds_of(evaluation) -> dict[tuple[str, str], tuple[float | None, float | None, bool]]:
    return {
        (row.keyword.text, row.metric.code): (row.lower, row.upper, row.bounds_exact)
        for row in KeywordMetricValue.objects.filter(keyword__evaluation=evaluation)
        .select_related("keyword", "metric")
    }


def test_bounds_are_stored_with_the_values_and_close_when_every_slot_is_graded(
        grade, django_capture_on_commit_callbacks):
    from metrics.tasks import mark_fetched_dirty

    evaluation = build_evaluation(
        keywords={"shoes": ["a", "b", "c"], "hats": ["d", "e"]},
        metrics=[("precision", 3, {}), ("cg", 3, {})],
    )
    # What the fetch announces for each keyword (metrics.receivers.on_snapshots_created).
    with django_capture_on_commit_callbacks(execute=True):
        for keyword in Keyword.objects.filter(evaluation=evaluation):
            assert mark_fetched_dirty(keyword.pk, evaluation.pk, True) is True
    grade([(slot(evaluation, "shoes", 1), 3), (slot(evaluation, "shoes", 2), 0)])
    got = bounds_of(evaluation)
    # shoes, P@3 (graded -> binary: 0 -> 0, 1..3 -> 1): position 3 ends 0 (1/3) or 1 (2/3).
    assert got[("shoes", "precision")] == (pytest.approx(1 / 3), pytest.approx(2 / 3), True)
    # CG@3 = 3 + 0 + v3, v3 in 0..3.
    assert got[("shoes", "cg")] == (3.0, 6.0, True)
    # hats has no grade: P@3 ends 0/2 .. 2/2, CG@3 0 .. 3 + 3; it counts in the mean's
    # bounds (docs/METRICS.md) though its value is null.
    assert got[("hats", "precision")] == (0.0, 1.0, True)
    assert got[("hats", "cg")] == (0.0, 6.0, True)
    configs = {config.code: config for config in
               EvaluationMetric.objects.with_stored_mean().filter(evaluation=evaluation)}
    precision = configs["precision"]
    assert (precision.value, precision.keyword_count) == (0.5, 1)
    assert precision.lower == pytest.approx((1 / 3 + 0) / 2)
    assert precision.upper == pytest.approx((2 / 3 + 1) / 2)
    assert (configs["cg"].lower, configs["cg"].upper) == (1.5, 6.0)

    grade([(slot(evaluation, "shoes", 3), 1), (slot(evaluation, "hats", 1), 0),
           (slot(evaluation, "hats", 2), 2)])
    values = stored(evaluation)
    for key, (lower, upper, exact) in bounds_of(evaluation).items():
        assert lower == upper == values[key] and exact, key
    precision = EvaluationMetric.objects.with_stored_mean().get(pk=precision.pk)
    assert precision.lower == precision.upper == precision.value
    assert precision.value == pytest.approx((2 / 3 + 1 / 2) / 2)


def test_recompute_metrics_command_equals_the_incremental_bounds(grade):
    evaluation = build_evaluation(
        strategy=3, keywords={f"kw {i}": [f"d{i}{j}" for j in range(4)] for i in range(5)},
        metrics=[("ap", 4, {}), ("ndcg", 4, {}), ("precision", 4, {}), ("err", 4, {})],
    )
    grade([(slot(evaluation, f"kw {i}", position, index), (i + position * index) % 4)
           for i in range(5) for position in range(1, 5) for index in range(3)
           if (i * position + index) % 3])
    incremental = {key: (value.lower, value.upper, value.bounds_exact) for key, value in
                   KeywordMetricValue.objects.filter(keyword__evaluation=evaluation)
                   .in_bulk().items()}
    assert any(lower != upper for lower, upper, _ in incremental.values())
    KeywordMetricValue.objects.all().update(lower=None, upper=None, bounds_exact=False)
    call_command("recompute_metrics", "--evaluation", str(evaluation.pk), "--quiet")
    again = {key: (value.lower, value.upper, value.bounds_exact) for key, value in
             KeywordMetricValue.objects.filter(keyword__evaluation=evaluation)
             .in_bulk().items()}
    assert again == incremental
