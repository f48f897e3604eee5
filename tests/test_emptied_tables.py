"""The end of a transactional test deletes every row the test left (tests/emptied_tables.py)."""

import pytest
from django.contrib.contenttypes.models import ContentType
from django.test import TransactionTestCase

from tests import emptied_tables
from tests.judgments.builders import evaluation_with_slots
from tests.searchtweak.factories import TeamFactory


@pytest.mark.django_db(transaction=True)
def test_every_row_goes_whatever_refers_to_what_and_content_types_stay():
    content_types = ContentType.objects.count()
    # Slots refer to snapshots, keywords, evaluations and the team: deleting in the order of
    # the table names would break a foreign key at once if the checks were not deferred.
    evaluation_with_slots(TeamFactory(name="Leftovers"), keywords=2, positions=2)
    left = emptied_tables.tables_with_rows()
    assert {"searchtweak_team", "evaluations_evaluation", "judgments_feedbackslot"} <= set(left)

    emptied_tables.empty()

    assert emptied_tables.tables_with_rows() == []
    assert ContentType.objects.count() == content_types > 0


def test_the_suite_ends_transactional_tests_this_way():
    # Installed by tests/conftest.py for the whole session.
    assert TransactionTestCase._fixture_teardown is emptied_tables._delete_what_the_test_left
