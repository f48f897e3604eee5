"""Every statement of metrics.queries that writes the keywords' recompute marks does what the
same write through the ORM does (SQLite by default; PostgreSQL with DATABASE_URL)."""

from datetime import timedelta

import pytest
from django.db import connection
from django.db.models import Case, F, Value, When
from django.db.models.functions import Coalesce
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from evaluations.models import Keyword
from metrics import queries
from metrics.models import KeywordRecomputeMark as Mark
from metrics.recompute.marks import keywords_version_bump
from searchtweak import sql
from tests.conftest import skip_or_fail
from tests.evaluations.factories import KeywordFactory
from tests.recompute_state import mark_of, marks_set

pytestmark = pytest.mark.django_db

COLUMNS = ("keyword_id", "version", "computed_version", "dirty_since")


@pytest.fixture
def keywords() -> list[Keyword]:
    """A clean keyword, a dirty one, one whose values are newer than version 1, and one
    never marked (no row: version 0, clean)."""
    then = timezone.now() - timedelta(minutes=3)
    clean, dirty, ahead, fresh = KeywordFactory.create_batch(4)
    marks_set([clean], version=2, computed_version=2)
    marks_set([dirty], version=3, computed_version=1, dirty_since=then)
    marks_set([ahead], version=4, computed_version=3, dirty_since=then)
    return [clean, dirty, ahead, fresh]


def state(keywords: list[Keyword]) -> list[tuple]:
    return list(Mark.objects.filter(keyword_id__in=[k.pk for k in keywords])
                .order_by("keyword_id").values_list(*COLUMNS))


def same_as_orm(keywords, raw, orm) -> list[tuple]:
    """Run the raw write, note the rows, put them back, run the ORM's, compare."""
    before = state(keywords)
    raw()
    after_raw = state(keywords)
    Mark.objects.filter(keyword_id__in=[k.pk for k in keywords]).delete()
    for pk, version, computed, dirty in before:
        marks_set([pk], version=version, computed_version=computed, dirty_since=dirty)
    orm()
    assert state(keywords) == after_raw
    return after_raw


def orm_bump(keyword: Keyword, now) -> None:
    """The ORM's version bump: a first mark at version 1, or the next version."""
    mark, created = Mark.objects.get_or_create(
        keyword=keyword, defaults={"evaluation_id": keyword.evaluation_id, "version": 1,
                                   "dirty_since": now})
    if not created:
        Mark.objects.filter(pk=mark.pk).update(
            version=F("version") + 1, dirty_since=Coalesce(F("dirty_since"), Value(now)))


def test_bump_if_dirty(keywords):
    clean, dirty, _, fresh = keywords
    for keyword in (clean, dirty, fresh):
        answers = []
        same_as_orm(
            keywords,
            lambda k=keyword, answers=answers: answers.append(
                queries.keyword_version_bump_if_dirty(keyword_id=k.pk)),
            lambda k=keyword, answers=answers: answers.append(bool(
                Mark.objects.filter(keyword=k, dirty_since__isnull=False)
                .update(version=F("version") + 1))))
        assert answers == [keyword is dirty] * 2


def test_bump_if_dirty_of_many(keywords):
    _clean, dirty, ahead, _fresh = keywords
    answers = []
    same_as_orm(
        keywords,
        lambda: answers.append(queries.keywords_version_bump_if_dirty(
            keyword_ids=[k.pk for k in keywords])),
        lambda: [Mark.objects.filter(keyword=k, dirty_since__isnull=False)
                 .update(version=F("version") + 1) for k in keywords])
    assert answers == [[dirty.pk, ahead.pk]]


def test_marks_bump_of_many_says_which_turned_dirty(keywords):
    # Two statements for many keywords; the same marks and answer as one keyword at a time.
    clean, _dirty, _ahead, fresh = keywords
    now = timezone.now()
    before = {k.pk: mark_of(k) for k in keywords}
    assert keywords_version_bump(keyword_ids=[k.pk for k in keywords]) == sorted(
        [clean.pk, fresh.pk])
    for k in keywords:
        after = mark_of(k)
        assert after.version == before[k.pk].version + 1
        assert after.dirty_since is not None and (
            after.dirty_since == before[k.pk].dirty_since or after.dirty_since >= now)


