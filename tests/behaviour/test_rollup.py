"""The rollup the panel reads (behaviour.rollup, BehaviourKeywordDay): made from the sums
by every writer, by hand on the importer's test log, and giving the figures the sums give
(behaviour.summary.summary_from_sums, the computation the panel had before it) on the same
data, for the whole log, windows, cut-offs and keyword sets. Runs on SQLite and, with
DATABASE_URL set, on PostgreSQL."""

import importlib
from datetime import date, timedelta

import numpy as np
import pytest
from django.apps import apps
from django.db import connection
from django.db.models import Avg, Count, F, FloatField, Max, Sum
from django.db.models.functions import Cast, NullIf

from behaviour import services
from behaviour.collector import collector_batch_store
from behaviour.importing import CountRow, SearchesRow
from behaviour.models import BehaviourCount, BehaviourKeywordDay, BehaviourSearches
from behaviour.rollup import DEEPEST, SUMMED, keyword_days_rebuild, window_sums
from behaviour.summary import online_summary, summary_from_rollup, summary_from_sums
from evaluations.models import Keyword
from tests.behaviour.test_collector import EVENTS, NOW, QUERIES
from tests.behaviour.test_collector import collector as collector_source
from tests.behaviour.test_imports import (
    NOV1,
    NOV2,
    evaluation_with_keywords,
    import_csv,
    import_ubi,
)
from tests.evaluations.factories import EvaluationFactory, SearchModelFactory

pytestmark = pytest.mark.django_db


def rollup(source) -> dict:
    return {(row.keyword, row.day, row.whole): row for row in
            BehaviourKeywordDay.objects.filter(source=source)}


def test_the_importers_log_rolls_up_by_hand(personas):
    # q1 (A B C; A clicked at 1 with dwell 50, C at 3 with 10) and q2 (B A C; A clicked
    # at 2, no dwell) "red shoes" on 1 November; q3 "boots" on 2 November (D E, F at 3).
    source = import_ubi(personas)
    rows = rollup(source)
    assert set(rows) == {("red shoes", NOV1, False), ("boots", NOV2, False),
                         ("red shoes", None, True), ("boots", None, True)}
    shoes = rows[("red shoes", NOV1, False)]
    assert (shoes.searches, shoes.count_depth, shoes.first_click_depth) == (2, 3, 2)
    assert [(getattr(shoes, f"impressions_{p}"), getattr(shoes, f"clicks_{p}"),
             getattr(shoes, f"first_clicks_{p}")) for p in (1, 2, 3, 4)] == [
        (2, 1, 1), (2, 1, 1), (2, 1, 0), (0, 0, 0)]
    assert (shoes.dwell_seconds_sum, shoes.dwell_count) == (60.0, 2)
    boots = rows[("boots", None, True)]
    assert (boots.searches, boots.count_depth, boots.first_click_depth, boots.impressions_3,
            boots.clicks_1) == (1, 3, 0, 1, 0)
    whole_shoes = rows[("red shoes", None, True)]
    assert all(getattr(whole_shoes, name) == getattr(shoes, name)
               for name in ("searches", "impressions_1", "clicks_2", "first_clicks_2",
                            "dwell_seconds_sum", "count_depth"))


def test_a_csv_rolls_up_into_whole_rows_only(personas):
    source = import_csv(personas)
    assert {(keyword, day, whole) for keyword, day, whole in rollup(source)} == {
        (keyword, None, True) for keyword in
        BehaviourCount.objects.filter(source=source).values_list("keyword", flat=True)}


def close(found: float | None, expected: float | None) -> bool:
    if found is None or expected is None:
        return found is expected
    return found == pytest.approx(expected, rel=1e-12)


