"""Every statement of metrics.queries answers what the same question asked through the ORM
answers (SQLite by default; PostgreSQL with DATABASE_URL)."""

from collections import Counter
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.db.models import Count, F, Max, Min, Q, Sum
from django.utils import timezone

import metrics_engine as core
from evaluations.models import Evaluation, EvaluationMetric, Keyword
from judgments.models import FeedbackSlot
from metrics import queries
from metrics.models import (
    KeywordMetricValue,
    KeywordQueueWidth,
    KeywordRecomputeMark,
    MetricHistoryPoint,
    MetricMean,
    RecomputeDue,
)
from metrics.recompute.scheduling import recompute_due_clear, recompute_due_set
from searchtweak import sql
from tests.metrics.builders import build_evaluation
from tests.recompute_state import dirty_marks, mark_of, marks_set, mean_of, state_of
from tests.searchtweak.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def evaluation() -> Evaluation:
    """Three keywords of three results and three slots, graded unevenly; two metrics, one
    of them a pool metric; stored values, one null; two keywords dirty."""
    evaluation = build_evaluation(
        strategy=3, keywords={"a": ["d1", "d2", "d3"], "b": ["d4", "d5", "d6"], "c": ["d7"]},
        metrics=[("precision", 3, {}), ("recall", 3, {})],
    )
    graders = [UserFactory() for _ in range(3)]
    grades = [3, 0, None, 1, 1, 2, None, 0, 3, 2, 2, 2]
    for slot, grade in zip(FeedbackSlot.objects.filter(evaluation=evaluation)
                           .order_by("keyword_position", "position", "index"), grades,
                           strict=False):
        FeedbackSlot.objects.filter(pk=slot.pk).update(grade=grade, user=graders[slot.index])
    keywords = list(Keyword.objects.filter(evaluation=evaluation).order_by("position"))
    now = timezone.now()
    marks_set([keywords[0]], version=3, dirty_since=now)
    marks_set([keywords[2]], version=2, dirty_since=now - timedelta(minutes=1))
    configs = list(EvaluationMetric.objects.filter(evaluation=evaluation).order_by("position"))
    for keyword, values in zip(keywords, [(0.5, 1.0), (0.25, None), (None, 0.75)], strict=True):
        for config, value in zip(configs, values, strict=True):
            KeywordMetricValue.objects.create(keyword=keyword, metric=config, value=value,
                                              computed_version=1)
    return evaluation


def test_dirty_keyword_rows(evaluation):
    keyword = Keyword.objects.filter(evaluation=evaluation).order_by("position")[1]
    expected = [
        (k.pk, k.evaluation_id, mark_of(k).version, mark_of(k).dirty_since is not None)
        for k in Keyword.objects.filter(Q(pk=keyword.pk) | Q(
            evaluation_id=keyword.evaluation_id, recompute_mark__dirty_since__isnull=False))
        .order_by(F("recompute_mark__dirty_since").asc(nulls_last=True), "id")
    ]
    assert len(expected) == 3 and expected[-1][0] == keyword.pk
    assert queries.dirty_keyword_rows(keyword_id=keyword.pk, limit=10) == expected
    assert queries.dirty_keyword_rows(keyword_id=keyword.pk, limit=2) == expected[:2]
    # A dirty keyword that names itself comes once, in its place among the dirty ones.
    dirty_first = Keyword.objects.filter(evaluation=evaluation).order_by("position")[0]
    assert queries.dirty_keyword_rows(keyword_id=dirty_first.pk, limit=10) == expected[:2]


def test_evaluation_dirty_keyword_id(evaluation):
    dirty = set(dirty_marks(evaluation=evaluation).values_list("keyword_id", flat=True))
    assert queries.evaluation_dirty_keyword_id(evaluation_id=evaluation.pk) in dirty
    KeywordRecomputeMark.objects.update(dirty_since=None)
    assert queries.evaluation_dirty_keyword_id(evaluation_id=evaluation.pk) is None


