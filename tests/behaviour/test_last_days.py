"""The rows of the last 7 and 30 days (BehaviourKeywordLastDays, docs/decisions/0033): made
with the rollup by every writer, ending on the last day of the source's window, kept by
a collector's batches and made again by a task when a batch brings a new day; the
presets read them (one row a keyword) and give the figures the sums give. Runs on
SQLite and, with DATABASE_URL set, on PostgreSQL."""

import importlib
from datetime import UTC, date, datetime, time, timedelta

import numpy as np
import pytest
from django.apps import apps
from django.db import connection
from django.db.models import F, Sum
from django.test import override_settings

from behaviour import services
from behaviour.collector import collector_batch_store
from behaviour.importing import CountRow, SearchesRow
from behaviour.models import (
    BehaviourKeywordDay,
    BehaviourKeywordLastDays,
    BehaviourSource,
)
from behaviour.rollup import SUMMED, keyword_days_rebuild, last_days_catch_up
from behaviour.summary import online_summary, summary_from_rollup, summary_from_sums
from tests.behaviour.test_collector import collector as collector_source
from tests.behaviour.test_imports import event, import_csv, query
from tests.behaviour.test_rollup import assert_same, evaluation_of, random_log

pytestmark = pytest.mark.django_db

LAST = date(2026, 11, 9)
"""The last day of random_log(days=40), which starts on 1 October."""


def stored(personas, counts, searches, last_on=LAST, name="Random"):
    return services.behaviour_source_store_sums(
        team=personas.team, user=None, name=name, kind="ubi",
        window_start_at=datetime(2026, 10, 1, tzinfo=UTC),
        window_end_at=datetime.combine(last_on, time(23, 30), tzinfo=UTC), search_count=0,
        event_count=0, counts=counts, searches=searches)


def last_days_rows(source) -> dict:
    return {(row.keyword, row.days): {name: getattr(row, name) for name in
                                      (*SUMMED, "count_depth", "first_click_depth")}
            for row in BehaviourKeywordLastDays.objects.filter(source=source)}


def day_rows_added_up(source, first_on: date, last_on: date) -> dict:
    """Each keyword's day rows on these days added up by the ORM: what its last-days row
    must hold."""
    found = BehaviourKeywordDay.objects.filter(
        source=source, whole=False, day__gte=first_on, day__lte=last_on).values(
        "keyword").annotate(**{f"all_{name}": Sum(name) for name in SUMMED})
    return {row["keyword"]: {name: row[f"all_{name}"] for name in SUMMED} for row in found}


def test_an_imported_log_has_its_last_7_and_30_days_ending_on_its_last_day(personas):
    source = stored(personas, *random_log(np.random.default_rng(21), keywords=20, days=40))
    source.refresh_from_db()
    assert source.last_days_on == LAST
    rows = last_days_rows(source)
    for days in (7, 30):
        expected = day_rows_added_up(source, LAST - timedelta(days=days - 1), LAST)
        assert len(expected) > 10
        found = {keyword: {name: values[name] for name in SUMMED}
                 for (keyword, preset), values in rows.items() if preset == days}
        for keyword in expected:
            # Dwell seconds are doubles added up in another order.
            assert found[keyword].pop("dwell_seconds_sum") == pytest.approx(
                expected[keyword].pop("dwell_seconds_sum"), rel=1e-12)
        assert found == expected


def test_the_presets_end_at_their_first_day_exactly(personas):
    # One document shown once a day, on the days each side of both presets' first days.
    counts = [CountRow("edge", "a", 1, LAST - timedelta(days=back), 2 ** back, 0, 0.0, 0)
              for back in (0, 6, 7, 29, 30)]
    searches = [SearchesRow("edge", row.day, 1, []) for row in counts]
    source = stored(personas, counts, searches)
    rows = last_days_rows(source)
    assert rows[("edge", 7)]["impressions_1"] == 2 ** 0 + 2 ** 6
    assert rows[("edge", 30)]["impressions_1"] == 2 ** 0 + 2 ** 6 + 2 ** 7 + 2 ** 29
    assert (rows[("edge", 7)]["searches"], rows[("edge", 30)]["searches"]) == (2, 4)


