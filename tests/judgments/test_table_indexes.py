"""The slots' indexes: a million slots go in by COPY, and each index costs every row, so none
repeats another or is the leading part of one that serves the same look-ups."""

import pytest
from django.db import connection

from judgments.models import FeedbackSlot

pytestmark = pytest.mark.django_db


def _indexes() -> dict[str, tuple[tuple[str, ...], bool]]:
    """name: (columns, partial?) of every index on the slots' table, constraints included."""
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(
            cursor, FeedbackSlot._meta.db_table)
    named = {}
    for name, info in constraints.items():
        if (not info["index"] and not info["unique"]) or info["primary_key"]:
            continue
        # SQLite's introspection of a partial index gives no condition: the model says.
        partial = name in {"slot_queue_idx", "slot_held_idx",
                           "slot_one_per_person_per_snapshot"}
        named[name] = (tuple(info["columns"]), partial)
    return named


def test_no_index_on_the_slots_repeats_or_prefixes_a_full_one():
    indexes = _indexes()
    full = [columns for columns, partial in indexes.values() if not partial]
    assert len(full) == len(set(full)), indexes
    for columns in full:
        longer = [other for other in full if len(other) > len(columns)
                  and other[:len(columns)] == columns]
        assert not longer, (columns, longer)


def test_the_look_ups_by_snapshot_keyword_and_evaluation_keep_an_index():
    leading = {columns[0] for columns, partial in _indexes().values() if not partial}
    assert {"snapshot_id", "keyword_id", "evaluation_id", "user_id"} <= leading
