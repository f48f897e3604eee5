"""A clone must stand alone: nothing it tracks may read or link a folder beside it."""

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# Written so that this file does not match itself.
OUTSIDE_REFERENCE = re.compile(r"\.\.[/\\]shared|\"\.\.\"\s*/\s*\"shared\"")


def tracked_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=False,
    )
    if listed.returncode == 0 and listed.stdout:
        return [REPO / name for name in listed.stdout.decode().split("\0") if name]
    # An exported tree without git: every file but the installed and generated ones.
    skipped = {".git", ".venv", ".cache", "tests/artifacts", "node_modules"}
    return [path for path in REPO.rglob("*") if path.is_file()
            and not any(str(path.relative_to(REPO)).startswith(part) for part in skipped)]


def test_no_tracked_file_refers_to_a_folder_beside_the_repo():
    offenders = []
    for path in tracked_files():
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, FileNotFoundError):
            continue
        for number, line in enumerate(text.splitlines(), start=1):
            if OUTSIDE_REFERENCE.search(line):
                offenders.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert offenders == []


def test_the_metric_contract_and_its_cases_are_in_the_repo():
    assert (REPO / "docs" / "METRICS.md").is_file()
    cases = (REPO / "tests" / "metrics_engine" / "cases" / "public.jsonl").read_text()
    assert len([line for line in cases.splitlines() if line.strip()]) == 88
