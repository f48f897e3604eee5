"""Schedule and ScheduleRun moved from the evaluations app to schedules (evaluations 0015,
schedules 0001): the rows stay in their tables either way, and the content types (with the
permissions that point at them) change app label and keep their ids."""

import pytest
from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from schedules.models import Schedule, ScheduleRun
from tests.schedules.builders import run_of, schedule_of

BEFORE = [("schedules", None), ("evaluations", "0014_evaluation_fetch_sent_at")]


def migrate(targets) -> None:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)


def labels(content_type_ids: list[int]) -> list[tuple[str, str]]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT app_label, model FROM django_content_type WHERE id IN (%s, %s)"
                       " ORDER BY model", content_type_ids)
        return cursor.fetchall()


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow_reason("migrates the database back over two migrations and forward again")
def test_the_move_keeps_the_rows_the_content_types_and_their_permissions(personas):
    schedule = schedule_of(personas.team, personas.lead)
    run = run_of(schedule, hours_ago=1)
    ContentType.objects.clear_cache()
    types = [ContentType.objects.get_for_model(Schedule).pk,
             ContentType.objects.get_for_model(ScheduleRun).pk]
    permissions = sorted(Permission.objects.filter(content_type_id__in=types)
                         .values_list("pk", "codename"))
    assert len(permissions) == 8
    assert labels(types) == [("schedules", "schedule"), ("schedules", "schedulerun")]

    migrate(BEFORE)
    assert labels(types) == [("evaluations", "schedule"), ("evaluations", "schedulerun")]
    with connection.cursor() as cursor:
        cursor.execute("SELECT name FROM evaluations_schedule WHERE id = %s", [schedule.pk])
        assert cursor.fetchone() == ("Nightly",)

    migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
    ContentType.objects.clear_cache()
    assert labels(types) == [("schedules", "schedule"), ("schedules", "schedulerun")]
    assert [ContentType.objects.get_for_model(Schedule).pk,
            ContentType.objects.get_for_model(ScheduleRun).pk] == types
    assert sorted(Permission.objects.filter(content_type_id__in=types)
                  .values_list("pk", "codename")) == permissions
    assert ScheduleRun.objects.get().evaluation_id == run.evaluation_id
    assert Schedule.objects.get().name == "Nightly"