def assert_same(source, keyword_texts, **window) -> None:
    for k in (1, 3, 10, 50):
        fast = summary_from_rollup(source=source, keyword_texts=keyword_texts, k=k,
                                   **window)
        slow = summary_from_sums(source=source, keyword_texts=keyword_texts, k=k, **window)
        assert fast is not None
        assert (fast.keywords_with_behaviour, fast.impressions, fast.clicks) == (
            slow.keywords_with_behaviour, slow.impressions, slow.clicks)
        # Both sum the same whole numbers; a mean over keywords and the dwell seconds add
        # up doubles in another order, so they agree to the last bits.
        assert close(fast.mean_ctr_at_k, slow.mean_ctr_at_k)
        if slow.pooled is None:
            assert fast.pooled is None
            continue
        for name in ("ctr_at_k", "ctr_by_position", "first_click_rr", "abandonment",
                     "searches"):
            assert getattr(fast.pooled, name) == getattr(slow.pooled, name), name
        assert close(fast.pooled.mean_dwell_seconds, slow.pooled.mean_dwell_seconds)


def random_log(rng, keywords: int, days: int, depth: int = 10):
    """Sums as an importer stores them: each keyword on some days, documents at some
    positions up to `depth`, first clicks within what was clicked; some keyword-days with
    searches and no results shown, some results never clicked."""
    first_day = date(2026, 10, 1)
    counts, searches = [], []
    for number in range(keywords):
        keyword = f"kw {number}"
        for offset in range(days):
            if rng.random() < 0.3:
                continue
            day = first_day + timedelta(days=offset)
            search_count = int(rng.integers(1, 40))
            shown_depth = int(rng.integers(0, depth + 1))
            firsts = [0] * shown_depth
            for position in range(1, shown_depth + 1):
                for doc in range(int(rng.integers(1, 3))):
                    shown = int(rng.integers(0, search_count + 1))
                    clicks = int(rng.integers(0, shown + 1))
                    dwelt = int(rng.integers(0, clicks + 1))
                    counts.append(CountRow(keyword, f"d{doc}", position, day, shown, clicks,
                                           float(rng.random() * 90 * dwelt), dwelt))
                    firsts[position - 1] += min(clicks, search_count - sum(firsts))
            while firsts and not firsts[-1]:
                firsts.pop()
            searches.append(SearchesRow(keyword, day, search_count, firsts))
    return counts, searches


def stored(personas, counts, searches, name="Random"):
    return services.behaviour_source_store_sums(
        team=personas.team, user=None, name=name, kind="ubi", window_start_at=None,
        window_end_at=None, search_count=0, event_count=0, counts=counts, searches=searches)


def evaluation_of(personas, texts: list[str]):
    evaluation = EvaluationFactory(model=SearchModelFactory(team=personas.team))
    Keyword.objects.bulk_create([Keyword(evaluation=evaluation, text=text,
                                         normalized_text=text, position=n)
                                 for n, text in enumerate(texts, start=1)])
    return evaluation.keywords.values("normalized_text")


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_rollup_gives_the_sums_figures_on_random_logs(personas, seed):
    rng = np.random.default_rng(seed)
    counts, searches = random_log(rng, keywords=40, days=9)
    source = stored(personas, counts, searches)
    # Most of the log's keywords, some it never saw, one with searches alone.
    texts = evaluation_of(personas, [f"kw {n}" for n in range(0, 40, 3)] + ["unseen"])
    assert_same(source, texts)
    for start, end in ((date(2026, 10, 1), date(2026, 10, 9)), (date(2026, 10, 3),
                       date(2026, 10, 5)), (date(2026, 10, 8), None),
                      (None, date(2026, 10, 2)), (date(2026, 11, 1), date(2026, 11, 3))):
        assert_same(source, texts, start_on=start, end_on=end)