def test_the_presets_read_a_row_a_keyword_and_give_the_sums_figures(
        personas, django_assert_num_queries):
    counts, searches = random_log(np.random.default_rng(22), keywords=30, days=40)
    source = stored(personas, counts, searches)
    texts = evaluation_of(personas, [f"kw {n}" for n in range(0, 30, 2)] + ["unseen"])
    for days in (7, 30):
        assert_same(source, texts, start_on=LAST - timedelta(days=days - 1), end_on=LAST)
    week = {"start_on": LAST - timedelta(days=6), "end_on": LAST}
    expected = summary_from_sums(source=source, keyword_texts=texts, **week)
    # Were the day rows read, their doubled figures would show.
    BehaviourKeywordDay.objects.filter(source=source).update(
        impressions_1=F("impressions_1") * 2)
    # On PostgreSQL after its planner settings (behaviour.rollup.planner_settings).
    with django_assert_num_queries(1 + (connection.vendor == "postgresql")):
        found = summary_from_rollup(source=source, keyword_texts=texts, **week)
    assert found.impressions == expected.impressions > 0
    # A day longer or shorter, or ending a day earlier, is not a preset: the day rows.
    for start_on, end_on in ((LAST - timedelta(days=7), LAST),
                             (LAST - timedelta(days=5), LAST),
                             (LAST - timedelta(days=7), LAST - timedelta(days=1))):
        other = summary_from_rollup(source=source, keyword_texts=texts, start_on=start_on,
                                    end_on=end_on)
        assert other.impressions > summary_from_sums(
            source=source, keyword_texts=texts, start_on=start_on, end_on=end_on).impressions


def test_a_csv_has_no_last_days(personas):
    source = import_csv(personas)
    source.refresh_from_db()
    assert source.last_days_on is None
    assert not BehaviourKeywordLastDays.objects.filter(source=source).exists()


def searches_on(day: date, prefix: str, keywords: list[str]) -> tuple[list, list]:
    """A search of each keyword at 10:00 on `day`, results A B C, its B clicked."""
    moment = datetime.combine(day, time(10), tzinfo=UTC).isoformat()
    queries = [query(f"{prefix}{n}", keyword, moment, ["A", "B", "C"])
               for n, keyword in enumerate(keywords)]
    events = [dict(event("click", f"{prefix}{n}", "B", 2, dwell=20, timestamp=moment),
                   event_id=f"{prefix}e{n}") for n in range(len(keywords))]
    return queries, events


def noon(day: date) -> datetime:
    return datetime.combine(day, time(12), tzinfo=UTC)


def made_again(source) -> dict:
    """The last-days rows as a whole rebuild of the source makes them."""
    kept = last_days_rows(source)
    keyword_days_rebuild(source_id=source.pk)
    rebuilt = last_days_rows(source)
    assert kept == rebuilt
    return rebuilt


def test_a_collectors_batches_keep_the_rows_and_a_new_day_leaves_them_to_a_task(
        personas, django_capture_on_commit_callbacks):
    source = collector_source(personas.team)
    first_day, next_day = date(2026, 11, 1), date(2026, 11, 2)
    texts = evaluation_of(personas, ["red shoes", "boots", "hats"])
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        collector_batch_store(source=source, now=noon(first_day),
                              **dict(zip(("queries", "events"), searches_on(
                                  first_day, "a", ["red shoes", "boots"]), strict=True)))
    assert len(callbacks) == 1  # the source's first day: the task makes every row
    source.refresh_from_db()
    assert source.last_days_on == first_day
    assert made_again(source)[("boots", 7)]["clicks_2"] == 1

    # Another batch on the same day: its keywords' rows are made in the batch.
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        collector_batch_store(source=source, now=noon(first_day),
                              **dict(zip(("queries", "events"), searches_on(
                                  first_day, "b", ["boots", "hats"]), strict=True)))
    assert callbacks == []
    rows = last_days_rows(source)
    assert (rows[("boots", 7)]["clicks_2"], rows[("hats", 30)]["searches"]) == (2, 1)
    assert made_again(source) == rows

    # A new day: the rows end on the day before until the task has run; the presets
    # read the day rows meanwhile, and give the sums' figures before and after.
    week = {"start_on": next_day - timedelta(days=6), "end_on": next_day}
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        collector_batch_store(source=source, now=noon(next_day),
                              **dict(zip(("queries", "events"), searches_on(
                                  next_day, "c", ["red shoes"]), strict=True)))
    source.refresh_from_db()
    assert (source.last_days_on, len(callbacks)) == (None, 1)
    assert last_days_rows(source)[("red shoes", 7)]["searches"] == 1
    expected = summary_from_sums(source=source, keyword_texts=texts, **week)
    assert expected.pooled.searches == 5
    assert online_summary(source=source, keyword_texts=texts, **week) == expected
    callbacks[0]()
    source.refresh_from_db()
    assert source.last_days_on == next_day
    assert last_days_rows(source)[("red shoes", 7)]["searches"] == 2
    assert online_summary(source=source, keyword_texts=texts, **week) == expected
    assert last_days_catch_up(source_id=source.pk) is False