def test_evaluation_config_rows(evaluation):
    Evaluation.objects.filter(pk=evaluation.pk).update(transformers={"graded->binary": {"1": 0}})
    EvaluationMetric.objects.filter(evaluation=evaluation, code="recall").update(
        params={"ideal": "pool"})
    expected = list(EvaluationMetric.objects.filter(evaluation=evaluation).order_by(
        "position", "id").values_list(
        "evaluation__team_id", "evaluation__team__name", "evaluation__scale",
        "evaluation__strategy", "evaluation__transformers", "id", "code", "k", "params",
        "position"))
    rows = queries.evaluation_config_rows(evaluation_id=evaluation.pk)
    decoded = [(*row[:4], sql.json_value(row[4]), *row[5:8], sql.json_value(row[8]), row[9])
               for row in rows]
    assert decoded == [tuple(row) for row in expected]
    bare = build_evaluation(keywords={}, metrics=[])
    assert queries.evaluation_config_rows(evaluation_id=bare.pk) == [
        (bare.team_id, bare.team.name, bare.scale, bare.strategy, "{}" if isinstance(
            rows[0][4], str) else {}, None, None, None, None, None)]
    assert queries.evaluation_config_rows(evaluation_id=999_999) == []


def test_changed_keyword_rows(evaluation):
    # Another evaluation of the team on another scale: its keywords are exposed only to
    # its own pool metrics.
    other = build_evaluation(team=evaluation.team, scale="binary", keywords={"z": ["d9"]},
                             metrics=[("precision", 1, {})])
    due_after = timezone.now()
    RecomputeDue.objects.create(evaluation=evaluation, due_at=due_after + timedelta(seconds=5))
    keyword_ids = list(Keyword.objects.filter(evaluation__in=[evaluation, other])
                       .values_list("pk", flat=True))

    def expected() -> set[tuple[int, int, bool, bool]]:
        rows = set()
        for keyword in Keyword.objects.filter(pk__in=keyword_ids).select_related("evaluation"):
            configs = EvaluationMetric.objects.filter(
                evaluation__team_id=keyword.evaluation.team_id,
                evaluation__scale=keyword.evaluation.scale)
            exposed = any(core.needs_pool(c.code, core.resolve_params(c.params)) for c in configs)
            due = RecomputeDue.objects.filter(evaluation_id=keyword.evaluation_id,
                                              due_at__gt=due_after).exists()
            rows.add((keyword.pk, keyword.evaluation_id, exposed, due))
        return rows

    got = queries.changed_keyword_rows(keyword_ids=keyword_ids, due_after=due_after)
    assert set(got) == expected() and len(got) == len(keyword_ids)
    assert {due for *_, due in got} == {True, False}
    other_keyword = Keyword.objects.get(evaluation=other).pk
    assert not any(exposed for pk, _, exposed, _ in got if pk == other_keyword)
    EvaluationMetric.objects.filter(evaluation=other).update(code="best")
    got = queries.changed_keyword_rows(keyword_ids=keyword_ids, due_after=due_after)
    assert set(got) == expected()
    assert all(exposed for pk, _, exposed, _ in got if pk == other_keyword)


def test_slot_rows_give_every_slot_and_mark_the_ungraded(evaluation):
    keyword_ids = list(Keyword.objects.filter(evaluation=evaluation).values_list("pk", flat=True))

    def expected(**filters):
        return Counter(
            (keyword_id, position, index, queries.UNGRADED if grade is None else grade)
            for keyword_id, position, index, grade in FeedbackSlot.objects.filter(**filters)
            .values_list("keyword_id", "position", "index", "grade"))

    assert FeedbackSlot.objects.filter(evaluation=evaluation, grade__isnull=True).exists()
    for positions in (1, 3):
        want = expected(evaluation=evaluation, position__lte=positions)
        assert Counter(queries.slot_rows(keyword_ids=keyword_ids, positions=positions)) == want
        assert Counter(queries.slot_rows(evaluation_id=evaluation.pk, positions=positions)) == want
    assert Counter(queries.slot_rows(keyword_ids=keyword_ids[:1], positions=3)) == expected(
        keyword_id=keyword_ids[0])
    assert Counter(queries.slot_rows(evaluation_id=evaluation.pk, positions=None)) == expected(
        evaluation=evaluation)
    assert expected(evaluation=evaluation) != expected(evaluation=evaluation, position__lte=1)