def test_keywords_shown_deeper_than_the_rollup_are_read_from_the_sums(personas):
    counts, searches = random_log(np.random.default_rng(4), keywords=5, days=3)
    deep = date(2026, 10, 2)
    counts.append(CountRow("kw 1", "deep", 12, deep, 7, 2, 0.0, 0))
    source = stored(personas, counts, searches)
    texts = evaluation_of(personas, [f"kw {n}" for n in range(5)])
    assert summary_from_rollup(source=source, keyword_texts=texts) is None
    assert summary_from_rollup(source=source, keyword_texts=texts, start_on=deep,
                               end_on=deep) is None
    found = online_summary(source=source, keyword_texts=texts, k=10)
    assert found.pooled.ctr_by_position[11] == 2 / 7
    assert found == summary_from_sums(source=source, keyword_texts=texts, k=10)
    # Another day, not as deep, is read from the rollup again.
    assert_same(source, texts, start_on=date(2026, 10, 3), end_on=date(2026, 10, 3))


def test_first_clicks_deeper_than_the_rollup_are_read_from_the_sums(personas):
    source = stored(personas, [CountRow("kw 0", "a", 1, NOV1, 5, 1, 0.0, 0)],
                    [SearchesRow("kw 0", NOV1, 5, [1] + [0] * 10 + [1])])
    texts = evaluation_of(personas, ["kw 0"])
    assert summary_from_rollup(source=source, keyword_texts=texts) is None
    assert online_summary(source=source, keyword_texts=texts).pooled.first_click_rr == (
        1 + 1 / 12) / 5


def test_batches_keep_the_rollup_of_the_sums_they_change(personas):
    source = collector_source(personas.team)
    collector_batch_store(source=source, queries=QUERIES[:2], events=EVENTS[:2], now=NOW)
    collector_batch_store(source=source, queries=QUERIES[2:], events=EVENTS[2:], now=NOW)
    collected = {key: _fields(row) for key, row in rollup(source).items()}
    keyword_days_rebuild(source_id=source.pk)
    assert collected == {key: _fields(row) for key, row in rollup(source).items()}
    assert collected == {key: _fields(row) for key, row in rollup(import_ubi(personas)).items()}
    assert_same(source, evaluation_with_keywords(personas).keywords.values("normalized_text"))


def _fields(row) -> dict:
    return {field.name: getattr(row, field.name) for field in row._meta.fields
            if field.name not in ("id", "source")}


def test_the_migration_fills_the_rollup_of_sources_made_before_it(personas):
    sources = [import_ubi(personas), import_csv(personas),
               stored(personas, *random_log(np.random.default_rng(5), 12, 4))]
    before = {source.pk: {key: _fields(row) for key, row in rollup(source).items()}
              for source in sources}
    BehaviourKeywordDay.objects.all().delete()
    migration = importlib.import_module("behaviour.migrations.0004_keyword_days")
    migration.rebuild_every_source(apps, None)
    assert before == {source.pk: {key: _fields(row) for key, row in rollup(source).items()}
                      for source in sources}
    assert BehaviourSearches.objects.exists()


def orm_window_sums(source, keyword_texts, k, start_on, end_on) -> dict:
    """What behaviour.rollup.window_sums adds up, as the ORM adds it up in two queries."""
    rows = BehaviourKeywordDay.objects.filter(source=source, keyword__in=keyword_texts,
                                              whole=False)
    if start_on is not None:
        rows = rows.filter(day__gte=start_on)
    if end_on is not None:
        rows = rows.filter(day__lte=end_on)
    found = rows.aggregate(**{f"all_{name}": Sum(name) for name in SUMMED},
                           **{f"all_{name}": Max(name) for name in DEEPEST})
    shown = sum((F(f"impressions_{p}") for p in range(2, min(k, 10) + 1)),
                F("impressions_1"))
    clicked = sum((F(f"clicks_{p}") for p in range(2, min(k, 10) + 1)), F("clicks_1"))
    per_keyword = rows.values("keyword").annotate(
        deepest=Max("count_depth"), shown=Sum(shown), clicked=Sum(clicked)).filter(
        deepest__gt=0).annotate(ctr=Cast("clicked", FloatField()) / NullIf(
            Cast("shown", FloatField()), 0.0)).aggregate(mean=Avg("ctr"),
                                                         keywords=Count("keyword"))
    return {**{name.removeprefix("all_"): value for name, value in found.items()},
            **per_keyword}


