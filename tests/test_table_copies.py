"""Rows built once per process and put back for later tests (tests/table_copies.py)."""

import pytest

from evaluations import demo
from tests import emptied_tables
from tests.table_copies import build_once

QUERY = "waterproof rain jacket"


@pytest.mark.django_db(transaction=True)
def test_a_catalog_put_back_is_searchable_after_another_test_made_its_own():
    """The demo catalog's full-text index is no model's table: when a later test made the
    catalog again (new keys: deleting rows resets no sequence), the copy put back must
    bring its own index, or every search matches keys no product has and finds nothing."""
    build_once("the demo catalog, for tests/test_table_copies.py", demo.catalog_ensure)
    built = demo.search(QUERY)["hits"]
    assert len(built) == 10
    emptied_tables.empty()
    demo.catalog_ensure()  # another transactional test's catalog
    emptied_tables.empty()

    build_once("the demo catalog, for tests/test_table_copies.py", demo.catalog_ensure)

    assert demo.search(QUERY)["hits"] == built