def test_the_task_makes_the_rows_once(personas):
    source = stored(personas, *random_log(np.random.default_rng(23), keywords=5, days=10))
    before = last_days_rows(source)
    assert last_days_catch_up(source_id=source.pk) is False
    BehaviourSource.objects.filter(pk=source.pk).update(last_days_on=None)
    BehaviourKeywordLastDays.objects.filter(source=source).update(searches=0)
    assert last_days_catch_up(source_id=source.pk) is True
    assert last_days_rows(source) == before
    assert last_days_catch_up(source_id=source.pk + 1000) is False


def test_the_migration_makes_the_rows_of_sources_made_before_it(personas):
    sources = [stored(personas, *random_log(np.random.default_rng(24), 10, 35)),
               import_csv(personas)]
    before = {source.pk: last_days_rows(source) for source in sources}
    BehaviourKeywordLastDays.objects.all().delete()
    BehaviourSource.objects.update(last_days_on=None)
    migration = importlib.import_module("behaviour.migrations.0005_keyword_last_days")
    migration.last_days_of_every_source(apps, None)
    assert before == {source.pk: last_days_rows(source) for source in sources}
    assert BehaviourSource.objects.get(pk=sources[0].pk).last_days_on == LAST


@override_settings(BEHAVIOUR_COLLECTOR_RETENTION_HOURS=24 * 40)
def test_a_batch_on_the_first_day_of_the_last_30_makes_its_keywords_rows(
        personas, django_capture_on_commit_callbacks):
    source = collector_source(personas.team)
    last_on = date(2026, 11, 30)
    with django_capture_on_commit_callbacks(execute=True):
        collector_batch_store(source=source, now=noon(last_on), **dict(zip(
            ("queries", "events"), searches_on(last_on, "a", ["boots"]), strict=True)))
    # A late batch on the 30th day back (1 November) counts in the 30 days; one on the
    # 31st (31 October) in neither. Neither brings a new day: no task.
    for back, prefix, searches in ((29, "b", 2), (30, "c", 2)):
        day = last_on - timedelta(days=back)
        with django_capture_on_commit_callbacks(execute=True) as callbacks:
            collector_batch_store(source=source, now=noon(last_on), **dict(zip(
                ("queries", "events"), searches_on(day, prefix, ["boots"]), strict=True)))
        assert callbacks == []
        assert last_days_rows(source)[("boots", 30)]["searches"] == searches
        assert made_again(source)[("boots", 7)]["searches"] == 1


def test_with_the_broker_down_a_new_days_batch_is_stored_and_the_next_queues_again(
        personas, django_capture_on_commit_callbacks, monkeypatch):
    from behaviour import tasks

    source = collector_source(personas.team)
    first_day = date(2026, 11, 1)

    def broker_down(*args, **kwargs):
        raise ConnectionError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr(tasks.last_days_catch_up_task, "delay", broker_down)
    with django_capture_on_commit_callbacks(execute=True):
        stored = collector_batch_store(source=source, now=noon(first_day), **dict(zip(
            ("queries", "events"), searches_on(first_day, "a", ["boots"]), strict=True)))
    assert stored.queries_added == 1
    source.refresh_from_db()
    assert (source.search_count, source.last_days_on) == (1, None)
    # The broker back, a batch of the same day finds the rows behind and queues the task.
    monkeypatch.undo()
    with django_capture_on_commit_callbacks(execute=True):
        collector_batch_store(source=source, now=noon(first_day), **dict(zip(
            ("queries", "events"), searches_on(first_day, "b", ["boots"]), strict=True)))
    source.refresh_from_db()
    assert source.last_days_on == first_day
    assert last_days_rows(source)[("boots", 7)]["searches"] == 2


def test_the_sweep_queues_the_sources_left_behind_and_no_other(
        personas, django_capture_on_commit_callbacks, monkeypatch):
    from behaviour import tasks

    current = stored(personas, *random_log(np.random.default_rng(25), 4, 8))
    stale = stored(personas, *random_log(np.random.default_rng(26), 4, 8), name="Stale")
    BehaviourSource.objects.filter(pk=stale.pk).update(last_days_on=LAST - timedelta(days=1))
    import_csv(personas)
    collector_source(personas.team, name="Quiet")  # no batch yet: no window
    lost = collector_source(personas.team, name="Lost")
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        collector_batch_store(source=lost, now=noon(LAST), **dict(zip(
            ("queries", "events"), searches_on(LAST, "a", ["boots"]), strict=True)))
    assert len(callbacks) == 1  # never run: the task is lost
    queued = []
    monkeypatch.setattr(tasks, "last_days_dispatch", queued.append)
    assert tasks.last_days_sweep() == 2
    assert queued == [stale.pk, lost.pk]
    for source_id in queued:
        assert last_days_catch_up(source_id=source_id) is True
    assert tasks.last_days_sweep() == 0
    assert BehaviourSource.objects.get(pk=current.pk).last_days_on == LAST