def test_bump(keywords):
    now = timezone.now()
    clean, dirty, _, fresh = keywords
    for keyword in (clean, dirty, fresh):
        before = mark_of(keyword)
        after = same_as_orm(
            keywords,
            lambda k=keyword: queries.keywords_version_bump(keyword_ids=[k.pk], now=now),
            lambda k=keyword: orm_bump(k, now))
        row = dict((r[0], r) for r in after)[keyword.pk]
        assert row[1] == before.version + 1
        assert row[3] == (now if before.dirty_since is None else before.dirty_since)


def test_bump_of_many_and_of_an_evaluation(keywords):
    now = timezone.now()
    same_as_orm(
        keywords,
        lambda: queries.keywords_version_bump(keyword_ids=[k.pk for k in keywords], now=now),
        lambda: [orm_bump(k, now) for k in keywords])
    fresh = keywords[3]
    Keyword.objects.filter(pk=fresh.pk).update(fetch_status=Keyword.FetchStatus.FETCHED)
    assert queries.evaluation_fetched_keywords_version_bump(
        evaluation_id=fresh.evaluation_id, now=now) == 1
    assert (mark_of(fresh).version, mark_of(fresh).evaluation_id) == (2, fresh.evaluation_id)


def test_mark_computed(keywords):
    clean, dirty, ahead, fresh = keywords
    # clean: computed again at its version; dirty: at its version (mark cleared); ahead:
    # at a version older than the one its values hold (nothing written).
    # fresh: no mark, so nothing to write.
    versions = [(clean.pk, 2), (dirty.pk, 3), (ahead.pk, 2), (fresh.pk, 0)]
    ahead_dirty_since = mark_of(ahead).dirty_since
    written = []

    def orm() -> None:
        for pk, version in versions:
            Mark.objects.filter(keyword_id=pk, computed_version__lte=version).update(
                computed_version=version,
                dirty_since=Case(When(version=version, then=Value(None)),
                                 default=F("dirty_since")))

    after = same_as_orm(keywords, lambda: written.extend(
        queries.keywords_mark_computed(versions)), orm)
    by_pk = {row[0]: row for row in after}
    assert by_pk[dirty.pk][2:] == (3, None)
    assert by_pk[ahead.pk][2:] == (3, ahead_dirty_since)
    assert fresh.pk not in by_pk
    assert sorted((pk, sql.time_value(dirty_since)) for pk, dirty_since in written) == sorted(
        [(clean.pk, None), (dirty.pk, None)])


def test_bump_cte_on_postgresql(keywords):
    if not sql.is_postgresql():
        skip_or_fail("the one-statement grade is PostgreSQL's: set DATABASE_URL")
    clean, dirty, _, fresh = keywords
    now = timezone.now()
    cte = queries.keyword_version_bump_cte(name="dirty", graded="graded")
    rows = []
    same_as_orm(
        keywords,
        lambda: rows.extend(sql.fetch_all(
            "WITH graded (keyword_id, changed) AS (VALUES (%s, TRUE), (%s, FALSE), (%s, TRUE)),"
            f" {cte} SELECT dirty_since FROM dirty", [clean.pk, dirty.pk, fresh.pk, now])),
        lambda: [orm_bump(clean, now), orm_bump(fresh, now)])
    assert rows == [(now,), (now,)]


def test_marks_bump_of_many_is_two_statements_whatever_their_number(keywords):
    # A judge's store of several batches bumps their keywords at once, not one or two
    # statements a keyword.
    more = KeywordFactory.create_batch(6)
    with CaptureQueriesContext(connection) as captured:
        keywords_version_bump(keyword_ids=[k.pk for k in keywords + more])
    assert len(captured.captured_queries) == 2
