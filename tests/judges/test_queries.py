"""judges.queries against the ORM."""

import pytest

from judges import queries
from judges.models import Judge
from tests.judges.run_builders import judge_of

pytestmark = pytest.mark.django_db


def test_judge_counts_locked_reads_what_the_orm_reads(personas):
    counting = judge_of(personas.team, name="Counts", counts=True)
    shadow = judge_of(personas.team, name="Shadow", counts=False)
    for judge in (counting, shadow):
        assert queries.judge_counts_locked(judge_id=judge.pk) is \
            Judge.objects.get(pk=judge.pk).counts
    assert queries.judge_counts_locked(judge_id=10**9) is False
