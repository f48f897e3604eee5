"""The weights and tags columns (evaluations 0017) keep every row: rows written before them
come back with weight 1, no tags and traffic segments off at 50 / 80, and migrating back
keeps the rows too."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from evaluations.models import Keyword, KeywordSet, QuerySetKeyword
from evaluations.query_sets import services as query_set_services
from tests.evaluations.factories import EvaluationFactory

BEFORE = [("evaluations", "0016_query_set_model_named_keyword_set")]


def migrate(targets) -> None:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)


def rows(table: str, columns: str) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {columns} FROM {table} ORDER BY id")
        return cursor.fetchall()


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow_reason("migrates the database back over one migration and forward again")
def test_the_migration_keeps_every_row_with_weight_1_and_no_tags(personas):
    evaluation = EvaluationFactory(team=personas.team)
    Keyword.objects.bulk_create([
        Keyword(evaluation=evaluation, position=n, text=f"k{n}", normalized_text=f"k{n}")
        for n in (1, 2, 3)])
    query_set = query_set_services.query_set_create(
        team=personas.team, created_by=personas.lead, name="Shoes", keywords=["a", "b"])
    keywords = rows("evaluations_keyword", "id, evaluation_id, position, text")
    set_keywords = rows("evaluations_querysetkeyword", "id, version_id, position, text")

    migrate(BEFORE)
    assert rows("evaluations_keyword", "id, evaluation_id, position, text") == keywords
    assert rows("evaluations_querysetkeyword", "id, version_id, position, text") == set_keywords
    with connection.cursor() as cursor:  # a row written before the columns existed
        cursor.execute("INSERT INTO evaluations_keyword (evaluation_id, position, text, "
                       "normalized_text, fetch_status, fetch_error) "
                       "VALUES (%s, 4, 'k4', 'k4', 'pending', '')", [evaluation.pk])

    migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
    assert list(Keyword.objects.order_by("id").values_list("text", "weight", "tags")) == [
        ("k1", 1, []), ("k2", 1, []), ("k3", 1, []), ("k4", 1, [])]
    assert list(QuerySetKeyword.objects.order_by("id").values_list(
        "text", "weight", "tags")) == [("a", 1, []), ("b", 1, [])]
    assert KeywordSet.objects.filter(pk=query_set.pk).values_list(
        "traffic_segments", "traffic_head_cut", "traffic_torso_cut").get() == (False, 50, 80)
