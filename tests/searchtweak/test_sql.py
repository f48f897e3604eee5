"""The hot path's hand-written statements (searchtweak.sql): prepared on PostgreSQL only
when DATABASE_PREPARED_STATEMENTS allows, since a transaction-mode pooler cannot keep them."""

import pytest
from django.db import DataError, connection, transaction

from metrics.selectors import changed_keywords
from searchtweak import sql
from tests.conftest import skip_or_fail
from tests.metrics.builders import build_evaluation

pytestmark = pytest.mark.django_db


def prepared_statements() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        return [row[0] for row in cursor.fetchall()]


@pytest.fixture
def postgresql():
    if connection.vendor != "postgresql":
        skip_or_fail("prepared statements are PostgreSQL's: set DATABASE_URL")
    connection.ensure_connection()
    threshold = connection.connection.prepare_threshold
    yield connection.connection
    connection.connection.prepare_threshold = threshold


@pytest.mark.parametrize("threshold, prepared", [(2, True), (None, False)])
def test_a_statement_run_twice_is_prepared_unless_the_setting_is_off(
    postgresql, threshold, prepared
):
    postgresql.prepare_threshold = threshold
    statement = f"SELECT %s::int + {threshold or 0} AS total"
    assert [sql.fetch_all(statement, [n]) for n in (1, 2, 3)] == [
        [(n + (threshold or 0),)] for n in (1, 2, 3)]
    assert sql.fetch_one(statement, [4]) == {"total": 4 + (threshold or 0)}
    expected = [f"SELECT $1::int + {threshold or 0} AS total"] if prepared else []
    assert [text for text in prepared_statements() if "AS total" in text] == expected


def test_the_recompute_reads_follow_the_setting_too(postgresql):
    """A worker behind a pooler runs them after every grade."""
    evaluation = build_evaluation(keywords={"lamp": ["a"]}, metrics=[("cg", 1, {})])
    keyword_id = evaluation.keywords.get().pk
    postgresql.prepare_threshold = None
    for _ in range(3):
        changed = changed_keywords(keyword_ids=[keyword_id], due_after=evaluation.created_at)
        assert [(row.keyword_id, row.evaluation_id) for row in changed] == [
            (keyword_id, evaluation.pk)]
    assert not [text for text in prepared_statements() if "recomputedue" in text]


def plan_cache_mode() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SHOW plan_cache_mode")
        return cursor.fetchone()[0]


@pytest.mark.django_db(transaction=True)
def test_a_generic_plan_statement_leaves_the_session_mode_as_it_was_even_when_it_fails(
    postgresql,
):
    assert sql.fetch_one("SELECT 6 / %s::int AS x", [2], generic_plan=True) == {"x": 3}
    assert plan_cache_mode() == "auto"
    # The SET goes in one pipeline with the statement: their transaction's failure undoes it.
    with pytest.raises(DataError, match="division by zero"):
        sql.fetch_one("SELECT 6 / %s::int AS x", [0], generic_plan=True)
    assert plan_cache_mode() == "auto"
    # Inside a transaction, the rollback to the savepoint does.
    with transaction.atomic():
        with pytest.raises(DataError), transaction.atomic():
            sql.fetch_one("SELECT 6 / %s::int AS x", [0], generic_plan=True)
        assert plan_cache_mode() == "auto"


def test_raw_rows_have_one_json_decoder():
    from tests.source_scan import matching_lines

    # A JSON column from raw SQL is text on some drivers: searchtweak.sql.json_value
    # decodes it, and no module keeps its own copy of that rule.
    found = matching_lines([r"json\.loads\(\w+\) if isinstance\(\w+, str\)"])
    assert set(found) == {"searchtweak/sql.py"}, found


# Where hand-written SQL may run: each app's queries.py and the helpers running it (sql.py,
# bulk_insert.py's COPY); the grade-writing statements in the one module that writes grades;
# the queue's claims (their text in judgments.queries); the demo engine's full-text search.
RAW_SQL_RUNS = [r"cursor\(\)", r"\.raw\(", r"\bsql\.(fetch_one|fetch_all|fetch_row|execute)\("]
RAW_SQL_PLACES = {"judgments/queries.py", "metrics/queries.py", "judges/queries.py",
                  "searchtweak/queries.py", "searchtweak/sql.py", "searchtweak/bulk_insert.py",
                  "judgments/grading.py",
                  "judgments/queue.py", "evaluations/demo.py", "audit/queries.py",
                  # behaviour's: the rollup's statements and the first clicks' sum
                  # (tests/behaviour/test_rollup.py holds them to the ORM's answer).
                  "behaviour/rollup.py"}


def test_raw_sql_runs_only_in_the_queries_modules():
    from tests.source_scan import matching_lines

    found = matching_lines(RAW_SQL_RUNS)
    assert set(found) <= RAW_SQL_PLACES, {p: lines for p, lines in found.items()
                                          if p not in RAW_SQL_PLACES}
    assert {"metrics/queries.py", "judgments/queries.py",
            "searchtweak/queries.py"} <= set(found)  # a scan that finds nothing cannot fail


def test_no_statement_names_a_table_by_hand():
    from tests.source_scan import matching_lines

    # Table names come from the models' _meta (connection.ops.quote_name(...db_table)).
    assert matching_lines([
        # (metrics_engine is the metric engine's package, not a table of the metrics app)
        r'(?i)\b(FROM|JOIN|UPDATE|INTO)\s+\\?"?(evaluations|judgments|metrics|searchtweak)_'
        r'(?!engine\b)\w+',
    ]) == {}
