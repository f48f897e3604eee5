"""The repository's own text: the settings reference matches the code, and nothing cites an
issue tracker number that a reader of the repository cannot open."""

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# An issue tracker reference: the word, an optional space and "#", a number. Built from
# parts so this file does not match itself.
ISSUE_REFERENCE = re.compile(r"\b" + "issue" + r" ?#?[0-9]", re.IGNORECASE)


def _settings_reference():
    spec = importlib.util.spec_from_file_location(
        "settings_reference", REPO / "scripts" / "settings_reference.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_settings_reference_lists_every_variable_the_code_reads():
    reference = _settings_reference()
    variables, unexplained = reference.collect()
    assert unexplained == []
    document = (REPO / "docs" / "operations" / "settings.md").read_text()
    missing = [name for name in variables if f"**`{name}`**" not in document]
    assert missing == []
    assert document == reference.render(variables), (
        "docs/operations/settings.md is stale: run scripts/settings_reference.py")
    # The readers the settings module is built from, seen by the scan.
    assert {"DATABASE_URL", "CELERY_BROKER_URL", "SECRET_KEY", "WEB_CONCURRENCY",
            "SECURE_PROXY_SSL_HEADER", "SEARCHTWEAK_METRIC_THREADS"} <= set(variables)


def test_the_reference_names_a_new_variable_with_its_type_default_and_comment(tmp_path):
    reference = _settings_reference()
    (tmp_path / "searchtweak").mkdir()
    (tmp_path / "searchtweak" / "settings.py").write_text(
        "from searchtweak.envvars import env_int, env_str\n"
        "# Things per batch, for the test.\n"
        'THINGS = env_int("THINGS_PER_BATCH", 7, minimum=1)\n'
        "# Groups of settings may name each one.\n"
        "# NAME_OF_IT: what it is called.\n"
        'NAME = env_str("NAME_OF_IT") or "fallback"\n')
    (tmp_path / "worker.py").write_text(
        "import os\n"
        "# Workers to start.\n"
        'count = int(os.environ.get("WORKERS", "2"))\n')
    variables, unexplained = reference.collect(tmp_path)
    assert unexplained == []
    text = reference.render(variables)
    assert "- **`THINGS_PER_BATCH`**: Things per batch, for the test.\n" \
           "  Type: integer ≥ 1. Default: `7`." in text
    assert "- **`NAME_OF_IT`**: What it is called.\n  Type: text. Default: `\"fallback\"`." in text
    assert "- **`WORKERS`**: Workers to start.\n  Type: integer. Default: `\"2\"`." in text


def test_a_read_without_a_comment_fails_the_check(tmp_path):
    reference = _settings_reference()
    (tmp_path / "searchtweak").mkdir()
    (tmp_path / "searchtweak" / "settings.py").write_text(
        "from searchtweak.envvars import env_bool\n"
        "X = 1\n"
        'QUIET = env_bool("QUIET", False)\n')
    _variables, unexplained = reference.collect(tmp_path)
    assert unexplained == ["searchtweak/settings.py:3: QUIET"]


def test_the_check_passes_on_the_committed_document():
    done = subprocess.run([sys.executable, "scripts/settings_reference.py", "--check"],
                          cwd=REPO, capture_output=True, text=True, check=False)
    assert (done.returncode, done.stderr) == (0, "")


def _tracked_text_files() -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True,
                            check=True)
    return [REPO / name for name in listed.stdout.decode().split("\0") if name]


def test_nothing_cites_an_issue_number():
    offenders = []
    for path in _tracked_text_files():
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, FileNotFoundError, IsADirectoryError):
            continue
        for number, line in enumerate(text.splitlines(), start=1):
            if ISSUE_REFERENCE.search(line):
                offenders.append(f"{path.relative_to(REPO)}:{number}: {line.strip()[:80]}")
    assert offenders == []


def test_the_issue_pattern_matches_the_forms_it_should():
    word = "issue"
    assert [bool(ISSUE_REFERENCE.search(text)) for text in (
        f"({word} 27)", f"{word.title()} #5", f"see {word}28", f"the {word}s 3",
        f"t{word} 4", f"an {word}: none",
    )] == [True, True, True, False, False, False]


MARKDOWN_LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_every_relative_link_in_the_docs_reaches_a_file():
    broken = []
    for path in _tracked_text_files():
        if path.suffix != ".md" or not path.exists():
            continue
        text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.DOTALL)
        for target in MARKDOWN_LINK.findall(text):
            if re.match(r"^(?:[a-z][a-z0-9+.-]*:|#|/)", target):
                continue
            if not (path.parent / target.split("#", 1)[0]).exists():
                broken.append(f"{path.relative_to(REPO)}: {target}")
    assert broken == []