@pytest.mark.parametrize("returning", [True, False])
def test_keyword_values_upsert(evaluation, returning):
    """keyword_values_upsert sends the rows written back, keyword_values_upsert_count
    their number (for recompute_metrics, which moves no running sum); both write alike."""
    keywords = list(Keyword.objects.filter(evaluation=evaluation).order_by("position"))
    config = EvaluationMetric.objects.get(evaluation=evaluation, code="precision")
    now = timezone.now()
    KeywordMetricValue.objects.filter(keyword=keywords[2]).delete()
    row = queries.KeywordValueRow
    rows = [
        row(keywords[0].pk, config.pk, 0.9, 0.5, 1.0, False, 2),  # newer: replaces
        row(keywords[1].pk, config.pk, 0.1, 0.1, 0.1, True, 0),  # older than version 1: dropped
        row(keywords[2].pk, config.pk, None, None, None, True, 5),  # new row
    ]
    if returning:
        written = queries.keyword_values_upsert(rows, now=now)
        assert sorted(written) == sorted(
            [row(keywords[0].pk, config.pk, 0.9, 0.5, 1.0, False),
             row(keywords[2].pk, config.pk, None, None, None, True)])
    else:
        assert queries.keyword_values_upsert_count(
            queries.KeywordValueColumns.from_rows(rows), now=now) == 2
    assert dict(KeywordMetricValue.objects.filter(metric=config).values_list(
        "keyword_id", "value")) == {keywords[0].pk: 0.9, keywords[1].pk: 0.25,
                                    keywords[2].pk: None}
    assert KeywordMetricValue.objects.filter(keyword=keywords[0], metric=config).values_list(
        "lower", "upper", "bounds_exact").get() == (0.5, 1.0, False)
    assert dict(KeywordMetricValue.objects.filter(metric=config).values_list(
        "keyword_id", "computed_version")) == {keywords[0].pk: 2, keywords[1].pk: 1,
                                               keywords[2].pk: 5}
    assert KeywordMetricValue.objects.get(keyword=keywords[0], metric=config).updated_at == now


def test_keyword_queue_widths_store(evaluation):
    a, b, c = Keyword.objects.filter(evaluation=evaluation).order_by("position")
    first = EvaluationMetric.objects.filter(evaluation=evaluation).order_by("position").first()
    KeywordMetricValue.objects.filter(keyword=a, metric=first).update(lower=0.25, upper=0.75)
    # The second metric's bounds are not the queue's business.
    KeywordMetricValue.objects.filter(keyword=b).exclude(metric=first).update(lower=0, upper=1)
    # c: no value stored and every slot graded; b: no bounds and slots left.
    KeywordMetricValue.objects.filter(keyword=c).delete()
    for slot in FeedbackSlot.objects.filter(keyword=c):
        FeedbackSlot.objects.filter(pk=slot.pk).update(grade=1, user=UserFactory())
    queries.keyword_queue_widths_store(keyword_ids=[a.pk, b.pk, c.pk])
    stored = KeywordQueueWidth.objects.filter(evaluation=evaluation).values_list(
        "keyword_id", "keyword_position", "width")
    assert sorted(stored) == [(a.pk, 1, 0.5), (b.pk, 2, 1e6), (c.pk, 3, 0.0)]
    # Stored again: updated in place.
    KeywordMetricValue.objects.filter(keyword=a, metric=first).update(lower=0.5, upper=0.75)
    queries.keyword_queue_widths_store(keyword_ids=[a.pk])
    assert KeywordQueueWidth.objects.get(keyword=a).width == 0.25
    assert KeywordQueueWidth.objects.count() == 3


