"""Under CI (SEARCHTWEAK_REQUIRE_SERVICES=1) nothing a test needs may be skipped away."""

import re
from pathlib import Path

import pytest

from tests import conftest

TESTS = Path(__file__).resolve().parent
# pytest's own skips decide alone; every skip must go through conftest.skip_or_fail.
BARE_SKIP = re.compile(r"pytest\.(importorskip|skip)\(|pytest\.mark\.skip(if)?\b")


def test_no_test_skips_without_asking_skip_or_fail():
    offenders = [
        f"{path.relative_to(TESTS)}:{number}: {line.strip()}"
        for path in sorted(TESTS.rglob("*.py")) if path.name not in {"conftest.py", "test_skips.py"}
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if BARE_SKIP.search(line)
    ]
    assert offenders == []


def test_a_missing_module_skips_locally(monkeypatch):
    monkeypatch.setattr(conftest, "REQUIRE_SERVICES", False)
    with pytest.raises(pytest.skip.Exception, match="no_such_module_for_this_test"):
        conftest.import_or_skip("no_such_module_for_this_test", reason="only a probe")


def test_a_missing_module_fails_under_ci(monkeypatch):
    monkeypatch.setattr(conftest, "REQUIRE_SERVICES", True)
    with pytest.raises(pytest.fail.Exception, match="SEARCHTWEAK_REQUIRE_SERVICES=1 forbids"):
        conftest.import_or_skip("no_such_module_for_this_test", reason="only a probe")


def test_a_present_module_is_returned():
    assert conftest.import_or_skip("json", reason="stdlib").dumps([1]) == "[1]"


def test_the_summary_counts_skips_by_what_they_need():
    assert conftest.skip_summary([]) is None
    assert conftest.skip_summary([
        "row locks (FOR UPDATE SKIP LOCKED) need PostgreSQL: set DATABASE_URL",
        f"{conftest.CHROMIUM} is missing: apt-get install -y chromium",
        "prepared statements are PostgreSQL's: set DATABASE_URL",
        "taskset (util-linux) is not installed",
    ]) == ("4 skipped, so this was not a full run: 2 PostgreSQL-only (set "
           "DATABASE_URL=postgres://...), 1 browser (no Chromium at /usr/bin/chromium), "
           "1 taskset (util-linux) is not installed")


@pytest.mark.slow_reason("runs pytest in a subprocess to read its closing lines")
def test_a_run_with_skips_says_so_above_pytests_own_closing_line(tmp_path):
    import os
    import subprocess
    import sys

    # Its own SQLite file (the settings name it under TMPDIR), made from the models without
    # migrations: what is tested is the closing lines, and migrating a database from empty
    # (every fresh checkout and every CI run, which passes --create-db) cost ~15 s here.
    environment = {key: value for key, value in os.environ.items()
                   if key not in {"DATABASE_URL", "SEARCHTWEAK_REQUIRE_SERVICES"}}
    environment["TMPDIR"] = str(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--create-db",
         "--nomigrations", "tests/searchtweak/test_sql.py"], cwd=TESTS.parent,
        env=environment, capture_output=True, text=True, timeout=300)
    lines = done.stdout.strip().splitlines()
    assert lines[-2] == ("4 skipped, so this was not a full run: 4 PostgreSQL-only "
                         "(set DATABASE_URL=postgres://...)"), done.stdout
    assert lines[-1].startswith("3 passed, 4 skipped in "), done.stdout
