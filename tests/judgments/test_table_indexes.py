"""The indexes of the tables a recompute or fetch of 100,000 keywords fills (a million
slots by COPY, 600,000 keyword values by upsert): each index costs every row, so none
repeats another or is the leading part of one that serves the same look-ups."""

import pytest
from django.db import connection

from judgments.models import FeedbackSlot
from metrics.models import KeywordMetricValue

pytestmark = pytest.mark.django_db

# SQLite's introspection of a partial index gives no condition: the model says.
PARTIAL = {"slot_queue_idx", "slot_held_idx", "slot_one_per_person_per_snapshot"}


def _indexes(model) -> dict[str, tuple[tuple[tuple[str, str], ...], bool]]:
    """name: ((column, order) ..., partial?) of every index on the model's table,
    constraints included."""
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, model._meta.db_table)
    named = {}
    for name, info in constraints.items():
        if (not info["index"] and not info["unique"]) or info["primary_key"]:
            continue
        orders = info.get("orders") or ["ASC"] * len(info["columns"])
        named[name] = (tuple(zip(info["columns"], orders, strict=True)), name in PARTIAL)
    return named


@pytest.mark.parametrize("model", [FeedbackSlot, KeywordMetricValue])
def test_no_full_index_repeats_or_prefixes_another(model):
    indexes = _indexes(model)
    full = [columns for columns, partial in indexes.values() if not partial]
    assert len(full) == len(set(full)), indexes
    for columns in full:
        longer = [other for other in full if len(other) > len(columns)
                  and other[:len(columns)] == columns]
        assert not longer, (columns, longer)


def test_the_slots_look_ups_by_snapshot_keyword_and_evaluation_keep_an_index():
    leading = {columns[0][0] for columns, partial in _indexes(FeedbackSlot).values()
               if not partial}
    assert {"snapshot_id", "keyword_id", "evaluation_id", "user_id"} <= leading


def test_the_values_look_ups_by_keyword_and_by_metric_keep_an_index():
    leading = {columns[0][0] for columns, _ in _indexes(KeywordMetricValue).values()}
    assert {"keyword_id", "metric_id"} <= leading
