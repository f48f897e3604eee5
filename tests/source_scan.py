"""Find lines of the project's own code (not tests, benches or migrations) that match."""

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def project_packages() -> tuple[str, ...]:
    """The project's top-level packages, as pyproject.toml installs them (one list: a new
    app is scanned once it is installed)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    found = config["tool"]["setuptools"]["packages"]["find"]["include"]
    return tuple(name.removesuffix("*") for name in found)


PACKAGES = project_packages()
APPS = (*PACKAGES, "scripts")


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
