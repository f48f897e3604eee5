"""Find lines of the project's own code (not tests, benches or migrations) that match."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APPS = ("evaluations", "judgments", "judges", "metrics", "searchtweak", "guide", "scripts")


def source_files() -> list[Path]:
    return sorted(path for app in APPS for path in (ROOT / app).rglob("*.py")
                  if "migrations" not in path.parts)


def matching_lines(patterns: list[str]) -> dict[str, list[str]]:
    """{path relative to the repository: [matching lines]} for every pattern (multiline)."""
    compiled = [re.compile(pattern, re.MULTILINE) for pattern in patterns]
    found: dict[str, list[str]] = {}
    for path in source_files():
        text = path.read_text()
        for pattern in compiled:
            for match in pattern.finditer(text):
                line = text.count("\n", 0, match.start()) + 1
                found.setdefault(str(path.relative_to(ROOT)), []).append(
                    f"{line}: {match.group(0).strip()}")
    return found
