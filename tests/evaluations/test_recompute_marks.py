"""evaluations.recompute_marks is the one module that writes a keyword's recompute
bookkeeping (version, computed_version, dirty_since)."""

from tests.source_scan import matching_lines

BOOKKEEPING_WRITES = [
    r'(?i)update\s+"?evaluations_keyword\b',  # a write naming the table hard-coded
    r"^\s*[\w.]+\.(version|computed_version|dirty_since)\s*=[^=]",  # keyword.version = ...
    r"\b(version|computed_version|dirty_since)\s*=\s*(F\(|Coalesce\(|Value\(|None\b)",  # ORM
    r'(\{_VERSION\}|"?\bversion"?)\s*=\s*[\w.{}"]*\s*\+\s*1',  # SQL: version = version + 1
    r'(\{_DIRTY\}|"?\bdirty_since"?)\s*=\s*(COALESCE|CASE|NULL)',  # SQL: dirty_since = ...
    r"(\{_COMPUTED\}|\bcomputed_version)\s*=\s*computed\.",  # SQL: computed_version = ...
]


def test_only_the_bookkeeping_module_writes_the_keyword_recompute_columns():
    found = matching_lines(BOOKKEEPING_WRITES)
    assert set(found) == {"evaluations/recompute_marks.py"}, found


def test_the_scan_finds_the_writes_in_the_bookkeeping_module():
    # A scan that found nothing could not fail.
    found = matching_lines(BOOKKEEPING_WRITES[1:])["evaluations/recompute_marks.py"]
    assert len(found) >= 4, found