def test_evaluation_lock(evaluation):
    with transaction.atomic():
        assert queries.evaluation_lock(evaluation_id=evaluation.pk) is True
    assert queries.evaluation_lock(evaluation_id=999_999) is False


def test_metric_config_values(evaluation):
    MetricMean.objects.create(
        metric=EvaluationMetric.objects.get(evaluation=evaluation, code="recall"),
        value=0.875, keyword_count=2)
    EvaluationMetric.objects.create(evaluation=evaluation, code="ap", k=3, position=2)
    configs = list(EvaluationMetric.objects.filter(evaluation=evaluation).with_stored_mean()
                   .values_list("id", "value", "keyword_count"))
    present = KeywordMetricValue.objects.filter(metric__evaluation=evaluation,
                                                value__isnull=False)
    bounded = KeywordMetricValue.objects.filter(metric__evaluation=evaluation,
                                                value__isnull=False).order_by("pk").first()
    KeywordMetricValue.objects.filter(pk=bounded.pk).update(lower=0.125, upper=0.75,
                                                            bounds_exact=False)
    rows = queries.metric_config_values(evaluation_id=evaluation.pk)
    assert sorted(row[:3] for row in rows) == sorted(configs)
    assert {row.pk: Counter(row.present) for row in rows} == {
        pk: Counter(present.filter(metric_id=pk).values_list("value", flat=True))
        for pk, _, _ in configs}
    # Two configs with two values each (a null value is not one), one without any.
    assert sorted(len(row.present) for row in rows) == [0, 2, 2]
    assert all(isinstance(value, float) for row in rows for value in row.present)
    # Bounds: only the row given some; its config alone is not exact.
    assert {row.pk: (row.lowers, row.uppers, row.bounds_exact) for row in rows} == {
        pk: (([0.125], [0.75], False) if pk == bounded.metric_id else ([], [], True))
        for pk, _, _ in configs}


def test_metric_means_store(evaluation):
    configs = list(EvaluationMetric.objects.filter(evaluation=evaluation).order_by("position"))
    now = timezone.now()
    mean = queries.StoredMean
    queries.metric_means_store([mean(configs[0].pk, 0.375, 2, 0.25, 0.5, True),
                                mean(configs[1].pk, None, 0, None, None, True)], now=now)
    assert list(EvaluationMetric.objects.filter(evaluation=evaluation).order_by("position")
                .with_stored_mean().values_list("value", "keyword_count", "updated_at")) == [
        (0.375, 2, now), (None, 0, now)]
    assert (mean_of(configs[0]).lower, mean_of(configs[0]).upper) == (0.25, 0.5)
    # A second store updates the rows the first created.
    queries.metric_means_store([mean(configs[0].pk, 0.5, 3, 0.0, 1.0, False)], now=now)
    stored = mean_of(configs[0])
    assert (stored.value, stored.keyword_count, stored.lower, stored.upper,
            stored.bounds_exact) == (0.5, 3, 0.0, 1.0, False)


def test_history_latest_points_follow(evaluation):
    configs = list(EvaluationMetric.objects.filter(evaluation=evaluation).order_by("position"))
    now = timezone.now()
    old = MetricHistoryPoint.objects.create(metric=configs[0], value=0.1, keyword_count=1,
                                            recorded_at=now - timedelta(minutes=1))
    latest = MetricHistoryPoint.objects.create(metric=configs[0], value=0.2, keyword_count=1,
                                               recorded_at=now - timedelta(seconds=5))
    stale = MetricHistoryPoint.objects.create(metric=configs[1], value=0.3, keyword_count=1,
                                              recorded_at=now - timedelta(hours=1))
    since = now - timedelta(seconds=30)
    # The ORM's answer: the configs whose latest point lies in the interval.
    expected = {
        metric_id for metric_id, recorded_at in MetricHistoryPoint.objects.filter(
            metric__in=configs).values("metric_id").annotate(latest=Max("recorded_at"))
        .values_list("metric_id", "latest") if recorded_at >= since}
    followed = queries.history_latest_points_follow(
        [(configs[0].pk, 0.5, 3), (configs[1].pk, 0.6, 3)], since=since)
    assert followed == expected == {configs[0].pk}
    values = dict(MetricHistoryPoint.objects.values_list("pk", "value"))
    assert values == {old.pk: 0.1, latest.pk: 0.5, stale.pk: 0.3}


