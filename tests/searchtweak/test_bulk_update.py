"""searchtweak.bulk_insert's bulk_update and bulk_insert_rows write what Django's
bulk_update and one instance per row would (a fetch's store spent most
of its Python time building CASE WHEN expressions and FeedbackSlot instances).

Runs on the database of the run: SQLite by default, PostgreSQL with DATABASE_URL."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from evaluations.models import Keyword, Snapshot
from judgments.models import FeedbackSlot
from searchtweak.bulk_insert import bulk_insert_rows, bulk_update
from tests.evaluations.factories import fetchable_evaluation

pytestmark = pytest.mark.django_db

AWKWARD = "tab\there, new\nline, back\\slash, quote ' \" and ü"


def test_bulk_update_writes_each_row_its_own_values_in_one_statement():
    evaluation = fetchable_evaluation(url="http://127.0.0.1:9", keywords=["a", "b", "c"])
    first, second, third = Keyword.objects.filter(evaluation=evaluation).order_by("position")
    now = timezone.now()
    first.fetch_status, first.fetch_status_code, first.fetch_duration_ms = "fetched", 200, 7
    first.fetched_at, first.fetch_claimed_at, first.fetch_error = now, None, ""
    second.fetch_status, second.fetch_status_code, second.fetch_duration_ms = "failed", None, 0
    second.fetched_at = now - timedelta(seconds=3)
    second.fetch_claimed_at, second.fetch_error = now, AWKWARD
    fields = ["fetch_status", "fetch_status_code", "fetch_duration_ms", "fetched_at",
              "fetch_claimed_at", "fetch_error"]
    before_third = Keyword.objects.filter(pk=third.pk).values_list(*fields).get()
    with CaptureQueriesContext(connection) as queries:
        matched = bulk_update([first, second], fields)
    assert matched == 2
    if connection.vendor == "postgresql":
        assert [query["sql"].split(" ")[0] for query in queries] == ["UPDATE"]
    rows = {pk: tuple(values) for pk, *values in Keyword.objects.filter(
        evaluation=evaluation).values_list("pk", *fields)}
    assert rows[first.pk] == ("fetched", 200, 7, now, None, "")
    assert rows[second.pk] == ("failed", None, 0, now - timedelta(seconds=3), now, AWKWARD)
    assert rows[third.pk] == before_third
    assert bulk_update([], fields) == 0


def test_bulk_insert_rows_fills_the_other_columns_from_the_template():
    evaluation = fetchable_evaluation(url="http://127.0.0.1:9", keywords=["a"])
    keyword = Keyword.objects.get(evaluation=evaluation)
    snapshots = [Snapshot.objects.create(keyword=keyword, position=n, doc_id=f"d{n}",
                                         name=AWKWARD) for n in (1, 2)]
    template = FeedbackSlot(evaluation=evaluation, note=AWKWARD, unsure=True)
    with CaptureQueriesContext(connection) as queries:
        count = bulk_insert_rows(
            template, ["snapshot_id", "keyword_id", "index", "keyword_position", "position"],
            ((snapshot.pk, keyword.pk, index, 4, snapshot.position)
             for snapshot in snapshots for index in range(3)))
    assert count == 6
    if connection.vendor == "postgresql":
        assert [query["sql"].split(" (")[0] for query in queries] == [
            'COPY "judgments_feedbackslot"']
    assert sorted(FeedbackSlot.objects.filter(evaluation=evaluation).values_list(
        "snapshot__position", "keyword_id", "index", "keyword_position", "position",
        "note", "unsure", "grade", "user_id", "reason")) == [
        (position, keyword.pk, index, 4, position, AWKWARD, True, None, None, "")
        for position in (1, 2) for index in range(3)]


def test_bulk_insert_rows_writes_a_json_field_and_a_one_to_one_key():
    """A JSON value is prepared (psycopg copies no dict as it is) and a one-to-one primary
    key given with the rows is written: the recompute's dashboard shares."""
    from metrics.models import KeywordDashboardShare

    evaluation = fetchable_evaluation(url="http://127.0.0.1:9", keywords=["a", "b"])
    first, second = Keyword.objects.filter(evaluation=evaluation).order_by("position")
    shares = {first.pk: {"p:3:3:0:1:1": 2, AWKWARD: 1}, second.pk: {}}
    with CaptureQueriesContext(connection) as queries:
        written = bulk_insert_rows(KeywordDashboardShare(evaluation=evaluation),
                                   ["keyword_id", "counts"], shares.items())
    assert written == 2
    if connection.vendor == "postgresql":
        assert [query["sql"].split(" ")[0] for query in queries] == ["COPY"]
    assert dict(KeywordDashboardShare.objects.filter(evaluation=evaluation)
                .values_list("keyword_id", "counts")) == shares


def test_bulk_insert_writes_json_fields_as_django_would():
    """A JSON value goes as its text (json.dumps, the field's encoder): the same rows as
    bulk_create's, awkward text and nesting included, in one COPY on PostgreSQL."""
    from searchtweak.bulk_insert import bulk_insert

    evaluation = fetchable_evaluation(url="http://127.0.0.1:9", keywords=["a"])
    keyword = Keyword.objects.get(evaluation=evaluation)
    fields = [{"price": 59.5, "tags": [AWKWARD, 3], "nested": {"ü": None, "n": [{}]}}, {},
              {"quote": "\\\"", "big": 2**53 + 1}]
    made = [Snapshot(None, keyword.pk, position, f"d{position}", AWKWARD, "", value)
            for position, value in enumerate(fields, start=1)]
    with CaptureQueriesContext(connection) as queries:
        bulk_insert(made, with_ids=True)
    if connection.vendor == "postgresql":
        assert [query["sql"].split(" ")[0] for query in queries] == ["SELECT", "COPY"]
    assert all(snapshot.pk for snapshot in made)
    assert list(Snapshot.objects.filter(keyword=keyword).order_by("position").values_list(
        "pk", "name", "fields")) == [(snapshot.pk, AWKWARD, value)
                                     for snapshot, value in zip(made, fields, strict=True)]
