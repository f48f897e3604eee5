"""The trail's retention: the one path by which rows leave it, and on PostgreSQL the only
DELETE its trigger lets through."""

from datetime import UTC, datetime, timedelta

import pytest
from django.core.management import call_command
from django.db import DatabaseError, connection, transaction

from audit import tasks
from audit.models import Action, AuditEvent
from audit.services import audit_events_prune
from tests.conftest import skip_or_fail

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)




def seeded(*days_ago: float) -> None:
    """Events that many days before NOW, inserted with their time (an UPDATE would be
    refused on PostgreSQL)."""
    AuditEvent.objects.bulk_create(
        AuditEvent(action=Action.SIGN_IN, actor_label=f"{days} days ago",
                   at=NOW - timedelta(days=days)) for days in days_ago)


def labels() -> list[str]:
    return sorted(AuditEvent.objects.exclude(action=Action.TRAIL_PRUNED)
                  .values_list("actor_label", flat=True))


def test_events_older_than_the_retention_are_deleted_and_the_deletion_recorded():
    seeded(400, 91, 89.9, 1)
    assert audit_events_prune(older_than_days=90, now=NOW) == 2
    assert labels() == ["1 days ago", "89.9 days ago"]
    pruned = AuditEvent.objects.get(action=Action.TRAIL_PRUNED)
    assert (pruned.actor_id, pruned.actor_label, pruned.team_id) == (None, "retention", None)
    assert pruned.changes == {"before": [None, "2026-03-03T12:00:00+00:00"],
                              "deleted": [None, 2]}


def test_nothing_to_delete_records_nothing():
    seeded(10)
    assert audit_events_prune(older_than_days=90, now=NOW) == 0
    assert AuditEvent.objects.count() == 1


def test_deletes_go_in_batches(monkeypatch):
    monkeypatch.setattr("audit.services.PRUNE_BATCH", 2)
    seeded(100, 101, 102, 103, 104, 1)
    assert audit_events_prune(older_than_days=90, now=NOW) == 5
    assert labels() == ["1 days ago"]


def test_a_retention_under_a_day_is_refused():
    with pytest.raises(ValueError, match="at least 1"):
        audit_events_prune(older_than_days=0, now=NOW)


def test_the_daily_task_and_the_command_keep_everything_by_default(settings):
    seeded(5000)
    assert settings.AUDIT_RETENTION_DAYS == 0
    assert tasks.prune_expired() == 0
    call_command("audit_prune")
    assert labels() == ["5000 days ago"]


def test_the_daily_task_and_the_command_apply_the_setting(settings):
    AuditEvent.objects.bulk_create([
        AuditEvent(action=Action.SIGN_IN, actor_label="old",
                   at=datetime(2020, 1, 1, tzinfo=UTC)),
        AuditEvent(action=Action.SIGN_IN, actor_label="new")])
    settings.AUDIT_RETENTION_DAYS = 365
    assert tasks.prune_expired() == 1
    assert labels() == ["new"]
    AuditEvent.objects.bulk_create([
        AuditEvent(action=Action.SIGN_IN, actor_label="older",
                   at=datetime(2019, 1, 1, tzinfo=UTC))])
    call_command("audit_prune", "--days", "30")
    assert labels() == ["new"]


def test_postgresql_lets_only_the_retention_job_delete_and_only_old_rows():
    if connection.vendor != "postgresql":
        skip_or_fail("the append-only trigger is PostgreSQL's: set DATABASE_URL")
    seeded(100, 1)
    old = AuditEvent.objects.get(actor_label="100 days ago")
    new = AuditEvent.objects.get(actor_label="1 days ago")

    def refused(change, *, prune_before: datetime | None = None) -> None:
        with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
            if prune_before is not None:
                with connection.cursor() as cursor:
                    cursor.execute("SELECT set_config('searchtweak.audit_prune_before', %s, "
                                   "true)", [prune_before.isoformat()])
            change()

    # Without the retention job's setting: neither row may go, nor change.
    refused(lambda: AuditEvent.objects.filter(pk=old.pk).delete())
    # With it: a newer row still may not go, and no row may change.
    refused(lambda: AuditEvent.objects.filter(pk=new.pk).delete(),
            prune_before=NOW - timedelta(days=90))
    refused(lambda: AuditEvent.objects.filter(pk=old.pk).update(actor_label="x"),
            prune_before=NOW - timedelta(days=90))
    # The job deletes the old row; its permission ended with its transaction.
    assert audit_events_prune(older_than_days=90, now=NOW) == 1
    refused(lambda: AuditEvent.objects.filter(pk=new.pk).delete())
    assert labels() == ["1 days ago"]
