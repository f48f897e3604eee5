"""Every statement of evaluations.queries does what the same write through the ORM does
(SQLite by default; PostgreSQL with DATABASE_URL)."""

from datetime import timedelta

import pytest
from django.db.models import Case, F, Value, When
from django.db.models.functions import Coalesce
from django.utils import timezone

from evaluations import queries
from evaluations.models import Keyword
from searchtweak import sql
from tests.conftest import skip_or_fail
from tests.evaluations.factories import KeywordFactory

pytestmark = pytest.mark.django_db

COLUMNS = ("pk", "version", "computed_version", "dirty_since")


@pytest.fixture
def keywords() -> list[Keyword]:
    """A clean keyword, a dirty one, and one whose values are newer than version 1."""
    then = timezone.now() - timedelta(minutes=3)
    clean = KeywordFactory(version=2, computed_version=2)
    dirty = KeywordFactory(version=3, computed_version=1, dirty_since=then)
    ahead = KeywordFactory(version=4, computed_version=3, dirty_since=then)
    return [clean, dirty, ahead]


def state(keywords: list[Keyword]) -> list[tuple]:
    return list(Keyword.objects.filter(pk__in=[k.pk for k in keywords]).order_by("pk")
                .values_list(*COLUMNS))


def same_as_orm(keywords, raw, orm) -> list[tuple]:
    """Run the raw write, note the rows, put them back, run the ORM's, compare."""
    before = state(keywords)
    raw()
    after_raw = state(keywords)
    for pk, version, computed, dirty in before:
        Keyword.objects.filter(pk=pk).update(version=version, computed_version=computed,
                                             dirty_since=dirty)
    orm()
    assert state(keywords) == after_raw
    return after_raw


def test_bump_if_dirty(keywords):
    clean, dirty, _ = keywords
    for keyword in (clean, dirty):
        answers = []
        same_as_orm(
            keywords,
            lambda k=keyword, answers=answers: answers.append(
                queries.keyword_version_bump_if_dirty(keyword_id=k.pk)),
            lambda k=keyword, answers=answers: answers.append(bool(
                Keyword.objects.filter(pk=k.pk, dirty_since__isnull=False)
                .update(version=F("version") + 1))))
        assert answers == [keyword is dirty] * 2


def test_bump(keywords):
    now = timezone.now()
    for keyword in keywords[:2]:
        after = same_as_orm(
            keywords,
            lambda k=keyword: queries.keyword_version_bump(keyword_id=k.pk, now=now),
            lambda k=keyword: Keyword.objects.filter(pk=k.pk).update(
                version=F("version") + 1, dirty_since=Coalesce(F("dirty_since"), Value(now))))
        row = dict((r[0], r) for r in after)[keyword.pk]
        assert row[1] == keyword.version + 1
        assert row[3] == (now if keyword.dirty_since is None else keyword.dirty_since)


def test_mark_computed(keywords):
    clean, dirty, ahead = keywords
    # clean: computed again at its version; dirty: at its version (mark cleared); ahead:
    # at a version older than the one its values hold (nothing written).
    versions = [(clean.pk, 2), (dirty.pk, 3), (ahead.pk, 2)]
    written = []

    def orm() -> None:
        for pk, version in versions:
            Keyword.objects.filter(pk=pk, computed_version__lte=version).update(
                computed_version=version,
                dirty_since=Case(When(version=version, then=Value(None)),
                                 default=F("dirty_since")))

    after = same_as_orm(keywords, lambda: written.extend(
        queries.keywords_mark_computed(versions)), orm)
    by_pk = {row[0]: row for row in after}
    assert by_pk[dirty.pk][2:] == (3, None)
    assert by_pk[ahead.pk][2:] == (3, ahead.dirty_since)
    assert sorted((pk, sql.time_value(dirty_since)) for pk, dirty_since in written) == sorted(
        [(clean.pk, None), (dirty.pk, None)])


def test_bump_cte_on_postgresql(keywords):
    if not sql.is_postgresql():
        skip_or_fail("the one-statement grade is PostgreSQL's: set DATABASE_URL")
    clean, dirty, _ = keywords
    now = timezone.now()
    cte = queries.keyword_version_bump_cte(name="dirty", graded="graded")
    rows = []
    same_as_orm(
        keywords,
        lambda: rows.extend(sql.fetch_all(
            "WITH graded (keyword_id, changed) AS (VALUES (%s, TRUE), (%s, FALSE)), "
            f"{cte} SELECT dirty_since FROM dirty", [clean.pk, dirty.pk, now])),
        lambda: Keyword.objects.filter(pk=clean.pk).update(
            version=F("version") + 1, dirty_since=Coalesce(F("dirty_since"), Value(now))))
    assert rows == [(now,)]
