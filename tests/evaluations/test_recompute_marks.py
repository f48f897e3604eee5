"""evaluations.recompute_marks is the one module that writes a keyword's recompute
bookkeeping (version, computed_version, dirty_since); its statements are written out in
evaluations.queries, which nothing else imports."""

from tests.source_scan import matching_lines

BOOKKEEPING_WRITES = [
    r'(?i)update\s+"?evaluations_keyword\b',  # a write naming the table hard-coded
    r"^\s*[\w.]+\.(version|computed_version|dirty_since)\s*=[^=]",  # keyword.version = ...
    r"\b(version|computed_version|dirty_since)\s*=\s*(F\(|Coalesce\(|Value\(|None\b)",  # ORM
    r'(\{_VERSION\}|"?\bversion"?)\s*=\s*[\w.{}"]*\s*\+\s*1',  # SQL: version = version + 1
    r'(\{_DIRTY\}|"?\bdirty_since"?)\s*=\s*(COALESCE|CASE|NULL)',  # SQL: dirty_since = ...
    r"(\{_COMPUTED\}|\bcomputed_version)\s*=\s*computed\.",  # SQL: computed_version = ...
]


OWNERS = {"evaluations/recompute_marks.py", "evaluations/queries.py"}
# Every way of importing evaluations.queries.
QUERIES_IMPORTS = [r"from evaluations import[^\n]*\bqueries\b", r"evaluations\.queries\b",
                   r"from evaluations\.queries import", r"from \. import queries"]


def test_only_the_bookkeeping_module_writes_the_keyword_recompute_columns():
    found = matching_lines(BOOKKEEPING_WRITES)
    assert set(found) == OWNERS, found


def test_only_the_bookkeeping_module_imports_its_statements():
    importers = {path for path, lines in matching_lines(QUERIES_IMPORTS).items()
                 if any("import" in line for line in lines)}
    assert importers == {"evaluations/recompute_marks.py"}, importers


def test_the_scan_finds_the_writes_in_the_bookkeeping_module():
    # A scan that found nothing could not fail: the ORM writes in recompute_marks, the
    # written-out ones in queries.
    found = matching_lines(BOOKKEEPING_WRITES[1:])
    assert len(found["evaluations/recompute_marks.py"]) >= 2, found
    assert len(found["evaluations/queries.py"]) >= 4, found