def test_evaluation_progress_store(evaluation):
    queries.evaluation_recompute_error_store(evaluation_id=evaluation.pk, error="boom")
    assert state_of(evaluation).recompute_error == "boom"
    counts = FeedbackSlot.objects.filter(evaluation=evaluation).aggregate(
        graded=Count("grade"), total=Count("pk"))
    expected = counts["graded"] * 100.0 / counts["total"]
    assert queries.evaluation_progress_store(evaluation_id=evaluation.pk) == pytest.approx(
        expected, abs=1e-12)
    evaluation.refresh_from_db()
    assert (state_of(evaluation).progress, state_of(evaluation).recompute_error) == (
        pytest.approx(expected, abs=1e-12), "")
    empty = build_evaluation(keywords={}, metrics=[])
    assert queries.evaluation_progress_store(evaluation_id=empty.pk) == 0


def test_evaluation_progress_store_from_counts_below_and_at_every_slot(evaluation):
    """The caller's counts give the share below 100 %; at 100 % the slots confirm it (one
    probe) or, when they disagree, are counted."""
    assert queries.evaluation_progress_store(
        evaluation_id=evaluation.pk, slot_counts=(7, 3)) == 3 * 100.0 / 7
    # The fixture's slots are not all graded: counts that say so are not believed.
    counts = FeedbackSlot.objects.filter(evaluation=evaluation).aggregate(
        graded=Count("grade"), total=Count("pk"))
    counted = counts["graded"] * 100.0 / counts["total"]
    assert counted < 100.0
    assert queries.evaluation_progress_store(
        evaluation_id=evaluation.pk, slot_counts=(21, 21)) == pytest.approx(counted, abs=1e-12)
    _grade(FeedbackSlot.objects.filter(evaluation=evaluation, grade__isnull=True), 1)
    # Counts that lag (they say 20 slots where there are 21): the share is still the slots'.
    assert queries.evaluation_progress_store(
        evaluation_id=evaluation.pk, slot_counts=(20, 20)) == 100.0
    assert state_of(evaluation).progress == 100.0


def _grade(slots, grade: int | None) -> None:
    """Give each slot the grade, by a grader of its own (one person per result)."""
    for slot in list(slots):
        FeedbackSlot.objects.filter(pk=slot.pk).update(
            grade=grade, user=None if grade is None else UserFactory())


def test_evaluation_all_slots_graded(evaluation):
    def orm(evaluation_id: int) -> bool:
        slots = FeedbackSlot.objects.filter(evaluation_id=evaluation_id)
        return slots.exists() and not slots.filter(grade__isnull=True).exists()

    empty = build_evaluation(keywords={}, metrics=[])
    assert queries.evaluation_all_slots_graded(evaluation_id=empty.pk) is orm(empty.pk) is False
    assert queries.evaluation_all_slots_graded(
        evaluation_id=evaluation.pk) is orm(evaluation.pk) is False
    ungraded = list(FeedbackSlot.objects.filter(evaluation=evaluation, grade__isnull=True)
                    .order_by("pk"))
    _grade(ungraded[2:], 2)
    # Each ungraded slot alone still says no, whichever grades the others hold.
    _grade(ungraded[:1], 0)
    assert queries.evaluation_all_slots_graded(
        evaluation_id=evaluation.pk) is orm(evaluation.pk) is False
    _grade(ungraded[1:2], 3)
    assert queries.evaluation_all_slots_graded(
        evaluation_id=evaluation.pk) is orm(evaluation.pk) is True
    _grade(ungraded[:1], None)
    assert queries.evaluation_all_slots_graded(
        evaluation_id=evaluation.pk) is orm(evaluation.pk) is False