@pytest.mark.parametrize("seed", [8, 9])
def test_the_window_statement_is_the_orms_answer(personas, seed):
    source = stored(personas, *random_log(np.random.default_rng(seed), keywords=30, days=6))
    texts = evaluation_of(personas, [f"kw {n}" for n in range(0, 30, 2)] + ["unseen"])
    for k in (1, 3, 10, 20):
        for start, end in ((date(2026, 10, 2), date(2026, 10, 4)), (None, date(2026, 10, 1)),
                           (date(2026, 10, 5), None), (date(2026, 12, 1), None)):
            found = window_sums(source_id=source.pk, keyword_texts=texts, k=k,
                                start_on=start, end_on=end)
            expected = orm_window_sums(source, texts, k, start, end)
            # Doubles added up in another order agree to the last bits.
            for name in ("mean", "dwell_seconds_sum"):
                assert close(found.pop(name), expected.pop(name))
            assert {name: value or 0 for name, value in found.items()} == {
                name: value or 0 for name, value in expected.items()}
    assert window_sums(source_id=source.pk, keyword_texts=texts, k=10,
                       start_on=date(2026, 10, 2), end_on=date(2026, 10, 4))["keywords"] > 0


def test_a_window_over_every_day_of_the_log_reads_the_whole_rows(
        personas, django_assert_num_queries):
    counts, searches = random_log(np.random.default_rng(10), keywords=8, days=4)
    source = stored(personas, counts, searches)
    texts = evaluation_of(personas, [f"kw {n}" for n in range(8)])
    first, last = min(row.day for row in counts), max(row.day for row in counts)
    # The day rows are not read: were they, the doubled figures would show.
    BehaviourKeywordDay.objects.filter(source=source, whole=True).update(
        impressions_1=F("impressions_1") * 2)
    whole = summary_from_rollup(source=source, keyword_texts=texts)
    with django_assert_num_queries(2 + (connection.vendor == "postgresql")):
        covering = summary_from_rollup(source=source, keyword_texts=texts,
                                       start_on=first - timedelta(days=1), end_on=last)
    assert covering.impressions == whole.impressions
    assert covering.impressions > sum(row.impressions for row in counts)
    # One day short: the day rows, not doubled.
    short = summary_from_rollup(source=source, keyword_texts=texts, start_on=first,
                                end_on=last - timedelta(days=1))
    assert short.impressions == sum(row.impressions for row in counts if row.day < last)


def test_a_window_over_a_csv_holds_nothing(personas):
    source = import_csv(personas)
    texts = evaluation_of(personas, list(BehaviourCount.objects.filter(
        source=source).values_list("keyword", flat=True).distinct()))
    assert summary_from_rollup(source=source, keyword_texts=texts).impressions > 0
    empty = summary_from_rollup(source=source, keyword_texts=texts,
                                start_on=date(2000, 1, 1), end_on=date(2100, 1, 1))
    assert (empty.impressions, empty.pooled, empty.keywords_with_behaviour) == (0, None, 0)


@pytest.mark.parametrize("seed", [6, 7])
def test_the_first_clicks_sum_is_the_orms_lists_added_up(personas, seed):
    from collections import Counter

    from behaviour.rollup import first_clicks_by_position

    source = stored(personas, *random_log(np.random.default_rng(seed), keywords=12, days=5))
    searches = BehaviourSearches.objects.filter(source=source, keyword__in=["kw 1", "kw 4",
                                                                           "kw 7", "kw 9"])
    expected = Counter()
    for firsts in searches.values_list("first_clicks", flat=True):
        for position, count in enumerate(firsts, start=1):
            expected[position] += count
    assert sum(expected.values()) > 0
    found = first_clicks_by_position(searches)
    assert {position: total for position, total in found.items() if total} == {
        position: total for position, total in expected.items() if total}
