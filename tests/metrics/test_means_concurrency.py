"""Concurrent recompute runs of one evaluation keep its running sums exact (PostgreSQL:
runs on several connections at once, as worker processes run them)."""

import pytest
from django.db import connection

from metrics.recompute import run
from tests.conftest import skip_or_fail
from tests.metrics.builders import build_evaluation, set_grades, slot
from tests.metrics.oracles import (
    assert_running_sums_equal_stored_values,
    assert_stored_values_equal_a_full_recompute,
)
from tests.searchtweak.factories import UserFactory
from tests.threads import run_together

pytestmark = pytest.mark.django_db(transaction=True)


def test_concurrent_runs_on_different_keywords_keep_the_sums_exact(monkeypatch):
    if connection.vendor != "postgresql":
        skip_or_fail("concurrent runs need PostgreSQL's row locks: set DATABASE_URL")
    # Each run takes few keywords, so runs started together recompute different ones.
    monkeypatch.setattr(run, "RUN_KEYWORDS", 2)
    graders = [UserFactory(username="c0")]
    texts = [f"q{number}" for number in range(12)]
    evaluation = build_evaluation(
        keywords={text: [f"{text}-{rank}" for rank in range(10)] for text in texts},
        metrics=[("precision", 10, {}), ("ndcg", 10, {}), ("err", 10, {})],
    )
    slots = {text: [slot(evaluation, text, rank) for rank in range(1, 11)] for text in texts}

    def grade_keywords(offset: int, round_number: int) -> None:
        # Each thread grades its own keywords; the (eager) runs each grade queues go on
        # its connection while the other threads' run on theirs.
        for text in texts[offset::4]:
            grades = [(position + round_number + offset) % 4 for position in range(10)]
            if round_number == 2 and offset == 1:
                grades = [None] * 10  # values back to null
            set_grades(graders, list(zip(slots[text], grades, strict=True)))

    for round_number in range(3):
        run_together(grade_keywords, [(offset, round_number) for offset in range(4)],
                     timeout=120)
        assert_running_sums_equal_stored_values(evaluation.pk)
    assert_stored_values_equal_a_full_recompute(evaluation.pk)