def test_snapshot_grade_patterns(evaluation):
    per_snapshot = (FeedbackSlot.objects.filter(evaluation=evaluation).values("snapshot_id")
                    .annotate(total=Count("pk"), graded=Count("grade"), lo=Min("grade"),
                              hi=Max("grade"), grade_sum=Sum("grade"))
                    .values_list("total", "graded", "lo", "hi", "grade_sum"))
    expected = Counter(per_snapshot)
    assert {row[:5]: row[5] for row in queries.snapshot_grade_patterns(
        evaluation_id=evaluation.pk)} == expected
    assert sum(expected.values()) == 7


def test_recompute_due_upsert_and_clear(evaluation):
    now = timezone.now()
    recompute_due_set(evaluation_id=evaluation.pk, due_at=now)
    recompute_due_set(evaluation_id=evaluation.pk, due_at=now + timedelta(seconds=3))
    assert list(RecomputeDue.objects.values_list("evaluation_id", "due_at")) == [
        (evaluation.pk, now + timedelta(seconds=3))]
    recompute_due_clear(evaluation_id=evaluation.pk)
    assert list(RecomputeDue.objects.values_list("evaluation_id", "due_at")) == [
        (evaluation.pk, None)]


def test_the_pool_config_filter_keeps_every_config_the_registry_says_reads_the_pool():
    """The SQL filter derives from metrics_engine.config_reads_pool: a superset of it, equal
    on every configuration the registry accepts."""
    evaluation = build_evaluation(keywords={"a": ["d1"]}, metrics=[])
    cases = [(code, params) for code in core.METRICS
             for params in ({}, {"ideal": "pool"}, {"ideal": "local"}, {"ideal": "max"})]
    for position, (code, params) in enumerate(cases):
        EvaluationMetric.objects.create(evaluation=evaluation, code=code, k=3, params=params,
                                        position=position)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT m.id FROM {EvaluationMetric._meta.db_table} m"
            f" WHERE m.evaluation_id = %s AND {queries._pool_config_sql()}", [evaluation.pk])
        passed = {pk for (pk,) in cursor.fetchall()}
    expected = {config.pk for config in EvaluationMetric.objects.filter(evaluation=evaluation)
                if core.config_reads_pool(config.code, config.params)}
    assert passed == expected
    assert {EvaluationMetric.objects.get(pk=pk).code for pk in passed} >= {"recall", "ndcg"}


# --- segments: queries.Tagged ---

# Tags that a text match would confuse: a prefix of another, a LIKE wildcard, quotes,
# JSON's own characters, a non-ASCII letter, a colon.
_TAGS_OF = {"a": ["tail"], "b": ["tails"], "c": ["head", "lang:de"], "d": [],
            "e": ["100%", "o'neil"], "f": ['say "hi"', "straße", "tail"], "g": ["[tail]"]}


@pytest.mark.parametrize("tag", ["tail", "tails", "lang:de", "head", "100%", "o'neil",
                                 'say "hi"', "straße", "[tail]", "ail", "%", "", "lang"])
def test_tagged_keeps_the_keywords_carrying_the_tag_exactly(tag):
    evaluation = build_evaluation(keywords={text: ["d1"] for text in _TAGS_OF},
                                  metrics=[("precision", 1, {})])
    other = build_evaluation(keywords={"z": ["d1"]}, metrics=[("precision", 1, {})])
    Keyword.objects.filter(evaluation=other).update(tags=[tag])
    for text, tags in _TAGS_OF.items():
        Keyword.objects.filter(evaluation=evaluation, text=text).update(tags=tags)
    config = EvaluationMetric.objects.get(evaluation=evaluation)
    for keyword in Keyword.objects.filter(evaluation=evaluation):
        KeywordMetricValue.objects.create(keyword=keyword, metric=config, value=0.5,
                                          computed_version=1)
    expected = sorted(text for text, tags in _TAGS_OF.items() if tag in tags)
    found = Keyword.objects.filter(evaluation=evaluation).filter(queries.Tagged(tag))
    assert sorted(found.values_list("text", flat=True)) == expected
    # Through a relation, as the value reads filter them.
    through = KeywordMetricValue.objects.filter(metric=config).filter(
        queries.Tagged(tag, through="keyword__"))
    assert sorted(through.values_list("keyword__text", flat=True)) == expected
    # Combined with other conditions and negated, it is a filter like any other.
    assert sorted(Keyword.objects.filter(evaluation=evaluation).exclude(
        queries.Tagged(tag)).values_list("text", flat=True)) == sorted(
        set(_TAGS_OF) - set(expected))


@pytest.mark.parametrize("tag", ["", "tail"])
def test_segment_histogram_rows_bin_as_numpy_does(tag):
    """Per bin the keywords and their weights' sum, as numpy.histogram bins the segment's
    values over [0, 1] (edges 0.3 and 0.7 included, whose products with 10 round the other
    way); a value outside [0, 1] in bin -1."""
    import numpy as np

    from metrics.recompute.aggregates import BINS

    values = [0.0, 0.1, 0.3, 0.7, 0.7000000000000001, 0.69999, 0.9999, 1.0, None, 0.5, 0.25]
    weights = [3, 0, 2, 5, 1, 7, 1, 4, 9, 2, 1]
    tags = [["tail"], ["tail"], [], ["tail", "head"], ["tail"], ["head"], ["tail"], ["tail"],
            ["tail"], [], ["tail"]]
    evaluation = build_evaluation(keywords={f"k{i}": ["d1"] for i in range(len(values))},
                                  metrics=[("cg", 1, {})])
    config = EvaluationMetric.objects.get(evaluation=evaluation)
    for i, (value, weight, keyword_tags) in enumerate(zip(values, weights, tags, strict=True)):
        keyword = Keyword.objects.get(evaluation=evaluation, text=f"k{i}")
        Keyword.objects.filter(pk=keyword.pk).update(weight=weight, tags=keyword_tags)
        KeywordMetricValue.objects.create(keyword=keyword, metric=config, value=value,
                                          computed_version=1)
    edges = [float(e) for e in np.linspace(0.0, 1.0, BINS + 1)[1:-1]]
    kept = [(v, w) for v, w, t in zip(values, weights, tags, strict=True)
            if v is not None and (not tag or tag in t)]
    counts, _ = np.histogram([v for v, _ in kept], bins=BINS, range=(0.0, 1.0))
    sums, _ = np.histogram([v for v, _ in kept], bins=BINS, range=(0.0, 1.0),
                           weights=[w for _, w in kept])
    expected = [(b, int(counts[b]), int(sums[b])) for b in range(BINS) if counts[b]]
    # The keywords of the segment without a value: their own row.
    missing = [w for v, w, t in zip(values, weights, tags, strict=True)
               if v is None and (not tag or tag in t)]
    expected.append((None, len(missing), sum(missing)))
    # Another evaluation's keywords count in neither.
    other = build_evaluation(keywords={"z": ["d1"]}, metrics=[("cg", 1, {})])
    Keyword.objects.filter(evaluation=other).update(tags=["tail"])

    def rows():
        found = queries.segment_histogram_rows(evaluation_id=evaluation.pk,
                                               metric_id=config.pk, tag=tag, inner_edges=edges)
        return sorted(found, key=lambda row: (row[0] is None, row[0] or 0))

    assert rows() == expected
    KeywordMetricValue.objects.filter(metric=config, keyword__text="k0").update(value=2.5)
    assert rows()[0] == (-1, 1, 3)
